package index_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
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
	c, err := bench.PrepareCorpus(bench.CorpusOptions{PrepareOptions: bench.PrepareOptions{NoInstall: true}})
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

// buildLinuxDoc40 builds, closed, in a directory the benchmark removes at
// its end, the index TestMeasureMerge40 merges: the whole linux-doc corpus
// committed in 40 batches (80 segments with two indexing workers). It
// returns the directory and the number of documents.
func buildLinuxDoc40(b *testing.B) (string, int) {
	// SUMMA_MERGE_DOCS=5000 builds the corpus of make bench-quick.
	maxDocs, _ := strconv.Atoi(os.Getenv("SUMMA_MERGE_DOCS"))
	c, err := bench.PrepareCorpus(bench.CorpusOptions{PrepareOptions: bench.PrepareOptions{NoInstall: true, MaxDocs: maxDocs}})
	if err != nil {
		b.Skip(err)
	}
	dir := b.TempDir()
	s, _ := schema.Parse([]byte(bench.SchemaJSON))
	ctx := context.Background()
	idx, err := index.Create(vfs.Default, dir, s, index.Options{})
	if err != nil {
		b.Fatal(err)
	}
	raw := bench.NDJSON(c.Docs)
	per := (len(raw) + 39) / 40
	for i := 0; i < len(raw); i += per {
		var docs []*schema.Document
		for _, r := range raw[i:min(i+per, len(raw))] {
			d, _ := s.ParseDocument(r)
			docs = append(docs, d)
		}
		if err := idx.Add(docs); err != nil {
			b.Fatal(err)
		}
		if _, err := idx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if err := idx.Close(ctx); err != nil {
		b.Fatal(err)
	}
	return dir, len(raw)
}

// copyDir copies the regular files of src into dst.
func copyDir(b *testing.B, src, dst string) {
	ents, err := os.ReadDir(src)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForceMergeLinuxDoc40 times ForceMerge(1) of the linux-doc
// corpus committed in 40 batches (80 segments), what summa-bench's
// merge_ms measures: each iteration opens a fresh copy of the index and
// merges it; only the merge is timed. The index is built once per
// run (about 10 s, not timed).
//
//	go test ./engine/index -run '^$' -bench ForceMergeLinuxDoc40 -benchtime 5x
func BenchmarkForceMergeLinuxDoc40(b *testing.B) {
	src, docs := buildLinuxDoc40(b)
	ctx := context.Background()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		copyDir(b, src, dir)
		syscall.Sync() // the copy's writeback is not the merge's
		idx, err := index.Open(vfs.Default, dir, index.Options{})
		if err != nil {
			b.Fatal(err)
		}
		c0 := cpuTime()
		b.StartTimer()
		res, err := idx.ForceMerge(ctx, 1)
		b.StopTimer()
		cpu += cpuTime() - c0
		if err != nil || res.Documents != uint32(docs) {
			b.Fatalf("merge: %d documents, %v", res.Documents, err)
		}
		if err := idx.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}
