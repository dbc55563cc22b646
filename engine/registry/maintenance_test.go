package registry

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
)

// blockedMerge returns options whose merges block before publication until
// release is closed, and a channel closed when a merge got there.
func blockedMerge() (Options, chan struct{}, chan struct{}) {
	reached, release := make(chan struct{}), make(chan struct{})
	first := true
	return Options{Index: index.Options{Hooks: index.Hooks{BeforeRewritePublish: func(string) {
		if first {
			first = false
			close(reached)
			<-release
		}
	}}}}, reached, release
}

func threeCommits(t *testing.T, h *Handle) {
	t.Helper()
	for i := 0; i < 3; i++ {
		if err := h.Add(context.Background(), docs(t, i*20, i*20+20)); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestS01_DeletionDrainsRunningMergeInsteadOfAborting(t *testing.T) {
	fs := vfs.NewMem()
	opts, reached, release := blockedMerge()
	r := openTest(t, fs, opts)
	defer r.Close(context.Background())
	h := mustCreate(t, r, "articles")
	threeCommits(t, h)
	merged := make(chan error, 1)
	go func() { _, err := h.Merge(context.Background(), 1); merged <- err }()
	<-reached
	h.Release()
	if err := r.Delete(context.Background(), "articles"); err != nil {
		t.Fatal(err)
	}
	// The merge is blocked inside its blocking work: the deletion must wait
	// for it, not remove the directory under it.
	time.Sleep(50 * time.Millisecond)
	if !exists(fs, "data/articles") {
		t.Fatal("the directory was removed while a merge was still running in it")
	}
	close(release)
	if err := r.WaitDeleted(context.Background(), "articles"); err != nil {
		t.Fatal(err)
	}
	if err := <-merged; err == nil {
		t.Fatal("a merge cancelled by deletion reported success")
	}
	if exists(fs, "data/articles") {
		t.Fatal("deletion did not finish after the merge drained")
	}
	names, _ := fs.List("data")
	for _, n := range names {
		if n != LockFileName {
			t.Fatalf("leftover %s in the data directory", n)
		}
	}
}

func TestS01_ShutdownWaitsForRegisteredMaintenance(t *testing.T) {
	fs := vfs.NewMem()
	opts, reached, release := blockedMerge()
	r := openTest(t, fs, opts)
	h := mustCreate(t, r, "articles")
	threeCommits(t, h)
	merged := make(chan error, 1)
	go func() { _, err := h.Merge(context.Background(), 1); merged <- err }()
	<-reached
	h.Release()
	closed := make(chan error, 1)
	go func() { closed <- r.Close(context.Background()) }()
	select {
	case err := <-closed:
		t.Fatalf("shutdown finished (%v) while a registered merge was blocked", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	<-merged
	// Whatever the merge's outcome, a restart finds every document once
	// and no unowned file.
	r = openTest(t, fs, Options{})
	defer r.Close(context.Background())
	if st := r.Statuses(); len(st) != 1 || st[0].Documents != 60 {
		t.Fatalf("after restart %+v", st)
	}
	h2, _ := r.Acquire("articles")
	defer h2.Release()
	idx, _ := h2.Index()
	if n, err := idx.Sweep(); err != nil || n != 0 {
		t.Fatalf("unowned files after shutdown during a merge: %d %v", n, err)
	}
}
