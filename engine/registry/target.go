package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/summadev/summa/engine/diskspace"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/lifecycle"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/optimizer"
	"github.com/summadev/summa/engine/segid"
)

// target adapts a handle to the optimizer.
type target struct {
	h *Handle
}

// targets returns a handle-backed target for every index not being deleted.
func (r *Registry) targets() []optimizer.Target {
	var out []optimizer.Target
	for _, name := range r.Names() {
		h, err := r.Acquire(name)
		if err != nil {
			continue
		}
		out = append(out, &target{h: h})
	}
	return out
}

func (t *target) Name() string                 { return t.h.e.name }
func (t *target) Metadata() *metadata.Metadata { return t.h.e.idx.Metadata() }
func (t *target) Quarantined(id segid.ID) bool { return t.h.e.idx.IsQuarantined(id) }
func (t *target) HasReorderFields() bool       { return t.h.e.idx.Schema().HasReorderFields() }
func (t *target) Release()                     { t.h.Release() }

func (t *target) Retain() (optimizer.Target, error) {
	h, err := t.h.r.Acquire(t.h.e.name)
	if err != nil {
		return nil, err
	}
	return &target{h: h}, nil
}

func (t *target) Sweep() error {
	idx, err := t.h.Index()
	if err != nil {
		return nil
	}
	_, err = idx.Sweep()
	return err
}

// Run executes a background task; the index's deletion cancels it too.
func (t *target) Run(ctx context.Context, task optimizer.Task) error {
	idx, err := t.h.Index()
	if err != nil {
		return fmt.Errorf("%w: %v", optimizer.ErrSkip, err)
	}
	if err := t.h.r.admitTask(idx.Metadata(), task.Sources); err != nil {
		return err
	}
	ctx, cancel := t.h.Context(ctx)
	defer cancel()
	switch task.Kind {
	case "merge":
		_, err = idx.MergeSegments(ctx, task.Sources)
	case "compact":
		_, err = idx.CompactSegment(ctx, task.Sources[0])
	case "coalesce":
		_, err = idx.CoalesceSegment(ctx, task.Sources[0])
	case "reorder":
		// M11: the index decides from the claimed source's metadata.
		opts := t.h.r.opts.Reorder
		opts.Automatic = true
		opts.MaxUnconvergedPasses = t.h.r.opt.Policy().MaxUnconvergedPasses
		_, err = idx.ReorderSegment(ctx, task.Sources[0], opts)
	case "seismic":
		// M09: the index reads the debt from the claimed source's entry.
		_, err = idx.SeismicSegment(ctx, task.Sources[0], index.SeismicOptions{})
	default:
		err = fmt.Errorf("registry: unknown maintenance kind %q", task.Kind)
	}
	return classify(t.h.r.observeWrite(err))
}

// classify marks errors that are not failures of the sources.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, index.ErrNothingToDo), errors.Is(err, lifecycle.ErrAlreadyClaimed),
		errors.Is(err, index.ErrSourceQuarantined), errors.Is(err, index.ErrVisibilityChanged),
		errors.Is(err, lifecycle.ErrClosed), errors.Is(err, index.ErrClosed):
		return fmt.Errorf("%w: %v", optimizer.ErrSkip, err)
	case diskspace.IsNoSpace(err):
		return fmt.Errorf("%w: %w", optimizer.ErrStorageFull, err)
	}
	return err
}
