// Command commitab measures the one-document commit of ours beside
// Xapian's, alternating the two engines commit by commit, so that the
// machine's drift (other load, the filesystem's state) falls on both
// alike. make bench measures each engine in its own phase, minutes apart,
// which on these machines moves either side by up to 2x between runs.
//
//	go run ./hack/commitab                 # full corpus, 100 commits each
//	go run ./hack/commitab -n 50 -docs 5000
//	go run ./hack/commitab -engines ours   # ours alone, back to back
//
// Each engine ingests the corpus in commits of 2,000 documents (as the
// bench's first phase), is closed and reopened, then upserts one existing
// document per commit; the p50 of those commits is printed per engine,
// and their ratio.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/summadev/summa/bench"
)

func main() {
	n := flag.Int("n", 100, "one-document commits per engine")
	maxDocs := flag.Int("docs", 0, "use at most this many documents (0: all)")
	engines := flag.String("engines", "ours,xapian", "engines, alternated commit by commit")
	every := flag.Int("commit-every", 2000, "documents per commit of the ingest")
	flag.Parse()
	if err := run(*n, *maxDocs, *every, strings.Split(*engines, ",")); err != nil {
		log.Fatal(err)
	}
}

func run(n, maxDocs, every int, names []string) error {
	ctx := context.Background()
	c, err := bench.PrepareCorpus(bench.CorpusOptions{PrepareOptions: bench.PrepareOptions{MaxDocs: maxDocs, Log: os.Stderr}})
	if err != nil {
		return err
	}
	raw := bench.NDJSON(c.Docs)
	base, err := os.MkdirTemp("", "commitab")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	var engines []bench.Engine
	for _, name := range names {
		e, err := engine(name)
		if err != nil {
			return err
		}
		dir := filepath.Join(base, name)
		if err := e.Create(dir); err != nil {
			return fmt.Errorf("%s: create: %w", name, err)
		}
		for i := 0; i < len(c.Docs); i += every {
			j := min(len(c.Docs), i+every)
			p, err := e.Prepare(c.Docs[i:j], raw[i:j])
			if err != nil {
				return err
			}
			if err := e.Commit(ctx, p); err != nil {
				return fmt.Errorf("%s: ingest: %w", name, err)
			}
		}
		if err := e.Close(ctx); err != nil {
			return err
		}
		if err := e.Open(dir); err != nil {
			return fmt.Errorf("%s: reopen: %w", name, err)
		}
		defer e.Close(ctx)
		engines = append(engines, e)
	}
	times := make([][]time.Duration, len(engines))
	for i := 0; i < n; i++ {
		j := i * len(c.Docs) / n
		for k, e := range engines {
			p, err := e.Prepare(c.Docs[j:j+1], raw[j:j+1])
			if err != nil {
				return err
			}
			t := time.Now()
			if err := e.Commit(ctx, p); err != nil {
				return fmt.Errorf("%s: commit: %w", e.Name(), err)
			}
			d := time.Since(t)
			// The bench's own rule: an engine that times itself (the
			// Xapian driver, without the pipe) reports its time.
			if st, ok := e.(interface{ LastOpTime() time.Duration }); ok {
				d = st.LastOpTime()
			}
			times[k] = append(times[k], d)
		}
	}
	p50 := make([]time.Duration, len(engines))
	for k, e := range engines {
		v := times[k]
		slices.Sort(v)
		p50[k] = v[len(v)/2]
		fmt.Printf("%-7s small_commit p50 %.3f ms (p25 %.3f, p75 %.3f) over %d commits\n",
			e.Name(), ms(p50[k]), ms(v[len(v)/4]), ms(v[3*len(v)/4]), len(v))
	}
	if len(engines) == 2 {
		fmt.Printf("ratio small_commit_p50 %s/%s: %.2f\n", engines[0].Name(), engines[1].Name(), float64(p50[0])/float64(p50[1]))
	}
	return nil
}

// engine returns the named engine.
func engine(name string) (bench.Engine, error) {
	switch name {
	case "ours":
		return bench.NewOurs()
	case "bleve":
		return bench.NewBleve()
	case "xapian":
		// The bench's cache (bin/ of the module root, the directory this
		// command runs in), installing libxapian-dev when missing.
		bin, err := bench.BuildXapianDriver("bin", true, os.Stderr)
		if err != nil {
			return nil, fmt.Errorf("xapian driver: %w", err)
		}
		return bench.NewXapian(bin), nil
	}
	return nil, fmt.Errorf("unknown engine %q (ours, bleve, xapian)", name)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
