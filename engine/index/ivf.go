package index

import (
	"context"
	"fmt"

	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// hasIVFFields reports whether the schema has a binary dense field.
func (idx *Index) hasIVFFields() bool {
	for i := range idx.schema.Fields {
		if segment.IsBinaryIVF(&idx.schema.Fields[i]) {
			return true
		}
	}
	return false
}

// CoalesceSegment is standalone binary-IVF maintenance (M08): it rewrites
// one segment whose metadata records fragmentation debt, encoding every
// binary field's vectors through the dense writer into one run with a
// freshly trained model. Rows keep their order and IDs; the output's
// metadata records one run per field, which clears the fragmentation bit
// in the same validated replacement transaction, and keeps the source's
// BP flags and counters (M11). Eligibility is read from the claimed
// source's persisted metadata entry only (M10): a segment without debt is
// ErrNothingToDo. It uses the same claims, validation and publication as
// every rewrite.
func (idx *Index) CoalesceSegment(ctx context.Context, id segid.ID) (RewriteResult, error) {
	return idx.rewriteInPlace(ctx, "coalesce", id, (*rewrite).ivfDebt,
		func(rw *rewrite) (segment.Info, *segment.Reader, error) {
			rw.freshIVF = true
			return rw.buildOrdered(ctx, identity(rw.sources[0].Reader.NumDocs()))
		})
}

// ivfDebt checks the claimed source's current metadata entry for
// fragmentation debt (M10: persisted debt only).
func (rw *rewrite) ivfDebt() error {
	s, err := rw.sourceEntry()
	if err != nil {
		return err
	}
	if !s.IVFFragmented() {
		return fmt.Errorf("%w: %s has no binary IVF fragmentation debt", ErrNothingToDo, s.ID)
	}
	return nil
}
