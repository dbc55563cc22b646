package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

// reorderDocs returns documents [from, to) of the reorder schema.
func reorderDocs(t *testing.T, from, to int) []*schema.Document {
	t.Helper()
	ps := corpustest.Paragraphs(t)
	var out []*schema.Document
	for i := from; i < to; i++ {
		d, err := reorderSchema.ParseDocument([]byte(fmt.Sprintf(`{"id":"p%04d","body":%q}`, i, ps[i%len(ps)])))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// createWith creates index name with schema s and returns a handle.
func createWith(t *testing.T, r *Registry, name string, s *schema.Schema) *Handle {
	t.Helper()
	if _, err := r.Create(context.Background(), name, s); err != nil {
		t.Fatal(err)
	}
	h, err := r.Acquire(name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// blockRewrite returns index hooks that block the first rewrite of kind
// at its publication until release is called.
func blockRewrite(kind string) (index.Hooks, chan struct{}, func()) {
	reached, release := make(chan struct{}), make(chan struct{})
	var once, rel sync.Once
	return index.Hooks{BeforeRewritePublish: func(k string) {
		if k == kind {
			once.Do(func() { close(reached); <-release })
		}
	}}, reached, func() { rel.Do(func() { close(release) }) }
}

// TestD05_ManualReorderCommitsThenReleasesTheWriterBeforeWaiting: with
// every maintenance permit taken, a manual reorder first commits what was
// admitted and then waits for capacity without the writer: other commits
// go on meanwhile, and cancelling the wait starts no reorder.
func TestD05_ManualReorderCommitsThenReleasesTheWriterBeforeWaiting(t *testing.T) {
	r := openTest(t, vfs.NewMem(), Options{})
	defer r.Close(context.Background())
	h := createWith(t, r, "articles", reorderSchema)
	defer h.Release()
	if err := r.permits.Acquire(context.Background()); err != nil { // all capacity taken
		t.Fatal(err)
	}
	if err := h.Add(context.Background(), reorderDocs(t, 0, 50)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := h.Reorder(ctx); done <- err }()
	waitFor(t, "the reorder's commit", func() bool {
		st := h.Status()
		return st.Documents == 50 && st.UncommittedDocuments == 0
	})
	// The writer is free while the reorder waits for a permit.
	if err := h.Add(context.Background(), reorderDocs(t, 50, 60)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Commit(context.Background()); err != nil {
		t.Fatalf("a commit while the reorder waits for capacity: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("the reorder ran without a permit: %v", err)
	default:
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	r.permits.Release()
	for _, s := range h.Status().Segments {
		idx, _ := h.Index()
		for _, m := range idx.Metadata().Segments {
			if m.ID == s.ID && (m.BPConverged || m.BPUnconvergedPasses > 0) {
				t.Fatal("a reorder whose admission was cancelled ran")
			}
		}
	}
}

// TestM06_ForceMergeAdmissionCancellableThenOwnedThroughRefresh: a merge
// waiting for maintenance capacity stops when its client cancels, having
// started nothing; once admitted, a cancelled client no longer stops it:
// the owned task keeps its permit (M04) and its handle until the
// replacement is published and the readers refreshed.
func TestM06_ForceMergeAdmissionCancellableThenOwnedThroughRefresh(t *testing.T) {
	hooks, reached, release := blockRewrite("merge")
	r := openTest(t, vfs.NewMem(), Options{Index: index.Options{Hooks: hooks}})
	defer r.Close(context.Background())
	defer release() // before Close, or a failed check leaves Close waiting
	h := mustCreate(t, r, "articles")
	defer h.Release()
	for i := 0; i < 3; i++ {
		if err := h.Add(context.Background(), docs(t, i*20, i*20+20)); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	segs := len(h.Status().Segments)
	// Admission: cancellable, starts nothing.
	if err := r.permits.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := h.Merge(ctx, 1); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("merge cancelled while waiting for capacity: %v", err)
	}
	r.permits.Release()
	if r.permits.InUse() != 0 || len(h.Status().Segments) != segs {
		t.Fatal("a merge whose admission was cancelled started")
	}
	// Admitted: the client's cancellation stops only its wait.
	ctx, cancel = context.WithCancel(context.Background())
	go func() { _, err := h.Merge(ctx, 1); done <- err }()
	<-reached
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled client of an admitted merge: %v", err)
	}
	if r.permits.InUse() != 1 {
		t.Fatal("M04: the admitted merge gave its permit back before its blocking work drained")
	}
	release()
	waitFor(t, "the owned merge to publish", func() bool { return r.permits.InUse() == 0 })
	st := h.Status()
	if len(st.Segments) != 1 || st.Documents != 60 {
		t.Fatalf("after the owned merge: %d segments, %d documents", len(st.Segments), st.Documents)
	}
	idx, err := h.Index()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := idx.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if len(snap.Segments) != 1 || snap.Documents() != 60 {
		t.Fatal("the readers were not refreshed with the merge")
	}
}

// TestS04_UpsertAndDeletePublicationNeverWaitsForMaintenanceCapacity: a
// reorder of another index holds every maintenance permit (the bounded
// BP capacity) and is stuck; an index's upserts and deletes still publish:
// their primary-key and visibility scans run in the commit task, never on
// the maintenance pool.
func TestS04_UpsertAndDeletePublicationNeverWaitsForMaintenanceCapacity(t *testing.T) {
	hooks, reached, release := blockRewrite("reorder")
	r := openTest(t, vfs.NewMem(), Options{Index: index.Options{Hooks: hooks}})
	defer r.Close(context.Background())
	defer release() // before Close, or a failed check leaves Close waiting
	busy := createWith(t, r, "busy", reorderSchema)
	defer busy.Release()
	if err := busy.Add(context.Background(), reorderDocs(t, 0, 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := busy.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = busy.Reorder(context.Background()) }()
	<-reached
	if r.permits.TryAcquire() {
		t.Fatal("setup: maintenance capacity left")
	}
	h := mustCreate(t, r, "articles")
	defer h.Release()
	// A commit that waited for capacity would wait for the stuck reorder:
	// the deadline turns that into a failure instead of a hung test.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.Add(context.Background(), docs(t, 0, 40)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Add(context.Background(), docs(t, 0, 10)); err != nil { // upserts
		t.Fatal(err)
	}
	for i := 10; i < 20; i++ {
		if _, err := h.Delete(context.Background(), fmt.Sprintf("p%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Commit(ctx); err != nil {
		t.Fatalf("upsert/delete publication while maintenance capacity is exhausted: %v", err)
	}
	if st := h.Status(); st.Documents != 30 {
		t.Fatalf("after upserts and deletes: %d documents, want 30", st.Documents)
	}
	release()
}
