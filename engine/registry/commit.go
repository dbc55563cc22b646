package registry

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/summadev/summa/engine/index"
)

// committer runs at most one owned commit task per index (C07).
type committer struct {
	mu sync.Mutex
	// cur is the running task, if any.
	cur *commitTask
}

// commitTask is an accepted commit. It owns the engine's writer guard
// through index.Commit and outlives the requests that wait for it. It
// retries only flush timeouts, each attempt bounded by the engine's flush
// timeout, on the same generation; build and publication failures end it.
type commitTask struct {
	// done is closed when the task ended; res and err are set then.
	done chan struct{}
	res  index.CommitResult
	err  error
	// mu guards timedOut.
	mu sync.Mutex
	// timedOut is closed at the next flush timeout (and replaced), so
	// waiters that joined before it can answer CommitFlushTimeout while the
	// task keeps going.
	timedOut chan struct{}
	// started is when the task began.
	started time.Time
	// pending is the number of operations the commit publishes.
	pending int
}

// Commit commits an index through its owned commit task: it starts one or
// joins the running one. Cancelling ctx stops the wait, not the commit
// (C08). It returns index.ErrCommitFlushTimeout while the task is still
// waiting for a slow flush, and ErrIndexDeleting if the deletion starts.
func (h *Handle) Commit(ctx context.Context) (index.CommitResult, error) {
	idx, err := h.Index()
	if err != nil {
		return index.CommitResult{}, err
	}
	if err := h.r.admitWrite(0); err != nil {
		return index.CommitResult{}, err
	}
	t := h.r.startCommit(h.e, idx)
	t.mu.Lock()
	timedOut := t.timedOut
	t.mu.Unlock()
	select {
	case <-t.done:
		return t.res, t.err
	case <-timedOut:
		return index.CommitResult{}, index.ErrCommitFlushTimeout
	case <-ctx.Done():
		return index.CommitResult{}, ctx.Err()
	case <-h.Done():
		return index.CommitResult{}, ErrIndexDeleting
	}
}

// startCommit returns the running task of e or starts one.
func (r *Registry) startCommit(e *entry, idx *index.Index) *commitTask {
	e.committer.mu.Lock()
	defer e.committer.mu.Unlock()
	if t := e.committer.cur; t != nil {
		return t
	}
	t := &commitTask{done: make(chan struct{}), timedOut: make(chan struct{}), started: time.Now(),
		pending: idx.UncommittedDocuments()}
	e.committer.cur = t
	r.stats.commitStarted()
	go func() {
		defer r.stats.commitEnded()
		for {
			res, err := idx.Commit(context.Background())
			if errors.Is(err, index.ErrCommitFlushTimeout) {
				t.mu.Lock()
				close(t.timedOut)
				t.timedOut = make(chan struct{})
				t.mu.Unlock()
				r.log.Info("Commit flush timed out; waiting again on the same generation", "index", e.name)
				continue
			}
			t.res, t.err = res, r.observeWrite(err)
			break
		}
		if t.err == nil {
			r.stats.recordCommit(t.pending, time.Since(t.started))
		}
		e.committer.mu.Lock()
		e.committer.cur = nil
		e.committer.mu.Unlock()
		close(t.done)
	}()
	return t
}

// activeCommit returns the running commit of e, if any.
func (e *entry) activeCommit() *commitTask {
	e.committer.mu.Lock()
	defer e.committer.mu.Unlock()
	return e.committer.cur
}
