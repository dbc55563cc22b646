package segment

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// BenchmarkValidateMerged fully validates (Reader.Validate) the segment
// BenchmarkMerge writes: 40 segments of real text (the Opticks
// paragraphs, every field kind) merged into one on disk, what a rewrite
// validates before publishing its output (Q12).
func BenchmarkValidateMerged(b *testing.B) {
	s := testSchema()
	fs := vfs.Default
	dir := b.TempDir()
	srcs := opticksSources(b, fs, dir, s, 40)
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
