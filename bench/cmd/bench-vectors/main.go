// Command bench-vectors measures the engine's vector indexes on vectors
// derived from real text (bench/vectors): recall against exact answers,
// speedup over exhaustive scoring and latency, in the forms the issues
// give. Run it from the repository root:
//
//	go run ./bench/cmd/bench-vectors [-quick] [-only NAME[,NAME]]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/summadev/summa/bench/vectors"
)

func main() {
	quick := flag.Bool("quick", false, "smaller data sets and fewer rounds (a few minutes)")
	only := flag.String("only", "", "comma-separated sections to run (default: all)")
	dir := flag.String("dir", "", "parent of the temporary work directory (default: $TMPDIR or /tmp)")
	cache := flag.String("cache", "bin/bench-vectors-cache", "directory that keeps derived data sets between runs (\"\" for none)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	work, err := os.MkdirTemp(*dir, "bench-vectors-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-vectors:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(work)
	if *cache != "" {
		if err := os.MkdirAll(*cache, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench-vectors:", err)
			os.Exit(1)
		}
	}
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	failed := false
	ran := 0
	for _, s := range vectors.Sections() {
		if len(want) > 0 && !want[s.Name] {
			continue
		}
		ran++
		cfg := vectors.Config{Quick: *quick, WorkDir: filepath.Join(work, s.Name), CacheDir: *cache, Log: os.Stderr, Out: os.Stdout}
		if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench-vectors:", err)
			os.Exit(1)
		}
		fmt.Printf("## %s\n", s.Name)
		if err := s.Run(ctx, cfg); err != nil {
			fmt.Fprintf(os.Stderr, "bench-vectors: %s: %v\n", s.Name, err)
			failed = true
		}
		os.RemoveAll(cfg.WorkDir)
	}
	if ran == 0 {
		fmt.Fprintln(os.Stderr, "bench-vectors: no section selected")
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}
