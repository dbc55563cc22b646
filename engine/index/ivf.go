package index

import (
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/summadev/summa/engine/metadata"
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
	if idx.readOnly {
		return RewriteResult{}, ErrReadOnly
	}
	rw, err := idx.startRewrite("coalesce", pickSegment(id))
	if err != nil {
		return RewriteResult{}, err
	}
	published := false
	defer func() { rw.finish(published) }()
	if err := rw.ivfDebt(); err != nil {
		return RewriteResult{}, err
	}
	if err := rw.preflight(ctx); err != nil {
		return RewriteResult{}, err
	}
	rw.freshIVF = true
	src := rw.sources[0]
	order := make([]uint32, src.Reader.NumDocs())
	for i := range order {
		order[i] = uint32(i)
	}
	info, r, err := rw.buildOrdered(ctx, order)
	if err != nil {
		return RewriteResult{}, err
	}
	rw.decorate = keepBPState
	res, err := rw.publish(ctx, info, r, func(cur []metadata.Segment) (*roaring.Bitmap, error) {
		return rw.permutedMask(cur[0], order), nil
	})
	published = err == nil
	return res, err
}

// ivfDebt checks the claimed source's current metadata entry for
// fragmentation debt (M10: persisted debt only).
func (rw *rewrite) ivfDebt() error {
	id := rw.sources[0].Meta.ID
	for _, s := range rw.idx.Metadata().Segments {
		if s.ID == id {
			if !s.IVFFragmented() {
				return fmt.Errorf("%w: %s has no binary IVF fragmentation debt", ErrNothingToDo, id)
			}
			return nil
		}
	}
	return fmt.Errorf("%w: %s is no longer live", ErrNothingToDo, id)
}
