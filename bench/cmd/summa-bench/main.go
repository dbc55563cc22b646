// Command summa-bench compares the Summa engine with Bleve v2, Xapian 1.4
// and Lucene 8.8 on the Linux kernel documentation (the small corpus) and
// on sections of many Debian documentation packages (the large corpus,
// ten times as many), measures the disk's physical floor, ingests through
// summa-server over HTTP when it builds, and prints (and writes) a report.
// Run it from the repository root:
//
//	go run ./bench/cmd/summa-bench [-quick] [-corpora small,large] [-large-docs N] [-reps N] [-out docs/performance.md] [-profile-dir DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/summadev/summa/bench"
	"github.com/summadev/summa/bench/internal/cmdmain"
	"github.com/summadev/summa/internal/testing/harness"
)

func main() {
	quick := flag.Bool("quick", false, "use a strided sample of the corpus and fewer rounds, so the run takes a few minutes")
	reps := flag.Int("reps", 3, "repetitions of every measurement (the report gives median and min–max)")
	out := flag.String("out", "docs/performance.md", "write the report as Markdown to this file (\"\" for none); -quick writes nothing unless -out is given")
	cpuprofile := flag.String("cpuprofile", "", "write CPU profiles of the first repetition's phases to PREFIX-ENGINE-PHASE.pprof (Go engines)")
	profileDir := flag.String("profile-dir", "", "write CPU profiles of the first repetition's phases (ingest, small-commit, open, merge, search, open-many, bp) to DIR/profile-ENGINE-PHASE.pprof (Go engines) and DIR/profile-xapian-PHASE.perf.data (perf record of the driver, when perf is installed)")
	engines := flag.String("engines", "ours,bleve,xapian,lucene", "comma-separated engines to run")
	heldOut := flag.Int("heading-queries", 600, "sections held out of the index whose headings become queries")
	headingRounds := flag.Int("heading-rounds", 0, "timed rounds of the heading queries (default 3; 1 with -quick)")
	manyCommits := flag.Int("many-commits", 1000, "one-document commits of ours' index for open_ms at many segments (0: skip)")
	noHTTP := flag.Bool("no-http", false, "skip the ingest through summa-server")
	dir := flag.String("dir", "", "parent of the temporary work directory (default: $TMPDIR or /tmp)")
	docs := flag.Int("docs", 0, "use at most this many documents (default: all; 5000 with -quick)")
	commitEvery := flag.Int("commit-every", 0, "documents per commit (default 2000; 500 with -quick)")
	openCommits := flag.Int("open-commits", 40, "commits of the many-segment index used for open and merge")
	rounds := flag.Int("search-rounds", 0, "timed rounds of the query set (default 100; 30 with -quick)")
	fallback := flag.Bool("fallback-corpus", false, "use the Go distribution corpus instead of linux-doc")
	shuffle := flag.Bool("shuffle", false, "ingest the documents in a fixed pseudo-random order instead of path order")
	corpora := flag.String("corpora", "small,large", "comma-separated corpora to run: small (linux-doc sections), large (sections of many Debian documentation packages, at least ten times as many); -quick runs only small unless this is given")
	largeDocs := flag.Int("large-docs", 0, "use at most this many documents of the large corpus (default: all)")
	flag.Parse()

	setFlags := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { setFlags[f.Name] = true })
	if *quick && !setFlags["out"] {
		*out = ""
	}
	cfg := bench.Config{
		Quick:         *quick,
		CommitEvery:   2000,
		OpenCommits:   *openCommits,
		SearchRounds:  100,
		HeadingRounds: 3,
		ManyCommits:   *manyCommits,
		SmallCommits:  50,
		OpenRounds:    5,
		Reps:          max(1, *reps),
		FloorSeqMB:    256,
		FloorSyncs:    50,
		HTTP:          !*noHTTP,
		WorkDir:       *dir,
		CPUProfile:    *cpuprofile,
		Log:           os.Stderr,
	}
	maxDocs := *docs
	if *quick {
		cfg.CommitEvery, cfg.SearchRounds, cfg.SmallCommits, cfg.HeadingRounds, cfg.OpenRounds = 500, 30, 20, 1, 3
		cfg.FloorSeqMB, cfg.FloorSyncs = 64, 20
		if maxDocs == 0 {
			maxDocs = 5000
		}
	}
	if *commitEvery > 0 {
		cfg.CommitEvery = *commitEvery
	}
	if *headingRounds > 0 {
		cfg.HeadingRounds = *headingRounds
	}
	if *profileDir != "" {
		cfg.CPUProfile = filepath.Join(*profileDir, "profile")
	}
	if *rounds > 0 {
		cfg.SearchRounds = *rounds
	}
	for _, e := range strings.Split(*engines, ",") {
		if e = strings.TrimSpace(e); e != "" {
			cfg.Engines = append(cfg.Engines, e)
		}
	}
	root, err := harness.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "summa-bench: warning:", err)
	}
	cfg.ModuleRoot = root

	copts := bench.CorpusOptions{PrepareOptions: bench.PrepareOptions{MaxDocs: maxDocs, HeldOut: *heldOut, Log: os.Stderr}, ForceFallback: *fallback, Shuffle: *shuffle}
	lopts := bench.LargeCorpusOptions{PrepareOptions: bench.PrepareOptions{MaxDocs: *largeDocs, HeldOut: *heldOut, Log: os.Stderr}}
	if *quick && !setFlags["corpora"] {
		*corpora = "small"
	}
	sel, err := selectCorpora(*corpora)
	if err != nil {
		fmt.Fprintln(os.Stderr, "summa-bench:", err)
		os.Exit(2)
	}
	if !sel["small"] {
		copts = bench.CorpusOptions{}
	}
	if !sel["large"] {
		lopts = bench.LargeCorpusOptions{}
	}
	cmdmain.Run("summa-bench", func(ctx context.Context) error { return run(ctx, cfg, copts, lopts, *out) })
}

// run runs the small corpus when copts is set and the large one when
// lopts is, prints each report, and writes both to out.
func run(ctx context.Context, cfg bench.Config, copts bench.CorpusOptions, lopts bench.LargeCorpusOptions, out string) error {
	command := "go run ./bench/cmd/summa-bench"
	for _, a := range os.Args[1:] {
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = strconv.Quote(a)
		}
		command += " " + a
	}
	var small, large *bench.Result
	if copts.Log != nil {
		c, err := bench.PrepareCorpus(copts)
		if err != nil {
			return err
		}
		if small, err = runCorpus(ctx, cfg, c); err != nil {
			return err
		}
		fmt.Print("\n" + small.Text(command))
	}
	if lopts.Log != nil {
		c, err := bench.PrepareLargeCorpus(lopts)
		if err != nil {
			return err
		}
		if large, err = runCorpus(ctx, cfg, c); err != nil {
			return fmt.Errorf("large corpus: %w", err)
		}
		large.Label = bench.LargeLabel
		fmt.Print("\nlarge corpus:\n" + large.Text(command))
		if small != nil {
			fmt.Print("\n" + bench.GrowthTable(small, large))
		}
	}
	if out == "" || (small == nil && large == nil) {
		return nil
	}
	p := out
	if !filepath.IsAbs(p) && cfg.ModuleRoot != "" {
		p = filepath.Join(cfg.ModuleRoot, p)
	}
	if err := bench.WriteReport(p, command, small, large); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", p)
	return nil
}

// runCorpus runs every engine on corpus c in a fresh work directory.
func runCorpus(ctx context.Context, cfg bench.Config, c *bench.Corpus) (*bench.Result, error) {
	fmt.Printf("corpus: %s: %d documents, %.2f MB, from %d files under %s\n", c.Name, len(c.Docs), c.MB(), c.Files, c.Root)
	work, err := os.MkdirTemp(cfg.WorkDir, "summa-bench-")
	if err != nil {
		return nil, fmt.Errorf("work directory: %w", err)
	}
	defer os.RemoveAll(work)
	cfg.WorkDir = work
	return bench.Run(ctx, cfg, c)
}

// selectCorpora parses -corpora: a comma-separated list of small and large.
func selectCorpora(list string) (map[string]bool, error) {
	sel := map[string]bool{}
	for _, c := range strings.Split(list, ",") {
		switch c = strings.TrimSpace(c); c {
		case "small", "large":
			sel[c] = true
		case "":
		default:
			return nil, fmt.Errorf("unknown corpus %q (small, large)", c)
		}
	}
	return sel, nil
}
