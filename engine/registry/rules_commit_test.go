package registry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
)

// TestC07_CommitTaskRetriesFlushTimeoutsAtBoundedIntervals: a stuck
// flush is waited for again on the same generation once per
// CommitFlushTimeout, never faster (no spinning) and never by sealing
// another generation or restarting the build: ingestion is refused
// meanwhile, and the retried commit publishes the original documents once.
func TestC07_CommitTaskRetriesFlushTimeoutsAtBoundedIntervals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 5 * time.Minute
		release := make(chan struct{})
		var flushes atomic.Int32
		var once sync.Once
		opts := Options{Index: index.Options{IndexingWorkers: 1, CommitFlushTimeout: timeout,
			Hooks: index.Hooks{BeforeWorkerFlush: func(int) {
				flushes.Add(1)
				once.Do(func() { <-release })
			}}}}
		r := openTest(t, vfs.NewMem(), opts)
		defer r.Close(context.Background())
		h := mustCreate(t, r, "articles")
		defer h.Release()
		if err := h.Add(context.Background(), docs(t, 0, 10)); err != nil {
			t.Fatal(err)
		}
		idx, err := h.Index()
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := h.Commit(context.Background()); !errors.Is(err, index.ErrCommitFlushTimeout) {
			t.Fatalf("stuck flush: %v", err)
		}
		if waited := time.Since(start); waited != timeout {
			t.Fatalf("the first timeout came after %v, want %v", waited, timeout)
		}
		// Ten more intervals: the task waits on the same job, and the
		// worker is asked to flush once, not once per retry.
		for i := 0; i < 10; i++ {
			before := time.Now()
			if _, err := h.Commit(context.Background()); !errors.Is(err, index.ErrCommitFlushTimeout) {
				t.Fatalf("retry %d: %v", i, err)
			}
			if d := time.Since(before); d <= 0 || d > timeout {
				t.Fatalf("retry %d answered after %v: intervals are bounded by %v and never zero", i, d, timeout)
			}
			if err := idx.Add(docs(t, 10, 11)); !errors.Is(err, index.ErrBackpressure) {
				t.Fatalf("another generation admitted while the commit retries: %v", err)
			}
		}
		if n := flushes.Load(); n != 1 {
			t.Fatalf("the stuck generation was flushed %d times: a retry restarted the build", n)
		}
		close(release)
		res, err := h.Commit(context.Background())
		if err != nil || res.Generation != 1 || res.Documents != 10 {
			t.Fatalf("after the flush ended: %+v %v", res, err)
		}
	})
}

// TestC07_PoisonDocumentIsNotRetriedIndefinitely: a document whose build
// fails every flush fails each commit once: the owned task ends with
// ErrGenerationFailed instead of restarting the build, and nothing
// retries it in the background however long the index stays up; only the
// next commit asks again.
func TestC07_PoisonDocumentIsNotRetriedIndefinitely(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var builds atomic.Int32
		var poisoned atomic.Bool
		opts := Options{Index: index.Options{IndexingWorkers: 1, CommitFlushTimeout: time.Minute,
			Hooks: index.Hooks{BeforeWorkerFlush: func(int) {
				builds.Add(1)
				if poisoned.Load() {
					panic("poison document")
				}
			}}}}
		r := openTest(t, vfs.NewMem(), opts)
		defer r.Close(context.Background())
		h := mustCreate(t, r, "articles")
		defer h.Release()
		poisoned.Store(true)
		if err := h.Add(context.Background(), docs(t, 0, 5)); err != nil {
			t.Fatal(err)
		}
		// A deadline in the bubble's fake time: a task that retried the
		// failed build would never answer.
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if _, err := h.Commit(ctx); !errors.Is(err, index.ErrGenerationFailed) {
			t.Fatalf("commit of a poison document: %v", err)
		}
		synctest.Wait()
		if h.e.activeCommit() != nil {
			t.Fatal("the commit task outlived its failed build")
		}
		n := builds.Load()
		if n != 1 {
			t.Fatalf("one commit built the generation %d times", n)
		}
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		if builds.Load() != n {
			t.Fatalf("the failed build was retried in the background: %d builds", builds.Load())
		}
		// The operations are kept; a commit once the cause is gone
		// publishes them.
		poisoned.Store(false)
		res, err := h.Commit(context.Background())
		if err != nil || res.Documents != 5 {
			t.Fatalf("commit after the poison was removed: %+v %v", res, err)
		}
	})
}

// TestS02_ShutdownStepsInOrder: Close first rejects new registry requests
// and stops optimizer scans; it then waits for the accepted commit, which
// still flushes and publishes (segment-build admission and the writers
// stay open for it); only after the commit ended are the writers and
// managers stopped. Every committed document survives a restart.
func TestS02_ShutdownStepsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := vfs.NewMem()
		reached, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		opts := Options{Index: index.Options{IndexingWorkers: 1, Hooks: index.Hooks{BeforeWorkerFlush: func(int) {
			once.Do(func() { close(reached); <-release })
		}}}}
		r := openTest(t, fs, opts)
		h := mustCreate(t, r, "articles")
		if err := h.Add(context.Background(), docs(t, 0, 10)); err != nil {
			t.Fatal(err)
		}
		idx, err := h.Index()
		if err != nil {
			t.Fatal(err)
		}
		go h.Commit(context.Background())
		<-reached // the accepted commit is flushing
		h.Release()
		closed := make(chan error, 1)
		go func() { closed <- r.Close(context.Background()) }()
		synctest.Wait() // Close is blocked on the commit
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while an accepted commit was running", err)
		default:
		}
		// Step 1: new requests rejected, scans stopped.
		if _, err := r.Acquire("articles"); !errors.Is(err, ErrShuttingDown) {
			t.Fatalf("new request during shutdown: %v", err)
		}
		if !r.opt.ScansStopped() {
			t.Fatal("optimizer scans still running during shutdown")
		}
		// Steps 3-4 wait for step 2: the writer and its workers still run
		// for the commit.
		if q := idx.Quiescence(); q.Closed || q.WorkersStopped {
			t.Fatalf("writers stopped before the accepted commit ended: %+v", q)
		}
		close(release)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if q := idx.Quiescence(); !q.Quiet() {
			t.Fatalf("after Close: %+v", q)
		}
		if g := idx.Metadata().Generation; g != 1 {
			t.Fatalf("the accepted commit was not published before the writers stopped: generation %d", g)
		}
		r = openTest(t, fs, Options{})
		defer r.Close(context.Background())
		if st := r.Statuses(); len(st) != 1 || st[0].Documents != 10 {
			t.Fatalf("after restart %+v", st)
		}
	})
}
