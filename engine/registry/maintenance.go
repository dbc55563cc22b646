package registry

import (
	"context"

	"github.com/summadev/summa/engine/index"
)

// Merge force-merges the index down to at most maxSegments segments. Once
// started, the operation owns its own handle and a maintenance permit and
// finishes even if ctx is cancelled (M06); only the index's deletion
// cancels it, and deletion waits for it to drain (S01).
func (h *Handle) Merge(ctx context.Context, maxSegments int) (index.RewriteResult, error) {
	return maintain(ctx, h, func(c context.Context, idx *index.Index) (index.RewriteResult, error) {
		return idx.ForceMerge(c, maxSegments)
	})
}

// Compact rewrites the segment with the most deleted rows without them.
func (h *Handle) Compact(ctx context.Context) (index.RewriteResult, error) {
	return maintain(ctx, h, func(c context.Context, idx *index.Index) (index.RewriteResult, error) {
		return idx.Compact(c)
	})
}

// Reorder runs one manual BP pass over every segment. Ingestion already
// admitted is committed first; the writer is released before waiting for
// maintenance capacity (D05). A schema without a reorder field is refused
// before that commit: a refused request changes nothing.
func (h *Handle) Reorder(ctx context.Context) ([]index.RewriteResult, error) {
	if idx, err := h.Index(); err == nil && !idx.Schema().HasReorderFields() {
		return nil, index.ErrNoReorderFields
	}
	if _, err := h.Commit(ctx); err != nil {
		return nil, err
	}
	return maintain(ctx, h, func(c context.Context, idx *index.Index) ([]index.RewriteResult, error) {
		return idx.Reorder(c, h.r.opts.Reorder)
	})
}

// maintain runs op in an owned task holding its own handle and a
// maintenance permit (M04); waiting for the permit is cancellable (M06).
func maintain[T any](ctx context.Context, h *Handle, op func(context.Context, *index.Index) (T, error)) (T, error) {
	var zero T
	idx, err := h.Index()
	if err != nil {
		return zero, err
	}
	// Admission goes through the write gate: a drain refuses new
	// maintenance, and waits for the admitted one to hold its permit.
	if err := h.r.beginWrite(); err != nil {
		return zero, err
	}
	if err := h.r.admitWrite(0); err != nil {
		h.r.endWrite()
		return zero, err
	}
	err = h.r.permits.Acquire(ctx)
	h.r.endWrite()
	if err != nil {
		return zero, err
	}
	own, err := h.r.Acquire(h.e.name)
	if err != nil {
		h.r.permits.Release()
		return zero, err
	}
	type outcome struct {
		res T
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		defer h.r.permits.Release()
		defer own.Release()
		res, err := op(h.e.ctx, idx)
		done <- outcome{res, h.r.observeWrite(err)}
	}()
	select {
	case o := <-done:
		if o.err != nil && h.e.ctx.Err() != nil {
			return o.res, ErrIndexDeleting
		}
		return o.res, o.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}
