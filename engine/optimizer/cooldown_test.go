package optimizer

import (
	"context"
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
func (f *fakeTarget) Run(_ context.Context, t Task) error {
	f.mu.Lock()
	f.tasks = append(f.tasks, t)
	run := f.run
	f.mu.Unlock()
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
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 1 || p.InUse() != 1 {
			t.Fatalf("task started %d, permits in use %d", f.ran(), p.InUse())
		}
		stopped := make(chan struct{})
		go func() { o.Shutdown(); close(stopped) }()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Shutdown returned while a task's blocking work still ran")
		default:
		}
		if p.InUse() != 1 || p.TryAcquire() {
			t.Fatal("the permit was returned before the blocking work drained")
		}
		close(release)
		<-stopped
		if p.InUse() != 0 {
			t.Fatal("the permit was not returned after the task drained")
		}
	})
}
