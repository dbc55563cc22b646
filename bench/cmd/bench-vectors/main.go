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
	"path/filepath"
	"strings"

	"github.com/summadev/summa/bench/internal/cmdmain"
	"github.com/summadev/summa/bench/vectors"
)

func main() {
	var o options
	flag.BoolVar(&o.quick, "quick", false, "smaller data sets and fewer rounds (a few minutes)")
	flag.StringVar(&o.only, "only", "", "comma-separated sections to run (default: all)")
	flag.StringVar(&o.dir, "dir", "", "parent of the temporary work directory (default: $TMPDIR or /tmp)")
	flag.StringVar(&o.cache, "cache", "bin/bench-vectors-cache", "directory that keeps derived data sets between runs (\"\" for none)")
	flag.Parse()
	cmdmain.Run("bench-vectors", func(ctx context.Context) error { return run(ctx, o) })
}

// options are what the flags set.
type options struct {
	quick            bool
	only, dir, cache string
}

// run runs the selected sections, each in a work directory of its own; a
// failed section is reported and the others still run.
func run(ctx context.Context, o options) error {
	work, err := os.MkdirTemp(o.dir, "bench-vectors-")
	if err != nil {
		return fmt.Errorf("work directory: %w", err)
	}
	defer os.RemoveAll(work)
	if o.cache != "" {
		if err := os.MkdirAll(o.cache, 0o755); err != nil {
			return fmt.Errorf("cache directory: %w", err)
		}
	}
	want := map[string]bool{}
	for _, n := range strings.Split(o.only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	var failed []string
	ran := 0
	for _, s := range vectors.Sections() {
		if len(want) > 0 && !want[s.Name] {
			continue
		}
		ran++
		cfg := vectors.Config{Quick: o.quick, WorkDir: filepath.Join(work, s.Name), CacheDir: o.cache, Log: os.Stderr, Out: os.Stdout}
		if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
			return fmt.Errorf("section %s: %w", s.Name, err)
		}
		fmt.Printf("## %s\n", s.Name)
		if err := s.Run(ctx, cfg); err != nil {
			fmt.Fprintf(os.Stderr, "bench-vectors: %s: %v\n", s.Name, err)
			failed = append(failed, s.Name)
		}
		os.RemoveAll(cfg.WorkDir)
	}
	if ran == 0 {
		return cmdmain.Usage("no section selected")
	}
	if len(failed) > 0 {
		return fmt.Errorf("sections failed: %s", strings.Join(failed, ", "))
	}
	return nil
}
