package search

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// openSegment writes docs as one real segment in a fresh in-memory
// filesystem and opens it; the reader is closed when the test ends.
func openSegment(t testing.TB, s *schema.Schema, docs []*schema.Document) Segment {
	t.Helper()
	b := segment.NewBuilder(s)
	for i, d := range docs {
		if id := b.Add(d); id != uint32(i) {
			t.Fatalf("builder gave doc %d the id %d", i, id)
		}
	}
	fs := vfs.NewMem()
	const dir, id = "idx", segid.ID(1)
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := b.Write(context.Background(), fs, dir, id)
	if err != nil {
		t.Fatalf("write segment: %v", err)
	}
	r, err := segment.Open(fs, dir, s, info)
	if err != nil {
		t.Fatalf("open segment: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("close segment: %v", err)
		}
	})
	return r
}
