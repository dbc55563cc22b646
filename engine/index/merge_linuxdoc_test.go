package index_test

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/bench"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/schema"
)

// cpuTime returns the process CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestMeasureMerge40 times ForceMerge of the linux-doc corpus committed in 40
// batches (wall and process CPU, twice); opt-in:
//
//	SUMMA_MERGE_MEASURE=1 go test ./engine/index -run TestMeasureMerge40 -v
func TestMeasureMerge40(t *testing.T) {
	if os.Getenv("SUMMA_MERGE_MEASURE") != "1" {
		t.Skip()
	}
	c, err := bench.PrepareCorpus(bench.CorpusOptions{NoInstall: true})
	if err != nil {
		t.Skip(err)
	}
	s, _ := schema.Parse([]byte(bench.SchemaJSON))
	ctx := context.Background()
	for rep := 0; rep < 2; rep++ {
		idx, err := index.Create(vfs.Default, t.TempDir(), s, index.Options{})
		if err != nil {
			t.Fatal(err)
		}
		raw := bench.NDJSON(c.Docs)
		per := (len(raw) + 39) / 40
		for i := 0; i < len(raw); i += per {
			var docs []*schema.Document
			for _, r := range raw[i:min(i+per, len(raw))] {
				d, _ := s.ParseDocument(r)
				docs = append(docs, d)
			}
			idx.Add(docs)
			if _, err := idx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		segs := len(idx.Metadata().Segments)
		start, cpu := time.Now(), cpuTime()
		if _, err := idx.ForceMerge(ctx, 1); err != nil {
			t.Fatal(err)
		}
		t.Logf("merge of %d segments (%d docs): wall %s cpu %s", segs, len(raw), time.Since(start).Round(time.Millisecond), (cpuTime() - cpu).Round(time.Millisecond))
		idx.Close(ctx)
	}
}
