package search_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/bench"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/search"
)

// BenchmarkHeadingQueries runs the benchmark's held-out heading queries
// (AND, phrase and OR classes; linux-doc corpus, 20,000 sections merged into one
// segment, as summa-bench does) against one snapshot: one op is the whole
// class. It measures the AND and phrase evaluation, not the per-query setup.
//
//	go test ./engine/search -run '^$' -bench HeadingQueries -benchtime 20x
func BenchmarkHeadingQueries(b *testing.B) {
	c, err := bench.PrepareCorpus(bench.CorpusOptions{PrepareOptions: bench.PrepareOptions{MaxDocs: 20000, HeldOut: 600, NoInstall: true}})
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
	ingestMerged(b, idx, s, raw, (len(raw)+4999)/5000)
	snap, err := idx.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer snap.Close()
	byClass := map[string][]json.RawMessage{}
	for _, q := range bench.HeadingQueries(c) {
		raw, _ := json.Marshal(bench.QueryString(q))
		byClass[q.Class] = append(byClass[q.Class], raw)
	}
	for _, class := range []string{bench.ClassHeadingAnd, bench.ClassHeadingPhrase, bench.ClassHeadingOr} {
		qs := byClass[class]
		b.Run(class, func(b *testing.B) {
			hits := 0
			for b.Loop() {
				hits = 0
				for _, q := range qs {
					res, err := snap.Search(ctx, search.Request{Query: q, Limit: 10})
					if err != nil {
						b.Fatal(err)
					}
					hits += res.TotalHits
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(qs)), "ns/query")
			b.ReportMetric(float64(hits), "hits")
		})
	}
}
