package search_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
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
// SUMMA_BENCH_CLASS set (e.g. "headings: and") it runs that class alone.
//
//	go test ./engine/search -run '^$' -bench QueryClasses -benchtime 3x
func BenchmarkQueryClasses(b *testing.B) {
	c, err := bench.PrepareCorpus(bench.CorpusOptions{HeldOut: 600, NoInstall: true})
	if err != nil {
		b.Skip(err)
	}
	s, err := schema.Parse([]byte(bench.SchemaJSON))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	idx, err := index.Create(vfs.Default, b.TempDir(), s, index.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close(ctx)
	raw := bench.NDJSON(c.Docs)
	per := (len(raw) + 39) / 40
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
	qs := append(bench.QuerySet(c), bench.HeadingQueries(c)...)
	type prepared struct {
		class string
		raw   json.RawMessage
	}
	var ps []prepared
	only := os.Getenv("SUMMA_BENCH_CLASS") // profile one class alone
	for _, q := range qs {
		if only != "" && bench.ClassOf(q) != only {
			continue
		}
		r, _ := json.Marshal(bench.QueryString(q))
		ps = append(ps, prepared{bench.ClassOf(q), r})
	}
	one := func(q json.RawMessage) time.Duration {
		t := time.Now()
		snap, err := idx.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := snap.Search(ctx, search.Request{Query: q, Limit: 10}); err != nil {
			b.Fatal(err)
		}
		snap.Close()
		return time.Since(t)
	}
	for _, p := range ps { // warm up as summa-bench does
		one(p.raw)
	}
	byClass := map[string][]time.Duration{}
	var all []time.Duration
	for b.Loop() {
		for _, p := range ps {
			d := one(p.raw)
			byClass[p.class] = append(byClass[p.class], d)
			all = append(all, d)
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
}
