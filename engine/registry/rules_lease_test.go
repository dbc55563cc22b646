package registry

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestD04_MarkerCheckedBeforeTheLease: a create or delete of a name whose
// deletion holds the lease answers at once from the marker, without
// waiting for the lease (here: with a context already cancelled, a wait
// would end in the context's error).
func TestD04_MarkerCheckedBeforeTheLease(t *testing.T) {
	r := openTest(t, vfs.NewMem(), Options{})
	defer r.Close(context.Background())
	h := mustCreate(t, r, "articles") // keeps the deletion at step 3, lease held
	release := sync.OnceFunc(h.Release)
	defer release() // before Close, which waits for the deletion
	if err := r.Delete(context.Background(), "articles"); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Create(cancelled, "articles", testSchema); !errors.Is(err, ErrIndexDeleting) {
		t.Fatalf("create during deletion: %v, want ErrIndexDeleting without waiting for the lease", err)
	}
	if err := r.Delete(cancelled, "articles"); err != nil {
		t.Fatalf("second delete during deletion: %v, want nil without waiting for the lease", err)
	}
	release()
	if err := r.WaitDeleted(context.Background(), "articles"); err != nil {
		t.Fatal(err)
	}
}

// TestD04_MarkerCheckedAgainAfterTheLease: a create or delete that passed
// the first check and then waited for the lease while a deletion wrote its
// marker sees the marker after acquiring the lease: the create reports
// ErrIndexDeleting (not "exists"), the delete starts no second deletion.
func TestD04_MarkerCheckedAgainAfterTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := vfs.NewMem()
		r := openTest(t, fs, Options{})
		defer r.Close(context.Background())
		mustCreate(t, r, "articles").Release()
		r.mu.Lock()
		e := r.mu.entries["articles"]
		r.mu.Unlock()

		for _, op := range []struct {
			name string
			run  func() error
			want func(error) bool
		}{
			{"create", func() error { _, err := r.Create(context.Background(), "articles", testSchema); return err },
				func(err error) bool { return errors.Is(err, ErrIndexDeleting) }},
			{"delete", func() error { return r.Delete(context.Background(), "articles") },
				func(err error) bool { return err == nil }},
		} {
			// A deletion holds the lease; the operation passes the first
			// check and waits for it.
			if err := e.acquireLease(context.Background()); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- op.run() }()
			synctest.Wait()
			e.deleting.Store(true) // the deletion's marker is written
			e.releaseLease()
			if err := <-done; !op.want(err) {
				t.Fatalf("%s that waited for the lease while the marker was written: %v", op.name, err)
			}
			synctest.Wait()
			if !exists(fs, fs.PathJoin("data", "articles")) {
				t.Fatalf("%s started a deletion of its own", op.name)
			}
			e.deleting.Store(false)
		}
	})
}

// TestD02_DeletionOutlivesItsCancelledRequest: once Delete returned (the
// marker exists) the deletion goes on without the request: cancelled while
// the deletion still waits for an issued handle (step 3), it finishes when
// the handle is released, and the directory is gone.
func TestD02_DeletionOutlivesItsCancelledRequest(t *testing.T) {
	fs := vfs.NewMem()
	r := openTest(t, fs, Options{})
	defer r.Close(context.Background())
	h := mustCreate(t, r, "articles")
	release := sync.OnceFunc(h.Release)
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	// Delete returns once the marker exists, while the handle is still
	// issued: a deletion run inside the request would wait for it here.
	errc := make(chan error, 1)
	go func() { errc <- r.Delete(ctx, "articles") }()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		release()
		t.Fatal("Delete did not return while a handle was issued: the deletion runs inside the request")
	}
	if !exists(fs, fs.PathJoin("data", "articles", DeletingMarker)) {
		t.Fatal("Delete returned before its marker existed")
	}
	cancel() // the deletion is at step 3: h is still issued
	release()
	if err := r.WaitDeleted(context.Background(), "articles"); err != nil {
		t.Fatal(err)
	}
	if exists(fs, fs.PathJoin("data", "articles")) {
		t.Fatal("the deletion stopped with its cancelled request: the directory is still there")
	}
}
