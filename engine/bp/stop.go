package bp

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// unitWork is the size of one bounded unit of work, in postings (or
// documents, or elements) handled between two cancellation checks.
const unitWork = 1 << 15

// errDeadline is the internal signal that Budget.Deadline was reached: it
// stops refinement but is not an error of Reorder.
var errDeadline = errors.New("bp: deadline reached")

// testCheckHook, when set by a test, runs at every check of a stopper, so
// tests can cancel at an exact point of the work.
var testCheckHook func()

// timeNow is the clock read for the deadline; tests replace it.
var timeNow = time.Now

// stopper tells long loops when to stop: on cancellation of ctx (hard
// stop, an error) or at the refinement deadline (soft stop).
type stopper struct {
	// ctx is the caller's context; its Err is wrapped in the error.
	ctx context.Context
	// done is ctx.Done(), read once (nil for a context never cancelled).
	done <-chan struct{}
	// deadline ends refinement; zero means none.
	deadline time.Time
	// expired is set once any worker saw the deadline pass, so the others
	// stop without reading the clock.
	expired atomic.Bool
}

// newStopper returns a stopper for ctx and an optional deadline.
func newStopper(ctx context.Context, deadline time.Time) *stopper {
	if ctx == nil {
		ctx = context.Background()
	}
	return &stopper{ctx: ctx, done: ctx.Done(), deadline: deadline}
}

// cancelled returns the cancellation error if ctx is done, else nil. Phases
// that must finish to produce a result (validation, cost) use it.
func (s *stopper) cancelled() error {
	if testCheckHook != nil {
		testCheckHook()
	}
	select {
	case <-s.done:
		return cancelErr(s.ctx)
	default:
		return nil
	}
}

// check returns the cancellation error, errDeadline once the deadline has
// passed, or nil. Refinement uses it between bounded units.
func (s *stopper) check() error {
	if err := s.cancelled(); err != nil {
		return err
	}
	if s.expired.Load() {
		return errDeadline
	}
	if !s.deadline.IsZero() && !timeNow().Before(s.deadline) {
		s.expired.Store(true)
		return errDeadline
	}
	return nil
}

// cancelErr wraps ErrCancelled and ctx.Err().
func cancelErr(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrCancelled, ctx.Err())
}

// noDeadline is the zero time: no refinement deadline.
var noDeadline time.Time
