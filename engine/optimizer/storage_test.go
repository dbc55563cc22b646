package optimizer

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// fakeVolume is the Storage hook of a test: free bytes and full.
type fakeVolume struct {
	mu   sync.Mutex
	free int64
	full bool
}

func (v *fakeVolume) storage() (int64, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.free, v.full
}

func (v *fakeVolume) set(free int64, full bool) {
	v.mu.Lock()
	v.free, v.full = free, full
	v.mu.Unlock()
}

// TestStorageFullPausesMaintenance: while the volume is full, scans start
// no task; a task stopped for space (ErrStorageFull) is reported as
// "storage_full", sets no backoff on its sources, and pauses scans until
// space returns, instead of retrying at every scan.
func TestStorageFullPausesMaintenance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vol := &fakeVolume{free: 10 << 20}
		var stopped atomic.Int64
		o := New(Config{Threads: 1, ScanInterval: time.Hour, CompletionCooldown: -1, Storage: vol.storage,
			OnTask: func(_, outcome string) {
				if outcome == "storage_full" {
					stopped.Add(1)
				}
			}}, NewPermits(1))
		defer o.Shutdown()
		f := newFakeTarget()
		f.run = func(Task) error { return fmt.Errorf("%w: write: no space left on device", ErrStorageFull) }

		vol.set(0, true)
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 0 || !o.StoragePaused() {
			t.Fatalf("a full volume started %d tasks (paused %v)", f.ran(), o.StoragePaused())
		}

		vol.set(10<<20, false)
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 1 || stopped.Load() != 1 {
			t.Fatalf("with space: %d tasks ran, %d stopped for space", f.ran(), stopped.Load())
		}
		for _, id := range f.tasks[0].Sources {
			if o.Backoff(f.Name()).Failures(id) != 0 {
				t.Fatalf("a task stopped for space backed off source %s", id)
			}
		}
		// No retry loop: scans after the stop start nothing while no
		// space returns.
		for i := 0; i < 5; i++ {
			o.Scan([]Target{f})
			synctest.Wait()
		}
		if f.ran() != 1 || !o.StoragePaused() {
			t.Fatalf("scans after a stop for space ran %d tasks (paused %v)", f.ran(), o.StoragePaused())
		}

		// Space returns: the next scan starts the task again.
		f.run = nil
		vol.set(10<<20+spaceRegained, false)
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 2 || o.StoragePaused() {
			t.Fatalf("after space returned: %d tasks ran (paused %v)", f.ran(), o.StoragePaused())
		}
	})
}

// TestStorageProbeAfterAPause: when no space returns (a quota is not in
// the free figure), one task probes the volume again after spaceProbe.
func TestStorageProbeAfterAPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vol := &fakeVolume{free: 10 << 20}
		o := New(Config{Threads: 1, ScanInterval: time.Hour, CompletionCooldown: -1, Storage: vol.storage}, NewPermits(1))
		defer o.Shutdown()
		f := newFakeTarget()
		f.run = func(Task) error { return ErrStorageFull }
		o.Scan([]Target{f})
		synctest.Wait()
		time.Sleep(spaceProbe - time.Second)
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 1 {
			t.Fatalf("before the probe interval: %d tasks", f.ran())
		}
		time.Sleep(time.Second)
		o.Scan([]Target{f})
		synctest.Wait()
		if f.ran() != 2 {
			t.Fatalf("after the probe interval: %d tasks", f.ran())
		}
	})
}
