package registry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/optimizer"
)

// issuedHandles returns the number of handles issued on index name.
func issuedHandles(r *Registry, name string) int {
	r.mu.Lock()
	e := r.mu.entries[name]
	r.mu.Unlock()
	if e == nil {
		return 0
	}
	e.hmu.Lock()
	defer e.hmu.Unlock()
	return e.handles
}

// TestD01_OwnedMaintenanceTaskHoldsItsHandleUntilItEnds: a maintenance
// task that outlives its request (a manual merge whose client gave up and
// released its own handle, or a background merge of the optimizer) holds
// a registry handle of its own until it ends. Deletion step 3 therefore
// waits for the task: while it runs, its handle is still issued and the
// directory is there; once it ends, the handle is returned and the
// deletion completes.
func TestD01_OwnedMaintenanceTaskHoldsItsHandleUntilItEnds(t *testing.T) {
	for _, background := range []bool{false, true} {
		name := "manual"
		if background {
			name = "background"
		}
		t.Run(name, func(t *testing.T) {
			hooks, reached, release := blockRewrite("merge")
			opts := Options{Index: index.Options{Hooks: hooks}}
			if background {
				opts.Optimizer = optimizer.Config{Threads: 1, ScanInterval: 10 * time.Millisecond}
			}
			fs := vfs.NewMem()
			r := openTest(t, fs, opts)
			defer r.Close(context.Background())
			defer release() // before Close, or a failed check leaves Close waiting
			h := mustCreate(t, r, "articles")
			released := false
			defer func() {
				if !released {
					h.Release()
				}
			}()
			for i := 0; i < 10; i++ { // enough segments for the merge policy
				if err := h.Add(context.Background(), docs(t, i*5, i*5+5)); err != nil {
					t.Fatal(err)
				}
				if _, err := h.Commit(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if !background {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { _, err := h.Merge(ctx, 1); done <- err }()
				<-reached
				cancel() // the client gives up: the owned task goes on
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled client of an admitted merge: %v", err)
				}
			} else {
				select {
				case <-reached:
				case <-time.After(60 * time.Second):
					t.Fatal("no background merge started")
				}
			}
			// The request's handle goes; the task's stays.
			released = true
			h.Release()
			if err := r.Delete(context.Background(), "articles"); err != nil {
				t.Fatal(err)
			}
			// Deletion refuses new handles now: once a scan in progress
			// returned its targets', what is issued is the task's own.
			waitFor(t, "the optimizer's scan handles", func() bool { return issuedHandles(r, "articles") <= 1 })
			if n := issuedHandles(r, "articles"); n != 1 {
				t.Fatalf("with the maintenance task blocked, %d handles issued, want its own", n)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			err := r.WaitDeleted(ctx, "articles")
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the deletion did not wait for the running maintenance task: %v", err)
			}
			if n := issuedHandles(r, "articles"); n != 1 || !exists(fs, "data/articles") {
				t.Fatalf("while the task runs: %d handles issued, directory there: %v", n, exists(fs, "data/articles"))
			}
			release()
			if err := r.WaitDeleted(context.Background(), "articles"); err != nil {
				t.Fatal(err)
			}
			if exists(fs, "data/articles") {
				t.Fatal("the deletion did not remove the directory once the task ended")
			}
		})
	}
}
