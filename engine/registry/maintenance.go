package registry

import (
	"context"
	"errors"

	"github.com/summadev/summa/engine/index"
)

// ErrNotImplemented: the operation is not available in this version.
var ErrNotImplemented = errors.New("registry: not implemented")

// Merge force-merges the index down to at most maxSegments segments. Once
// started, the operation owns its own handle and finishes even if ctx is
// cancelled (M06); only the index's deletion cancels it, and deletion
// waits for it to drain (S01).
func (h *Handle) Merge(ctx context.Context, maxSegments int) (index.RewriteResult, error) {
	return h.maintain(ctx, func(c context.Context, idx *index.Index) (index.RewriteResult, error) {
		return idx.ForceMerge(c, maxSegments)
	})
}

// Compact rewrites the segment with the most deleted rows without them.
func (h *Handle) Compact(ctx context.Context) (index.RewriteResult, error) {
	return h.maintain(ctx, func(c context.Context, idx *index.Index) (index.RewriteResult, error) {
		return idx.Compact(c)
	})
}

// maintain runs op in an owned task holding its own handle.
func (h *Handle) maintain(ctx context.Context, op func(context.Context, *index.Index) (index.RewriteResult, error)) (index.RewriteResult, error) {
	idx, err := h.Index()
	if err != nil {
		return index.RewriteResult{}, err
	}
	own, err := h.r.Acquire(h.e.name)
	if err != nil {
		return index.RewriteResult{}, err
	}
	type outcome struct {
		res index.RewriteResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		defer own.Release()
		res, err := op(h.e.ctx, idx)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		if o.err != nil && h.e.ctx.Err() != nil {
			return o.res, ErrIndexDeleting
		}
		return o.res, o.err
	case <-ctx.Done():
		return index.RewriteResult{}, ctx.Err()
	}
}
