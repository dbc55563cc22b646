package search_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/bench"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/search"
)

// BenchmarkQueryClasses times every query of summa-bench one at a time
// the way its search phase does (a fresh snapshot per query, the top 10
// with their stored fields) on the whole linux-doc corpus (600 sections
// held out) committed in 40 batches and merged into one segment, and
// reports the p50 of each class in µs and of all queries. With
// SUMMA_BENCH_CLASS set (e.g. "headings: and") it runs that class alone;
// SUMMA_BENCH_MODE (top10, top10count, count) runs the queries as
// summa-bench does in that mode; SUMMA_BENCH_LARGE=N uses a sample of N
// documents of the large corpus instead; SUMMA_BENCH_INDEX=dir keeps the
// merged index in dir and reuses it on the next run (same corpus).
//
//	go test ./engine/search -run '^$' -bench QueryClasses -benchtime 3x
func BenchmarkQueryClasses(b *testing.B) {
	c, err := classesCorpus()
	if err != nil {
		b.Skip(err)
	}
	s, err := schema.Parse([]byte(bench.SchemaJSON))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	idx := classesIndex(b, s, c)
	defer idx.Close(ctx)
	qs := append(bench.QuerySet(c), bench.HeadingQueries(c)...)
	type prepared struct {
		class string
		req   search.Request
	}
	var ps []prepared
	only := os.Getenv("SUMMA_BENCH_CLASS") // profile one class alone
	mode := bench.ModeTop10Count
	if m := os.Getenv("SUMMA_BENCH_MODE"); m != "" {
		mode = bench.Mode(m)
	}
	for _, q := range qs {
		if only != "" && bench.ClassOf(q) != only {
			continue
		}
		ps = append(ps, prepared{bench.ClassOf(q), bench.ModeRequest(q, mode)})
	}
	one := func(req search.Request) time.Duration {
		t := time.Now()
		snap, err := idx.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := snap.Search(ctx, req); err != nil {
			b.Fatal(err)
		}
		snap.Close()
		return time.Since(t)
	}
	for _, p := range ps { // warm up as summa-bench does
		one(p.req)
	}
	byClass := map[string][]time.Duration{}
	var all []time.Duration
	// summa-bench times 100 rounds of the fixed queries and 3 of the
	// heading queries: each fixed query runs 33 times per round here, so
	// that the p50 of all weighs the classes as the report's does.
	fixedRuns := 100 / 3
	for b.Loop() {
		for _, p := range ps {
			runs := 1
			if !strings.HasPrefix(p.class, "headings: ") {
				runs = fixedRuns
			}
			for range runs {
				d := one(p.req)
				byClass[p.class] = append(byClass[p.class], d)
				all = append(all, d)
			}
		}
	}
	p50 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Nanoseconds()) / 1e3
	}
	for _, class := range []string{bench.ClassHeadingAnd, bench.ClassHeadingOr, bench.ClassHeadingPhrase} {
		if len(byClass[class]) == 0 {
			continue
		}
		b.ReportMetric(p50(byClass[class]), "µs-p50-"+class[len("headings: "):])
	}
	b.ReportMetric(p50(all), "µs-p50-all")
	classes := slices.Sorted(maps.Keys(byClass))
	if os.Getenv("SUMMA_BENCH_HIST") != "" {
		med := all[len(all)/2]
		for _, class := range classes {
			var lo, mid, hi int
			for _, d := range byClass[class] {
				switch {
				case d < med*2/3:
					lo++
				case d <= med:
					mid++
				default:
					hi++
				}
			}
			b.Logf("HIST %s: <%v %d, <=%v %d, above %d", class, med*2/3, lo, med, mid, hi)
		}
	}
	for _, class := range classes {
		b.Logf("%s %s: p50 %.1f µs over %d runs", mode, class, p50(byClass[class]), len(byClass[class]))
	}
}

// classesCorpus is BenchmarkQueryClasses's corpus: linux-doc, or a
// sample of the large corpus when SUMMA_BENCH_LARGE gives its size.
func classesCorpus() (*bench.Corpus, error) {
	if v := os.Getenv("SUMMA_BENCH_LARGE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("SUMMA_BENCH_LARGE: %w", err)
		}
		return bench.PrepareLargeCorpus(bench.LargeCorpusOptions{PrepareOptions: bench.PrepareOptions{HeldOut: 600, MaxDocs: n, NoInstall: true}})
	}
	return bench.PrepareCorpus(bench.CorpusOptions{PrepareOptions: bench.PrepareOptions{HeldOut: 600, NoInstall: true}})
}

// classesIndex opens the merged index kept in SUMMA_BENCH_INDEX, or
// builds it (40 commits, one forced merge) there or in a temporary
// directory.
func classesIndex(b *testing.B, s *schema.Schema, c *bench.Corpus) *index.Index {
	dir := os.Getenv("SUMMA_BENCH_INDEX")
	if dir != "" {
		if idx, err := index.Open(vfs.Default, dir, index.Options{}); err == nil {
			return idx
		}
	} else {
		dir = b.TempDir()
	}
	idx, err := index.Create(vfs.Default, dir, s, index.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ingestMerged(b, idx, s, bench.NDJSON(c.Docs), 40)
	return idx
}

// ingestMerged adds raw to idx in the given number of commits and merges
// the index into one segment.
func ingestMerged(b *testing.B, idx *index.Index, s *schema.Schema, raw [][]byte, commits int) {
	ctx := context.Background()
	per := (len(raw) + commits - 1) / commits
	for i := 0; i < len(raw); i += per {
		var docs []*schema.Document
		for _, r := range raw[i:min(i+per, len(raw))] {
			d, err := s.ParseDocument(r)
			if err != nil {
				b.Fatal(err)
			}
			docs = append(docs, d)
		}
		if err := idx.Add(docs); err != nil {
			b.Fatal(err)
		}
		if _, err := idx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := idx.ForceMerge(ctx, 1); err != nil {
		b.Fatal(err)
	}
}
