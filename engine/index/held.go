package index

import (
	"math/rand/v2"
	"time"
)

// A held publication is a prepared generation whose publication failed
// before its commit point (C11): metadata.json.tmp could not be written or
// renamed, a mask could not be written, the directory refused writes. The
// flush job keeps its outputs owned and the workers paused, and ingestion
// gets ErrBackpressure (C10) until the generation is published. Any
// Commit publishes it (sealOrResume resumes the same job); so does the
// writer's retrier, in the background, with exponential backoff, so that a
// transient disk error heals without a client having to commit again.

// heldPublication records a held publication. Guarded by writer.mu.
type heldPublication struct {
	// since is when the first attempt failed.
	since time.Time
	// attempts counts the failed publication attempts of the generation,
	// from Commit and from the retrier.
	attempts int
	// lastErr is the last attempt's error.
	lastErr error
	// nextRetry is when the retrier tries again; zero once the background
	// retries are exhausted (only a commit or a drain retries then).
	nextRetry time.Time
	// backgroundAttempts counts the retrier's own attempts, bounded by
	// Options.PublicationRetryLimit.
	backgroundAttempts int
}

// HeldPublication describes a generation whose publication failed before
// the commit point and is being retried (Status.HeldPublication).
type HeldPublication struct {
	// Since is when its first publication attempt failed.
	Since time.Time
	// Attempts counts its failed publication attempts, client commits and
	// background retries alike.
	Attempts int
	// LastError is the last attempt's error.
	LastError string
	// NextRetry is when the background retry tries again (a commit may
	// publish it before); zero once the background retries are exhausted.
	NextRetry time.Time
}

// PublicationRetries counts the background retries of held publications
// over the index's lifetime, by outcome.
type PublicationRetries struct {
	// Succeeded counts retries that published the held generation.
	Succeeded uint64
	// Failed counts retries that failed before the commit point again.
	Failed uint64
}

// retrier is the writer's background retry of a held publication. One
// goroutine per writer runs retryLoop from newWriter until the writer
// closes.
type retrier struct {
	// kick wakes the loop when the held state changed (capacity 1).
	kick chan struct{}
	// stop is closed when the writer closes.
	stop chan struct{}
	// done is closed when the loop returned.
	done chan struct{}
}

func newRetrier() retrier {
	return retrier{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// wake tells the loop to look at the held state again; it never blocks.
func (r *retrier) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// hold records a failed publication attempt of the job's generation and
// schedules the next background retry after an exponential backoff.
func (w *writer) hold(err error) {
	now := time.Now()
	w.mu.Lock()
	h := w.mu.held
	if h == nil {
		h = &heldPublication{since: now}
		w.mu.held = h
	}
	h.attempts++
	if w.background {
		w.mu.retries.Failed++
		h.backgroundAttempts++
	}
	h.lastErr = err
	h.nextRetry = time.Time{}
	if h.backgroundAttempts < w.idx.opts.PublicationRetryLimit {
		h.nextRetry = now.Add(retryDelay(w.idx.opts.PublicationRetryMin, w.idx.opts.PublicationRetryMax, h.attempts))
	}
	attempts, next := h.attempts, h.nextRetry
	w.mu.Unlock()
	if next.IsZero() {
		w.idx.log.Error(err, "Publication failed before the commit point; the prepared generation stays held, and its "+
			"background retries are exhausted: a commit or a drain retries it", "attempts", attempts)
	} else {
		w.idx.log.Error(err, "Publication failed before the commit point; the prepared generation is held and retried in the background",
			"attempts", attempts, "nextRetry", next.UTC().Format(time.RFC3339Nano))
	}
	w.retrier.wake()
}

// retryDelay is the backoff before retry number attempts (1 after the
// first failure): min doubled per earlier attempt, capped at max, minus up
// to a fifth of it as jitter, so that indexes that failed together do not
// retry in lockstep. It never exceeds max.
func retryDelay(minDelay, maxDelay time.Duration, attempts int) time.Duration {
	d := minDelay
	for i := 1; i < attempts && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	if j := int64(d / 5); j > 0 {
		d -= time.Duration(rand.Int64N(j + 1))
	}
	return d
}

// retryLoop sleeps until the held publication's next retry and then
// retries it; with nothing held it waits for a failure. It returns when
// the writer closes.
func (w *writer) retryLoop() {
	defer close(w.retrier.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		w.mu.Lock()
		closed, h := w.mu.closed, w.mu.held
		var due time.Time
		if h != nil {
			due = h.nextRetry
		}
		w.mu.Unlock()
		if closed {
			return
		}
		if h == nil || due.IsZero() {
			// Nothing held, or its background retries are exhausted.
			select {
			case <-w.retrier.kick:
				continue
			case <-w.retrier.stop:
				return
			}
		}
		timer.Reset(time.Until(due))
		select {
		case <-timer.C:
			w.retryHeld()
		case <-w.retrier.kick:
			// A commit attempt changed the held state: look again.
			timer.Stop()
		case <-w.retrier.stop:
			timer.Stop()
			return
		}
	}
}

// retryHeld publishes the held generation if it is still held and due. It
// takes the writer guard as a Commit does (C07), so it never overlaps a
// commit, and it only ever resumes the held flush job: it never seals a
// new generation, so documents admitted later are published only by a
// commit.
func (w *writer) retryHeld() {
	select {
	case w.guard <- struct{}{}:
	case <-w.retrier.stop:
		return
	}
	defer func() { <-w.guard }()
	w.mu.Lock()
	h := w.mu.held
	due := h != nil && w.mu.job != nil && !w.mu.closed && !h.nextRetry.IsZero() && !time.Now().Before(h.nextRetry)
	w.mu.Unlock()
	if !due {
		// A commit published it (or failed again and moved the retry), or
		// the writer is closing.
		return
	}
	// The outcome is counted by hold or resume, in the same critical
	// section that changes the held state, so Status never shows one
	// without the other.
	w.background = true
	res, release, err := w.runCommit()
	w.background = false
	release()
	if err == nil {
		w.idx.log.Info("Held publication published by the background retry",
			"generation", res.Generation, "documents", res.Documents)
	}
}

// stopRetrier stops the retry loop (idempotent; REQUIRES: w.mu.closed is
// set, so that the loop cannot start another attempt).
func (w *writer) stopRetrier() {
	w.stopOnce.Do(func() { close(w.retrier.stop) })
}

// heldStatus returns the held publication, if any, and the retry counts.
func (w *writer) heldStatus() (*HeldPublication, PublicationRetries) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.mu.held
	if h == nil {
		return nil, w.mu.retries
	}
	st := &HeldPublication{Since: h.since, Attempts: h.attempts, NextRetry: h.nextRetry}
	if h.lastErr != nil {
		st.LastError = h.lastErr.Error()
	}
	return st, w.mu.retries
}
