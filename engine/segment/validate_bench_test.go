package segment

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

// BenchmarkValidateMerged fully validates (Reader.Validate) the segment
// BenchmarkMerge writes: 40 segments of real text (the Opticks
// paragraphs, every field kind) merged into one on disk, what a rewrite
// validates before publishing its output (Q12).
func BenchmarkValidateMerged(b *testing.B) {
	s := testSchema()
	fs := vfs.Default
	dir := b.TempDir()
	docs := opticksDocs(b, s, 0)
	var srcs []*Reader
	const parts = 40
	for i := 0; i < parts; i++ {
		info := buildSegment(b, fs, dir, s, segid.ID(1+i), docs[i*len(docs)/parts:(i+1)*len(docs)/parts])
		r, err := Open(fs, dir, s, info)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		srcs = append(srcs, r)
	}
	ctx := context.Background()
	info, err := Merge(ctx, fs, dir, 1000, s, srcs, Concat(srcs, nil))
	if err != nil {
		b.Fatal(err)
	}
	r, err := Open(fs, dir, s, info)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Validate(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
