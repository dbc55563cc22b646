package server

import (
	"context"
	"time"

	"github.com/summadev/summa/internal/tick"
)

// RunAutoCommit commits, every interval, each index with uncommitted
// operations, until ctx ends. It skips a tick while the registry drains
// (the drain commits everything itself). Commits go through the registry's
// owned commit task, like the commit endpoint, and count in its metrics.
func (s *Server) RunAutoCommit(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	tick.Every(ctx, interval, func() {
		if s.r.Draining() {
			return
		}
		for _, name := range s.r.Names() {
			if ctx.Err() != nil {
				return
			}
			s.autoCommit(ctx, name)
		}
	})
}

// autoCommit commits one index if it has uncommitted operations.
func (s *Server) autoCommit(ctx context.Context, name string) {
	h, err := s.r.Acquire(name)
	if err != nil {
		return // deleted or shutting down since Names
	}
	defer h.Release()
	idx, err := h.Index()
	if err != nil || idx.UncommittedDocuments() == 0 {
		return
	}
	start := time.Now()
	res, err := h.Commit(ctx)
	s.metrics.observeCommit(name, err, time.Since(start))
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error(err, "Autocommit failed", "index", name)
		}
		return
	}
	s.log.V(1).Info("Autocommitted", "index", name, "generation", res.Generation, "documents", res.Documents)
}
