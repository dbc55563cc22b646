package index

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/search"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

// benchIndex creates, on disk, an index of all of Opticks' paragraphs in
// segments commits of one indexing worker, and returns its directory
// closed.
func benchIndex(b *testing.B, segments int) string {
	b.Helper()
	dir := b.TempDir()
	opts := Options{IndexingWorkers: 1, CommitFlushTimeout: time.Minute}
	idx, err := Create(vfs.Default, dir, testSchema, opts)
	if err != nil {
		b.Fatal(err)
	}
	ps := corpustest.Paragraphs(b)
	var all []*schema.Document
	for i := range max(len(ps), segments) {
		all = append(all, doc(b, fmt.Sprintf("p%04d", i), ps[i%len(ps)], 1))
	}
	for i := range segments {
		batch := all[i*len(all)/segments : (i+1)*len(all)/segments]
		if len(batch) == 0 {
			continue
		}
		if err := idx.Add(batch); err != nil {
			b.Fatal(err)
		}
		mustCommit(b, idx)
	}
	mustClose(b, idx)
	return dir
}

// BenchmarkRareTerm times one query for a term of one paragraph ("a fresh
// snapshot, top 10 with stored fields", what the bench and the server do)
// over indexes of 1 to 256 segments: the fixed and per-segment costs of a
// query.
func BenchmarkRareTerm(b *testing.B) {
	q, _ := json.Marshal("curvilinear")
	for _, n := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("segments=%d", n), func(b *testing.B) {
			dir := benchIndex(b, n)
			idx, err := Open(vfs.Default, dir, Options{CommitFlushTimeout: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			defer mustClose(b, idx)
			ctx := context.Background()
			req := search.Request{Query: q, Limit: 10}
			for b.Loop() {
				snap, err := idx.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				res, err := snap.Search(ctx, req)
				snap.Close()
				if err != nil || res.TotalHits != 1 {
					b.Fatalf("%d hits, %v", res.TotalHits, err)
				}
			}
			b.ReportMetric(float64(len(idx.Status().Segments)), "segments")
		})
	}
}

// BenchmarkOpen times opening an index of 1,000 one-document segments
// (and of 100) and answering one query, the way the bench's open_ms does;
// closing is not timed.
func BenchmarkOpen(b *testing.B) {
	q, _ := json.Marshal("curvilinear")
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("segments=%d", n), func(b *testing.B) {
			dir := benchIndex(b, n)
			ctx := context.Background()
			for b.Loop() {
				idx, err := Open(vfs.Default, dir, Options{CommitFlushTimeout: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				snap, err := idx.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				res, err := snap.Search(ctx, search.Request{Query: q, Limit: 10})
				snap.Close()
				if err != nil || res.TotalHits == 0 {
					b.Fatalf("%d hits, %v", res.TotalHits, err)
				}
				b.StopTimer() // Close waits for merges the optimizer started
				if err := idx.Close(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkSmallCommit times a one-document upsert (Add of a document
// whose primary key is committed, then Commit), the bench's
// small_commit_p50: the new segment, the replaced document's deletion
// mask and the metadata generation, on disk with the default options,
// into indexes of 4 and 36 segments. Every 20 commits the index starts
// again from a copy (not timed), so that the segment count stays near n;
// the upserted documents are spread over the segments. The p50 of the
// commits is reported next to the mean (ns/op), which the odd slow fsync
// pulls up.
func BenchmarkSmallCommit(b *testing.B) {
	const round = 20
	for _, n := range []int{4, 36} {
		b.Run(fmt.Sprintf("segments=%d", n), func(b *testing.B) {
			template := benchIndex(b, n)
			ps := corpustest.Paragraphs(b)
			var idx *Index
			var times []time.Duration
			i := 0
			for b.Loop() {
				if i%round == 0 {
					b.StopTimer()
					if idx != nil {
						mustClose(b, idx)
					}
					dir := b.TempDir()
					if err := os.CopyFS(dir, os.DirFS(template)); err != nil {
						b.Fatal(err)
					}
					var err error
					if idx, err = Open(vfs.Default, dir, Options{CommitFlushTimeout: time.Minute}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				k := (i % round) * 7919 % len(ps)
				d := doc(b, fmt.Sprintf("p%04d", k), ps[k], 2+i)
				i++
				start := time.Now()
				if err := idx.Add([]*schema.Document{d}); err != nil {
					b.Fatal(err)
				}
				mustCommit(b, idx)
				times = append(times, time.Since(start))
			}
			mustClose(b, idx)
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
		})
	}
}
