package segment

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

// TestMergeRejectsSourceNormsDisagreeingWithPostings: the merge builds the
// output's block maxima from the sources' norms as it merges; a source
// whose norms are not its postings' lengths must fail the merge as a
// corrupt source, not produce an output whose block maxima are wrong.
func TestMergeRejectsSourceNormsDisagreeingWithPostings(t *testing.T) {
	s := testSchema()
	fs := vfs.NewMem()
	srcs := mergeSources(t, fs, s)
	body := fieldOrd(s, "body")
	victim := srcs[1]
	c := victim.norms[body]
	data := slices.Clone(c.data)
	data[3*c.width]++ // doc 3's length, one more than its postings hold
	victim.norms[body] = normCol{width: c.width, data: data}
	defer func() { victim.norms[body] = c }()
	_, err := Merge(context.Background(), fs, "idx", segid.ID(300), s, srcs, Concat(srcs, nil))
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Segment != victim.id {
		t.Fatalf("merge over a source with wrong norms: %v", err)
	}
}

// TestMergeWithoutSourceNormsRebuildsBlockMax: when a source has no norms
// column for a tokenized field, the merge leaves that field's block maxima
// to Write, which rebuilds them from the merged postings and lengths: the
// output's files are still those of a re-index.
func TestMergeWithoutSourceNormsRebuildsBlockMax(t *testing.T) {
	s := testSchema()
	fs := vfs.NewMem()
	srcs := mergeSources(t, fs, s)
	body := fieldOrd(s, "body")
	saved := srcs[1].norms[body]
	srcs[1].norms[body] = normCol{}
	defer func() { srcs[1].norms[body] = saved }()
	order := Concat(srcs, nil)
	want := reindex(t, fs, "idx", s, segid.ID(400), srcs, order)
	got, err := Merge(context.Background(), fs, "idx", segid.ID(401), s, srcs, order)
	if err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{SuffixBlockMax, SuffixNorms, SuffixPostings} {
		a := partBytes(t, fs, "idx", want, suffix)
		b := partBytes(t, fs, "idx", got, suffix)
		if !slices.Equal(a[headerSize:len(a)-footerSize], b[headerSize:len(b)-footerSize]) {
			t.Errorf("%s: merged payload differs from the re-indexed one", suffix)
		}
	}
	if err := Validate(context.Background(), fs, "idx", s, got); err != nil {
		t.Fatal(err)
	}
}
