package index

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// gateWrites blocks the first write of a seg_ file after it is armed,
// until released: a worker busy on a slow disk.
type gateWrites struct {
	mu      sync.Mutex
	armed   bool
	reached chan struct{}
	release chan struct{}
}

func (g *gateWrites) MaybeError(op errorfs.Op) error {
	if op.Kind != errorfs.OpFileWrite || !strings.Contains(op.Path, "seg_") {
		return nil
	}
	g.mu.Lock()
	armed := g.armed
	g.armed = false
	g.mu.Unlock()
	if armed {
		close(g.reached)
		<-g.release
	}
	return nil
}

func (g *gateWrites) String() string { return "gateWrites" }

// writerMuFree reports whether w.mu can be taken right now.
func writerMuFree(w *writer) bool {
	if !w.mu.TryLock() {
		return false
	}
	w.mu.Unlock()
	return true
}

// TestC10_WriterLockNotHeldAcrossABlockingQueueSend: when a worker is
// stuck on the disk and its queue is full, the next Add waits for the
// queue, but without w.mu: status calls, other admissions and the
// backpressure answer never wait for a worker.
func TestC10_WriterLockNotHeldAcrossABlockingQueueSend(t *testing.T) {
	g := &gateWrites{reached: make(chan struct{}), release: make(chan struct{})}
	fs := errorfs.Wrap(vfs.NewMem(), g)
	opts := testOptions()
	opts.IndexingWorkers = 1
	opts.WorkerBufferBytes = 1 // every task flushes a segment
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	all := docs(t, 0, 70, 1)
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
	if err := idx.Add(all[0:1]); err != nil {
		t.Fatal(err)
	}
	<-g.reached // the worker is stuck writing; its queue drains no more
	for i := 1; i <= cap(idx.w.workers[0].queue); i++ {
		if err := idx.Add(all[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	blocked := make(chan error, 1)
	go func() { blocked <- idx.Add(all[65:66]) }()
	eventually(t, "the blocked Add to be admitted without holding w.mu", func() bool {
		if !idx.w.mu.TryLock() {
			return false
		}
		defer idx.w.mu.Unlock()
		return idx.w.mu.gen.ops == 66
	})
	// Ingestion and status go on while the send waits for the worker.
	if n := idx.UncommittedDocuments(); n != 66 {
		t.Fatalf("uncommitted %d", n)
	}
	if !writerMuFree(idx.w) {
		t.Fatal("w.mu held while a batch waits for a worker's queue")
	}
	close(g.release)
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(all[66:70]); err != nil {
		t.Fatal(err)
	}
	if res := mustCommit(t, idx); res.Documents != 70 {
		t.Fatalf("committed %d documents, want 70: a task reached its worker after the flush", res.Documents)
	}
	mustClose(t, idx)
}

// TestC10_WriterLockNotHeldAcrossAPrimaryKeyLookup: Delete looks the key
// up in every committed segment without w.mu; the result is the committed
// state, and a generation change meanwhile makes it look again.
func TestC10_WriterLockNotHeldAcrossAPrimaryKeyLookup(t *testing.T) {
	reached, release := make(chan struct{}, 1), make(chan struct{})
	var armed sync.Once
	opts := testOptions()
	block := false
	opts.Hooks.DuringPrimaryKeyLookup = func(pk string) {
		if pk == "p0003" && block {
			armed.Do(func() { reached <- struct{}{}; <-release })
		}
	}
	fs := vfs.NewMem()
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 10, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	block = true
	type res struct {
		existed bool
		err     error
	}
	done := make(chan res, 1)
	go func() { e, err := idx.Delete("p0003"); done <- res{e, err} }()
	<-reached
	free := writerMuFree(idx.w)
	if free {
		if err := idx.Add(docs(t, 10, 12, 1)); err != nil {
			t.Fatalf("ingestion during a lookup: %v", err)
		}
	}
	close(release)
	r := <-done
	if !free {
		t.Fatal("w.mu held across the primary-key lookup")
	}
	if r.err != nil || !r.existed {
		t.Fatalf("delete of a committed key: existed=%v err=%v", r.existed, r.err)
	}
	mustCommit(t, idx)
	vis := visible(t, idx)
	if _, ok := vis["p0003"]; ok || len(vis) != 11 {
		t.Fatalf("after the delete: %d visible, p0003 visible=%v", len(vis), ok)
	}
}

// TestC10_DeleteLookupRacingACommitLooksAgain: a key committed while
// Delete looked it up in the previous generation is found.
func TestC10_DeleteLookupRacingACommitLooksAgain(t *testing.T) {
	reached, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	opts := testOptions()
	opts.Hooks.DuringPrimaryKeyLookup = func(pk string) {
		once.Do(func() { reached <- struct{}{}; <-release })
	}
	idx, err := Create(vfs.NewMem(), testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	type res struct {
		existed bool
		err     error
	}
	done := make(chan res, 1)
	go func() { e, err := idx.Delete("p0005"); done <- res{e, err} }()
	<-reached // looked up in an empty index
	if err := idx.Add(docs(t, 0, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(release)
	r := <-done
	if r.err != nil || !r.existed {
		t.Fatalf("delete racing the commit of its key: existed=%v err=%v", r.existed, r.err)
	}
	mustCommit(t, idx)
	if _, ok := visible(t, idx)["p0005"]; ok {
		t.Fatal("the delete was lost")
	}
}

// TestC10_DeleteLookupAcrossTheSealIsRefused: a Delete whose committed
// lookup started before a commit sealed the generation, and ended while
// that commit's finalizer runs, is refused with backpressure: it is not
// recorded into the sealed generation, whose publication would lose it.
func TestC10_DeleteLookupAcrossTheSealIsRefused(t *testing.T) {
	looking, lookupRelease := make(chan struct{}, 1), make(chan struct{})
	var armed atomic.Bool
	opts := testOptions()
	opts.Hooks.DuringPrimaryKeyLookup = func(pk string) {
		if pk == "p0003" && armed.CompareAndSwap(true, false) {
			looking <- struct{}{}
			<-lookupRelease
		}
	}
	idx, err := Create(vfs.NewMem(), testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 10, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	hooks, reached, release := blockingPublish()
	idx.opts.Hooks.BeforePublish = hooks.BeforePublish
	var unblockOnce sync.Once
	unblock := func() { unblockOnce.Do(func() { close(release) }) }
	defer unblock()
	if err := idx.Add(docs(t, 10, 12, 1)); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	deleted := make(chan error, 1)
	go func() { _, err := idx.Delete("p0003"); deleted <- err }()
	<-looking // the lookup runs, without w.mu, in the open generation
	committed := make(chan error, 1)
	go func() { _, err := idx.Commit(context.Background()); committed <- err }()
	<-reached // sealed; the finalizer runs
	close(lookupRelease)
	err = <-deleted
	unblock()
	if cerr := <-committed; cerr != nil {
		t.Fatal(cerr)
	}
	if !errors.Is(err, ErrBackpressure) {
		t.Fatalf("Delete whose lookup ended during the finalizer: %v, want backpressure", err)
	}
	idx.opts.Hooks.BeforePublish = nil
	mustCommit(t, idx)
	if _, ok := visible(t, idx)["p0003"]; !ok {
		t.Fatal("a refused delete was applied")
	}
}
