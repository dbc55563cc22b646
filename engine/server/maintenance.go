package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
)

// Maintenance kinds, as metric labels.
const (
	// KindMerge is a force merge.
	KindMerge = "merge"
	// KindReorder is a manual BP reorder.
	KindReorder = "reorder"
	// KindCompact is an explicit compaction.
	KindCompact = "compact"
)

// merge force-merges an index down to maxSegments (default 1) and answers
// once the result is published; nothing to merge is 200 with
// "published":false.
func (s *Server) merge(w http.ResponseWriter, r *http.Request) error {
	// An explicit maxSegments 0 is refused, not read as the default;
	// null is refused by decodeBody.
	var body client.MergeOptions
	return s.maintain(w, r, KindMerge, &body, func(ctx context.Context, h *registry.Handle) (index.RewriteResult, error) {
		maxSegments := 1
		if body.MaxSegments != nil {
			maxSegments = *body.MaxSegments
		}
		if maxSegments < 1 {
			return index.RewriteResult{}, newError(http.StatusBadRequest, CodeBadRequest,
				"maxSegments must be at least 1, got %d", maxSegments)
		}
		return h.Merge(ctx, maxSegments)
	})
}

// reorder runs one manual BP pass over every segment and answers once
// every replacement is published; the answer sums the postings bytes
// before and after over the reordered segments.
func (s *Server) reorder(w http.ResponseWriter, r *http.Request) error {
	var body struct{}
	return s.maintain(w, r, KindReorder, &body, func(ctx context.Context, h *registry.Handle) (index.RewriteResult, error) {
		results, err := h.Reorder(ctx)
		if err != nil {
			return index.RewriteResult{}, err
		}
		if len(results) == 0 {
			return index.RewriteResult{}, index.ErrNothingToDo
		}
		sum := index.RewriteResult{BPConverged: true}
		for _, res := range results {
			sum.Generation, sum.Output = res.Generation, res.Output
			sum.Sources = append(sum.Sources, res.Sources...)
			sum.DurabilityDegraded = sum.DurabilityDegraded || res.DurabilityDegraded
			sum.PostingsBytesBefore += res.PostingsBytesBefore
			sum.PostingsBytesAfter += res.PostingsBytesAfter
			sum.DocPostingsBytesBefore += res.DocPostingsBytesBefore
			sum.DocPostingsBytesAfter += res.DocPostingsBytesAfter
			sum.BPConverged = sum.BPConverged && res.BPConverged
		}
		return sum, nil
	})
}

// compact rewrites the segment with the most deleted rows without them
// and answers once the result is published; no deleted rows is 200 with
// "published":false.
func (s *Server) compact(w http.ResponseWriter, r *http.Request) error {
	var body struct{}
	return s.maintain(w, r, KindCompact, &body, func(ctx context.Context, h *registry.Handle) (index.RewriteResult, error) {
		return h.Compact(ctx)
	})
}

// maintain runs one explicit maintenance operation: it checks the index
// and the optional body, refuses while draining (a drain brings
// maintenance to rest), runs op and answers its result. The operation
// owns itself in the registry: a client that goes away stops waiting, not
// the operation.
func (s *Server) maintain(w http.ResponseWriter, r *http.Request, kind string, body any,
	op func(context.Context, *registry.Handle) (index.RewriteResult, error)) error {
	h, err := s.acquire(r)
	if err != nil {
		return err
	}
	defer h.Release()
	if err := decodeBody(w, r, s.limits.MaxSmallBodyBytes, true, body); err != nil {
		return err
	}
	if s.r.Draining() {
		return fmt.Errorf("index %q: %s: %w", h.Name(), kind, registry.ErrDraining)
	}
	start := time.Now()
	res, err := op(r.Context(), h)
	nothing := errors.Is(err, index.ErrNothingToDo)
	if nothing {
		err = nil
	}
	var ae *apiError
	if !errors.As(err, &ae) {
		s.metrics.ObserveMaintenance(h.Name(), kind, err, time.Since(start))
	}
	if err != nil {
		return fmt.Errorf("index %q: %s: %w", h.Name(), kind, maintenanceError(err))
	}
	st := h.Status()
	out := client.MaintenanceResult{Generation: st.Generation, Published: !nothing, Sources: []string{},
		Documents: st.Documents, DurabilityDegraded: res.DurabilityDegraded}
	if !nothing {
		out.Generation = res.Generation
		out.Output = res.Output.String()
		if kind == KindReorder {
			out.PostingsBytesBefore, out.PostingsBytesAfter = res.PostingsBytesBefore, res.PostingsBytesAfter
			converged := res.BPConverged
			out.BPConverged = &converged
		}
		for _, id := range res.Sources {
			out.Sources = append(out.Sources, id.String())
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// maintenanceError maps the errors proper to rewrites.
func maintenanceError(err error) error {
	switch {
	case errors.Is(err, index.ErrVisibilityChanged):
		e := newError(http.StatusConflict, CodeVisibilityChanged, "%v", err)
		e.retryable = true
		return e
	case errors.Is(err, index.ErrNoReorderFields):
		return newError(http.StatusBadRequest, CodeBadRequest, "%v", err)
	case errors.Is(err, index.ErrSourceQuarantined):
		return newError(http.StatusConflict, CodeSourceQuarantined,
			"%v; see STATUS and run summa-server --doctor to repair", err)
	}
	return err
}
