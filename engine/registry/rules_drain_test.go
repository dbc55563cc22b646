package registry

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/index"
)

// TestD03_DeletionMarkerDurableBeforeDeletionGoesOn: the .deleting marker,
// holding the index name, and its directory entry are synced before
// writeMarker returns, so a crash right after it still finds the marker at
// startup and finishes the deletion.
func TestD03_DeletionMarkerDurableBeforeDeletionGoesOn(t *testing.T) {
	mem := vfs.NewCrashableMem()
	if err := mem.MkdirAll("data/articles", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"", "data", "data/articles"} {
		dir, err := mem.OpenDir(d)
		if err != nil {
			t.Fatal(err)
		}
		dir.Sync()
		dir.Close()
	}
	if err := writeMarker(mem, "data/articles"); err != nil {
		t.Fatal(err)
	}
	image := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	f, err := image.Open("data/articles/" + DeletingMarker)
	if err != nil {
		t.Fatalf("the marker did not survive a crash: %v", err)
	}
	defer f.Close()
	b := make([]byte, 64)
	n, _ := f.ReadAt(b, 0)
	if string(b[:n]) != "articles\n" {
		t.Fatalf("marker after a crash holds %q, want the index name", b[:n])
	}
}

// TestS02_DrainWaitsForWritesInFlight: a write admitted before the drain
// started (here a delete blocked in its primary-key lookup) is waited for
// and committed; the drain is not done while it runs.
func TestS02_DrainWaitsForWritesInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reached, release := make(chan struct{}), make(chan struct{})
		var blocked bool
		opts := Options{Index: index.Options{Hooks: index.Hooks{DuringPrimaryKeyLookup: func(string) {
			if !blocked {
				blocked = true
				close(reached)
				<-release
			}
		}}}}
		r := openTest(t, vfs.NewMem(), opts)
		defer r.Close(context.Background())
		h := mustCreate(t, r, "articles")
		defer h.Release()
		if err := h.Add(context.Background(), docs(t, 0, 10)); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		deleted := make(chan error, 1)
		go func() {
			_, err := h.Delete(context.Background(), docs(t, 3, 4)[0].PrimaryKey)
			deleted <- err
		}()
		<-reached
		r.StartDrain()
		synctest.Wait()
		if st := r.DrainStatus(); st.Drained {
			t.Fatalf("drain done while an admitted delete is in flight: %+v", st)
		}
		close(release)
		if err := <-deleted; err != nil {
			t.Fatal(err)
		}
		if err := r.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := h.Status(); st.Documents != 9 || st.UncommittedDocuments != 0 {
			t.Fatalf("after the drain: %d documents, %d uncommitted; want the delete committed", st.Documents, st.UncommittedDocuments)
		}
	})
}

// TestS02_DrainPausesTheOptimizerAndResumeRestartsIt: no maintenance scan
// runs while the registry drains, and Resume brings scans back.
func TestS02_DrainPausesTheOptimizerAndResumeRestartsIt(t *testing.T) {
	r := openTest(t, vfs.NewMem(), Options{})
	defer r.Close(context.Background())
	if err := r.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !r.opt.Paused() {
		t.Fatal("optimizer scans during a drain")
	}
	r.Resume()
	if r.opt.Paused() {
		t.Fatal("optimizer still paused after Resume")
	}
}

// TestS02_DrainStatusCountsARunningCommit: while a commit task runs, the
// drain status counts it as one more active operation than the index's
// own claims.
func TestS02_DrainStatusCountsARunningCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reached, release := make(chan struct{}), make(chan struct{})
		var blocked bool
		opts := Options{Index: index.Options{Hooks: index.Hooks{BeforePublish: func() error {
			if !blocked {
				blocked = true
				close(reached)
				<-release
			}
			return nil
		}}}}
		r := openTest(t, vfs.NewMem(), opts)
		defer r.Close(context.Background())
		h := mustCreate(t, r, "articles")
		defer h.Release()
		if err := h.Add(context.Background(), docs(t, 0, 10)); err != nil {
			t.Fatal(err)
		}
		committed := make(chan error, 1)
		go func() { _, err := h.Commit(context.Background()); committed <- err }()
		<-reached
		if got, own := r.DrainStatus().ActiveOperations, h.Status().ActiveOperations; got != own+1 {
			t.Fatalf("drain status counts %d active operations, the index %d: want one more for the commit", got, own)
		}
		close(release)
		if err := <-committed; err != nil {
			t.Fatal(err)
		}
		if got, own := r.DrainStatus().ActiveOperations, h.Status().ActiveOperations; got != own {
			t.Fatalf("after the commit: %d active operations, the index %d", got, own)
		}
	})
}

// TestS01_DrainIsNotDoneWhileAMergeRuns: a drain with nothing left to
// commit still waits for a running merge to come to rest (it is drained,
// never abandoned), then finishes.
func TestS01_DrainIsNotDoneWhileAMergeRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts, reached, release := blockedMerge()
		r := openTest(t, vfs.NewMem(), opts)
		defer r.Close(context.Background())
		h := mustCreate(t, r, "articles")
		defer h.Release()
		// The merge is let go before the close on every path: a failure
		// below fails this test, not the bubble with a deadlock.
		var once sync.Once
		unblock := func() { once.Do(func() { close(release) }) }
		defer unblock()
		threeCommits(t, h)
		merged := make(chan error, 1)
		go func() { _, err := h.Merge(context.Background(), 1); merged <- err }()
		<-reached
		r.StartDrain()
		synctest.Wait()
		if st := r.DrainStatus(); st.Drained || r.maintenanceRunning() == 0 {
			t.Fatalf("drain done while a merge runs: %+v", st)
		}
		unblock()
		if err := r.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-merged; err != nil {
			t.Fatalf("merge during the drain: %v", err)
		}
		if r.maintenanceRunning() != 0 {
			t.Fatal("drained while maintenance still runs")
		}
	})
}

// failMetadataRename fails, while armed, the rename that publishes an
// index's metadata (so every commit fails before its commit point).
type failMetadataRename struct{ armed atomic.Bool }

func (f *failMetadataRename) String() string { return "failMetadataRename" }

func (f *failMetadataRename) MaybeError(op errorfs.Op) error {
	if f.armed.Load() && op.Kind == errorfs.OpRename && strings.Contains(op.Path, "metadata") {
		return errorfs.ErrInjected
	}
	return nil
}

// TestS02_StaleDrainLoopNeverEndsALaterDrain: a drain whose commit failed
// waits before its next pass; Resume and a new drain meanwhile make that
// loop stale. When it wakes it must stop, not finish the new drain: the
// new drain is not done while a write admitted between Resume and it is
// still in flight (each drain is told apart by its epoch, which StartDrain
// and Resume both move forward).
func TestS02_StaleDrainLoopNeverEndsALaterDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reached, release := make(chan struct{}), make(chan struct{})
		var block atomic.Bool
		opts := Options{Index: index.Options{Hooks: index.Hooks{DuringPrimaryKeyLookup: func(string) {
			if block.CompareAndSwap(true, false) {
				close(reached)
				<-release
			}
		}}}}
		inj := &failMetadataRename{}
		r := openTest(t, errorfs.Wrap(vfs.NewMem(), inj), opts)
		defer r.Close(context.Background())
		h := mustCreate(t, r, "articles")
		defer h.Release()
		if err := h.Add(context.Background(), docs(t, 0, 10)); err != nil {
			t.Fatal(err)
		}
		inj.armed.Store(true)
		r.StartDrain() // the first loop's commit fails: it waits drainRetry
		synctest.Wait()
		if st := r.DrainStatus(); st.Drained || st.LastError == "" {
			t.Fatalf("setup: the first drain's commit did not fail: %+v", st)
		}
		r.Resume()
		inj.armed.Store(false)
		block.Store(true)
		deleted := make(chan error, 1)
		go func() {
			_, err := h.Delete(context.Background(), docs(t, 3, 4)[0].PrimaryKey)
			deleted <- err
		}()
		<-reached // admitted between Resume and the next drain, in flight
		r.StartDrain()
		time.Sleep(3 * drainRetry) // the first loop wakes (the bubble's clock)
		synctest.Wait()
		st := r.DrainStatus()
		close(release) // before any Fatal: Close waits for the delete
		if st.Drained {
			t.Fatalf("the stale drain loop ended the new drain while an admitted delete is in flight: %+v", st)
		}
		if err := <-deleted; err != nil {
			t.Fatal(err)
		}
		if err := r.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := h.Status(); st.Documents != 9 || st.UncommittedDocuments != 0 {
			t.Fatalf("after the drain: %d documents, %d uncommitted; want the ten added and the delete committed", st.Documents, st.UncommittedDocuments)
		}
	})
}
