package optimizer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
)

// fakeTarget is an index whose metadata always offers a merge of eight
// small segments; Run records the tasks it is given.
type fakeTarget struct {
	mu    sync.Mutex
	meta  *metadata.Metadata
	tasks []Task
	// run, when set, is the task's outcome.
	run func(Task) error
	// runCtx, when set, is the task's outcome given its context.
	runCtx func(context.Context, Task) error
}

func newFakeTarget(segs ...metadata.Segment) *fakeTarget {
	if len(segs) == 0 {
		for i := 0; i < 8; i++ {
			segs = append(segs, seg(segid.ID(i+1), 100, 0))
		}
	}
	return &fakeTarget{meta: &metadata.Metadata{Segments: segs}}
}

func (f *fakeTarget) Name() string                 { return "articles" }
func (f *fakeTarget) Metadata() *metadata.Metadata { return f.meta }
func (f *fakeTarget) Quarantined(segid.ID) bool    { return false }
func (f *fakeTarget) HasReorderFields() bool       { return true }
func (f *fakeTarget) Sweep() error                 { return nil }
func (f *fakeTarget) Retain() (Target, error)      { return f, nil }
func (f *fakeTarget) Release()                     {}
func (f *fakeTarget) Run(ctx context.Context, t Task) error {
	f.mu.Lock()
	f.tasks = append(f.tasks, t)
	run, runCtx := f.run, f.runCtx
	f.mu.Unlock()
	if runCtx != nil {
		return runCtx(ctx, t)
	}
	if run != nil {
		return run(t)
	}
	return nil
}

func (f *fakeTarget) ran() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.tasks)
}

// TestM05_CompletionCooldownBeforeTheNextAutomaticTask: a completed
// automatic task does not let the next one on the same index start at
// once; it starts on the first scan after the cooldown, which the
// optimizer schedules itself. Admission never waits for a permit.
func TestM05_CompletionCooldownBeforeTheNextAutomaticTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const cooldown = 20 * time.Second
		o := New(Config{Threads: 1, ScanInterval: time.Hour, CompletionCooldown: cooldown}, NewPermits(1))
		defer o.Shutdown()
		f := newFakeTarget()
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 1 {
			t.Fatalf("first scan ran %d tasks", f.ran())
		}
		// The task completed; scans right after it (the wake-up finish
		// asks for, or any other) must not start the next one.
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 1 {
			t.Fatal("the next automatic task started right after the previous one completed: no cooldown")
		}
		if d := o.nextScan(time.Now()); d > cooldown {
			t.Fatalf("next scan in %v: the end of the cooldown (%v) schedules no wake-up", d, cooldown)
		}
		time.Sleep(cooldown - time.Second)
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 1 {
			t.Fatal("a task started before the cooldown ended")
		}
		time.Sleep(time.Second)
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 2 {
			t.Fatalf("after the cooldown %d tasks ran, want 2", f.ran())
		}
	})
}

// TestM05_AutomaticAdmissionNeverWaitsForAPermit: with every permit held
// by explicit maintenance, a scan returns at once and starts nothing.
func TestM05_AutomaticAdmissionNeverWaitsForAPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPermits(1)
		if err := p.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		o := New(Config{Threads: 1, ScanInterval: time.Hour}, p)
		defer o.Shutdown()
		f := newFakeTarget()
		o.Scan([]Target{f}) // returns: a blocking Acquire would deadlock the bubble
		synctest.Wait()
		if f.ran() != 0 || p.InUse() != 1 {
			t.Fatalf("a scan without a free permit ran %d tasks", f.ran())
		}
		p.Release()
	})
}

// TestM04_PermitHeldUntilTheTaskDrains: a background task keeps its
// permit, shared with explicit maintenance, until its blocking work
// returns, even after cancellation was signalled; Shutdown joins it.
func TestM04_PermitHeldUntilTheTaskDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPermits(1)
		o := New(Config{Threads: 1, ScanInterval: time.Hour}, p)
		f := newFakeTarget()
		release := make(chan struct{})
		f.run = func(Task) error { <-release; return context.Canceled } // blocking work ignores ctx
		stopped := make(chan struct{})
		shutdown := sync.OnceFunc(func() { go func() { o.Shutdown(); close(stopped) }() })
		unblock := sync.OnceFunc(func() { close(release) })
		// On every path, a failed assertion included, the task drains and
		// the optimizer is joined before the bubble ends: the failure is
		// the assertion's, not a report of goroutines left blocked.
		defer func() { unblock(); shutdown(); <-stopped }()
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 1 || p.InUse() != 1 {
			t.Fatalf("task started %d, permits in use %d", f.ran(), p.InUse())
		}
		shutdown()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Shutdown returned while a task's blocking work still ran")
		default:
		}
		if p.InUse() != 1 || p.TryAcquire() {
			t.Fatal("the permit was returned before the blocking work drained")
		}
		unblock()
		<-stopped
		if p.InUse() != 0 {
			t.Fatal("the permit was not returned after the task drained")
		}
	})
}

// TestS02_ShutdownSignalsBPCancellationBeforeJoining: a running BP pass
// that only stops when cancelled is cancelled first, then joined; joining
// first would wait forever: once Shutdown is blocked for good, the task's
// context must already be cancelled.
func TestS02_ShutdownSignalsBPCancellationBeforeJoining(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPermits(1)
		o := New(Config{Threads: 1, ScanInterval: time.Hour}, p)
		segs := []metadata.Segment{seg(1, 100, 0)} // a first BP pass is due
		f := newFakeTarget(segs...)
		started := make(chan context.Context, 1)
		f.runCtx = func(ctx context.Context, task Task) error {
			if task.Kind != "reorder" {
				t.Errorf("task %+v", task)
			}
			started <- ctx
			<-ctx.Done() // BP stops only between units, on cancellation
			return ctx.Err()
		}
		o.Scan([]Target{f})
		ctx := <-started
		shut := make(chan struct{})
		go func() { o.Shutdown(); close(shut) }()
		synctest.Wait() // Shutdown returned, or blocks for good
		if ctx.Err() == nil {
			// Unblock the join, so that the failure is this assertion and
			// not the bubble's deadlock report.
			o.cancelTasks()
			<-shut
			t.Fatal("Shutdown joined the BP task without cancelling it")
		}
		<-shut
		if p.InUse() != 0 || o.Running() != 0 {
			t.Fatal("Shutdown returned before the task drained")
		}
	})
}

// TestQ09_OptimizerBacksOffFromThePassCompletion: a failed pass that ran
// longer than the scan interval backs its source off from the moment it
// completed, not from its start: a scan right after the completion does
// not restart it, the optimizer's own wake-up falls at completion + 30 s
// (its default minimum), and the pass runs again only then.
func TestQ09_OptimizerBacksOffFromThePassCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := New(Config{Threads: 1, ScanInterval: time.Minute, CompletionCooldown: -1}, NewPermits(1))
		defer o.Shutdown()
		f := newFakeTarget()
		f.run = func(Task) error {
			time.Sleep(10 * time.Minute) // longer than the scan interval
			return errors.New("merge failed")
		}
		o.Scan([]Target{f})
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		completed := time.Now()
		if f.ran() != 1 || o.Running() != 0 {
			t.Fatalf("setup: ran %d, running %d", f.ran(), o.Running())
		}
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 1 {
			t.Fatal("a failed pass restarted right after it completed: backoff measured from its start")
		}
		if d := o.nextScan(time.Now()); d != 30*time.Second {
			t.Fatalf("next wake-up in %v, want 30s after the completion", d)
		}
		time.Sleep(29 * time.Second)
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 1 {
			t.Fatalf("eligible again %v after the completion", time.Since(completed))
		}
		time.Sleep(time.Second)
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 2 {
			t.Fatal("not eligible 30 s after the completion")
		}
	})
}

// TestQ07_OptimizerDefaultsBackOffFrom30sTo30m: with no configuration the
// optimizer's backoff starts at 30 s, doubles per consecutive failure and
// stops at 30 min.
func TestQ07_OptimizerDefaultsBackOffFrom30sTo30m(t *testing.T) {
	o := New(Config{}, NewPermits(1))
	b := o.Backoff("articles")
	now := time.Unix(1000, 0)
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute,
		16 * time.Minute, 30 * time.Minute, 30 * time.Minute}
	for i, w := range want {
		if d := b.Failed([]segid.ID{1}, now); d != w {
			t.Fatalf("default backoff after failure %d: %v, want %v", i+1, d, w)
		}
	}
}
