package controllers

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/client"
)

// Status watches: while an engine serves, the operator keeps one long
// poll open on its index (GET /v1/indexes/{index}?waitGeneration=G&
// waitQuarantined=N&wait=S, docs/server.md) with the values status last
// showed. The engine answers as a commit or a new
// quarantine, and the watch writes the engine's figures into status itself
// (summaindex_statuspublish.go), without waiting for a reconcile worker;
// it wakes the index's reconcile only when the answer asks for more than
// the figures, or when it could not write. The resync period is only the
// fallback.

const (
	// statusWatchWait is how long one long poll waits (the engine allows
	// 30 s).
	statusWatchWait = 20 * time.Second
	// statusWatchMinInterval spaces the status writes of one index: an
	// engine that commits ten times a second costs one status write a
	// second, not ten.
	statusWatchMinInterval = time.Second
	// statusWatchRetryMin and statusWatchRetryMax bound the backoff of a
	// watch whose engine does not answer.
	statusWatchRetryMin = time.Second
	statusWatchRetryMax = 30 * time.Second
	// DefaultMaxStatusWatches is the default of Options.MaxStatusWatches.
	DefaultMaxStatusWatches = 1024
)

// watchTarget is what a status watch polls: one index of one engine pod,
// with the credentials the last pass used. A pass that reaches the
// engine another way (a new pod, a rotated token or CA) replaces the
// watch.
type watchTarget struct {
	// podUID is the engine pod's UID.
	podUID types.UID
	// base is the engine's URL.
	base string
	// transport verifies the engine (the shared HTTPS transport).
	transport http.RoundTripper
	// token is the admin token.
	token string
	// index is the engine's index name.
	index string
}

// statusWatch is the long poll of one index.
type statusWatch struct {
	// target is what it polls.
	target watchTarget
	// cancel stops it.
	cancel context.CancelFunc
	// mu guards generation and quarantined.
	mu sync.Mutex
	// generation and quarantined are the values status last showed:
	// the long poll waits for them to change.
	generation, quarantined int64
	// kept is set by each pass that observed the engine (ensure); a pass
	// that did not stops the watch (finish).
	kept bool
}

// statusWatches are the status watches of every running index.
type statusWatches struct {
	// mu guards m and ctx.
	mu sync.Mutex
	// m holds the watches by index.
	m map[types.NamespacedName]*statusWatch
	// ctx is the manager's: every watch ends with it (nil before start).
	ctx context.Context
	// wake carries the indexes whose engine changed to the controller.
	wake chan event.GenericEvent
	// slots bounds the long polls open at once (and so the connections
	// they hold); a watch past it waits for a slot.
	slots chan struct{}
	// log logs the engines' failures at debug level, the status writes'
	// at info level.
	log logr.Logger
	// c reads SummaIndexes (the manager's cache) and patches their status;
	// nil means the watches only wake the reconcile.
	c ctrlclient.Client
	// reader reads a SummaIndex from the API server after a conflict (nil:
	// c again).
	reader ctrlclient.Reader
	// now is the clock of status.lastObservedTime.
	now func() time.Time
}

// newStatusWatches returns the watches, with at most max long polls open
// at once, writing status with c (nil: they only wake the reconcile) and
// reading after a conflict with reader.
func newStatusWatches(maxOpen int, log logr.Logger, c ctrlclient.Client, reader ctrlclient.Reader, now func() time.Time) *statusWatches {
	if now == nil {
		now = time.Now
	}
	return &statusWatches{m: map[types.NamespacedName]*statusWatch{}, wake: make(chan event.GenericEvent, 1024),
		slots: make(chan struct{}, maxOpen), log: log, c: c, reader: reader, now: now}
}

// Start runs until ctx ends (the manager's runnable), then stops every
// watch.
func (s *statusWatches) Start(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, w := range s.m {
		w.cancel()
		delete(s.m, k)
	}
	return nil
}

// begin marks the start of a pass of key: unless the pass observes the
// engine (ensure), finish stops the watch.
func (s *statusWatches) begin(key types.NamespacedName) {
	if s == nil {
		return // a reconciler not set up with a manager (unit tests)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.m[key]; w != nil {
		w.kept = false
	}
}

// finish ends a pass of key: a watch the pass did not keep stops (the
// engine is not ready, the index is suspended, deleted, restarting...).
func (s *statusWatches) finish(key types.NamespacedName) {
	s.end(key, false)
}

// ensure keeps a watch of key on target, waiting for status to move away
// from generation and quarantined: it starts one, or replaces one on
// another target.
func (s *statusWatches) ensure(key types.NamespacedName, target watchTarget, generation, quarantined int64) {
	if s == nil {
		return // a reconciler not set up with a manager (unit tests)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil || s.ctx.Err() != nil {
		return // not started, or stopping: the resync covers the index
	}
	w := s.m[key]
	if w != nil && w.target != target {
		w.cancel()
		w = nil
	}
	if w == nil {
		ctx, cancel := context.WithCancel(s.ctx)
		w = &statusWatch{target: target, cancel: cancel}
		s.m[key] = w
		go s.run(ctx, key, w)
	}
	w.kept = true
	w.mu.Lock()
	w.generation, w.quarantined = generation, quarantined
	w.mu.Unlock()
}

// stop ends key's watch (the index is gone).
func (s *statusWatches) stop(key types.NamespacedName) {
	s.end(key, true)
}

// end stops key's watch: one kept by the current pass only when evenKept.
func (s *statusWatches) end(key types.NamespacedName, evenKept bool) {
	if s == nil {
		return // a reconciler not set up with a manager (unit tests)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.m[key]; w != nil && (evenKept || !w.kept) {
		w.cancel()
		delete(s.m, key)
	}
}

// run is one watch's loop: long poll, and write key's status when the
// engine's answer differs from what status showed (waking the reconcile
// when that takes a pass).
func (s *statusWatches) run(ctx context.Context, key types.NamespacedName, w *statusWatch) {
	c := client.New(w.target.base, &http.Client{Transport: w.target.transport}).WithToken(w.target.token)
	retry := statusWatchRetryMin
	for ctx.Err() == nil {
		w.mu.Lock()
		gen, q := w.generation, w.quarantined
		w.mu.Unlock()
		asked := time.Now()
		st, err := s.poll(ctx, c, w.target.index, gen, q)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// Not answering (stopped, restarting, a NetworkPolicy): the
			// pass that notices stops the watch; until then, slowly.
			s.log.V(1).Info("status watch: the engine did not answer", "index", key.String(), "error", err.Error(), "retry", retry.String())
			sleepCtx(ctx, retry)
			retry = min(2*retry, statusWatchRetryMax)
			continue
		}
		retry = statusWatchRetryMin
		ng, nq := int64(st.Generation), int64(len(st.Quarantined))
		if ng == gen && nq == q {
			if time.Since(asked) < statusWatchWait/2 {
				// Unchanged and early: an engine that does not know the
				// long poll answers at once; asked no more often than
				// this, it stays with the resync's staleness.
				sleepCtx(ctx, statusWatchRetryMax)
			}
			continue // the wait ran out
		}
		w.mu.Lock()
		w.generation, w.quarantined = ng, nq
		w.mu.Unlock()
		pass, err := s.publish(ctx, key, w.target.podUID, st)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Info("status watch: could not write status; a reconcile will", "index", key.String(), "error", err.Error())
		}
		if pass {
			index := &summav1.SummaIndex{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
			select {
			case s.wake <- event.GenericEvent{Object: index}:
			case <-ctx.Done():
				return
			}
		}
		sleepCtx(ctx, statusWatchMinInterval)
	}
}

// poll is one long poll, in one of the slots.
func (s *statusWatches) poll(ctx context.Context, c *client.Client, index string, gen, q int64) (*client.IndexStatus, error) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.slots }()
	// The wait, and time for the answer: a stopped engine holds this
	// goroutine only, never a reconcile.
	ctx, cancel := context.WithTimeout(ctx, statusWatchWait+defaultEngineTimeout)
	defer cancel()
	return c.WaitIndex(ctx, index, gen, q, statusWatchWait)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
