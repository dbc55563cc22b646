package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
)

// MergeRequest is the optional body of POST .../merge.
type MergeRequest struct {
	// MaxSegments is the segment count to merge down to: at least 1;
	// absent means 1. A pointer, so that an explicit 0 is refused instead
	// of read as the default (null is refused by decodeBody).
	MaxSegments *int `json:"maxSegments,omitempty"`
}

// MaintenanceAnswer is the answer of merge and compact.
type MaintenanceAnswer struct {
	// Generation is the published generation (the current one when there
	// was nothing to do).
	Generation uint64 `json:"generation"`
	// Published is false when there was nothing to rewrite.
	Published bool `json:"published"`
	// Sources are the replaced segments (lowercase hex).
	Sources []string `json:"sources"`
	// Output is the new segment, when published.
	Output string `json:"output,omitempty"`
	// Documents is the index's live document count afterwards.
	Documents uint64 `json:"documents"`
	// DurabilityDegraded is set when the directory fsync after the rename
	// failed: the result stands, crash durability is degraded.
	DurabilityDegraded bool `json:"durabilityDegraded"`
	// PostingsBytesBefore and PostingsBytesAfter measure a reorder (whole
	// postings files of the reordered segments).
	PostingsBytesBefore int64 `json:"postingsBytesBefore,omitempty"`
	PostingsBytesAfter  int64 `json:"postingsBytesAfter,omitempty"`
	// BPConverged is false when a reorder pass was budget-truncated.
	BPConverged *bool `json:"bpConverged,omitempty"`
}

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
	var body MergeRequest
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
	out := MaintenanceAnswer{Generation: st.Generation, Published: !nothing, Sources: []string{},
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
