package index_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/search"
)

// BenchmarkOpenLinuxDoc40 times what summa-bench's open_ms times on a
// realistic index: Open of the linux-doc corpus committed in 40 batches
// (80 segments with two indexing workers; SUMMA_MERGE_DOCS=5000 builds
// the corpus of make bench-quick) plus its first answered query, with a
// warm page cache. Close is not timed. SUMMA_OPEN_KEEP names a directory
// the built index is copied to, for strace or a profile of the open alone.
//
//	go test ./engine/index -run '^$' -bench OpenLinuxDoc40 -benchtime 20x
func BenchmarkOpenLinuxDoc40(b *testing.B) {
	dir, _ := buildLinuxDoc40(b)
	if keep := os.Getenv("SUMMA_OPEN_KEEP"); keep != "" {
		if err := os.MkdirAll(keep, 0o755); err != nil {
			b.Fatal(err)
		}
		copyDir(b, dir, keep)
	}
	q, _ := json.Marshal("memory")
	ctx := context.Background()
	for b.Loop() {
		idx, err := index.Open(vfs.Default, dir, index.Options{})
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
		b.StopTimer()
		b.ReportMetric(float64(len(idx.Status().Segments)), "segments")
		if err := idx.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
