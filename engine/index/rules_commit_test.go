package index

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/metadata"
)

func TestC01_MetadataMutationsSerialized(t *testing.T) {
	_, idx := createMem(t)
	defer mustClose(t, idx)
	all := docs(t, 0, 80, 1)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < len(all); i += 4 {
				for {
					err := idx.Add(all[i : i+1])
					if err == nil {
						break
					}
					if !errors.Is(err, ErrBackpressure) {
						t.Error(err)
						return
					}
					<-idx.Idle()
				}
				if i%10 == 0 {
					if _, err := idx.Commit(context.Background()); err != nil {
						t.Error(err)
					}
				}
			}
		}(g)
	}
	wg.Wait()
	res := mustCommit(t, idx)
	if got := len(visible(t, idx)); got != len(all) || res.Documents != uint64(len(all)) {
		t.Fatalf("visible %d, committed %d, want %d", got, res.Documents, len(all))
	}
	meta := idx.Metadata()
	if meta.Generation != res.Generation {
		t.Fatalf("metadata generation %d, commit said %d", meta.Generation, res.Generation)
	}
}

// opTrace records the filesystem operations touching metadata.
type opTrace struct {
	mu  sync.Mutex
	ops []string
}

func (o *opTrace) MaybeError(op errorfs.Op) error {
	if strings.Contains(op.Path, "metadata") || strings.HasSuffix(op.Path, testDir) || op.Kind == errorfs.OpRename {
		o.mu.Lock()
		o.ops = append(o.ops, fmt.Sprintf("%s %s", opName(op.Kind), op.Path))
		o.mu.Unlock()
	}
	return nil
}
func (o *opTrace) String() string { return "trace" }

func TestC02_CommitPointIsTmpFsyncRenameDirSync(t *testing.T) {
	mem := vfs.NewMem()
	trace := &opTrace{}
	fs := errorfs.Wrap(mem, trace)
	idx, err := Create(fs, testDir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 5, 1)); err != nil {
		t.Fatal(err)
	}
	trace.mu.Lock()
	trace.ops = nil
	trace.mu.Unlock()
	mustCommit(t, idx)
	// Segment writes come first; the commit point starts at the tmp file.
	ops := trace.ops
	for len(ops) > 0 && !strings.HasPrefix(ops[0], "Create data/articles/metadata.json.tmp") {
		ops = ops[1:]
	}
	got := strings.Join(ops, "\n")
	want := strings.Join([]string{
		"Create data/articles/metadata.json.tmp",
		"Write data/articles/metadata.json.tmp",
		"Sync data/articles/metadata.json.tmp",
		"OpenDir data/articles",
		"Sync data/articles",
		"Rename data/articles/metadata.json.tmp",
		"OpenDir data/articles",
		"Sync data/articles",
	}, "\n")
	if got != want {
		t.Fatalf("metadata commit trace:\n%s\nwant:\n%s", got, want)
	}
}

// blockingPublish returns hooks whose BeforePublish blocks until release
// is closed, and a channel signalled when the finalizer reached the hook.
func blockingPublish() (Hooks, chan struct{}, chan struct{}) {
	reached, release := make(chan struct{}, 1), make(chan struct{})
	return Hooks{BeforePublish: func() error {
		select {
		case reached <- struct{}{}:
		default:
		}
		<-release
		return nil
	}}, reached, release
}

func TestC03_CommitCompletesAfterCallerCancelled(t *testing.T) {
	fs := vfs.NewMem()
	hooks, reached, release := blockingPublish()
	opts := testOptions()
	opts.Hooks = hooks
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(docs(t, 0, 20, 1)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := idx.Commit(ctx); errc <- err }()
	<-reached
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter got %v", err)
	}
	close(release)
	<-idx.Idle()
	if got := len(visible(t, idx)); got != 20 {
		t.Fatalf("after a cancelled request the commit published %d docs, want 20", got)
	}
	// Shutdown drains the commit task: it ends once published, so the close
	// gets the writer guard at once (a task that never ended would hold it).
	closeCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := idx.Close(closeCtx); err != nil {
		t.Fatalf("close after the cancelled request's commit: %v", err)
	}
	idx, err = Open(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if got := len(visible(t, idx)); got != 20 {
		t.Fatalf("after reopen %d docs, want 20", got)
	}
}

// failDirSync fails fsync of the index directory itself when armed.
type failDirSync struct {
	armed   bool
	renamed bool
}

// MaybeError fails the first directory fsync after a rename.
func (f *failDirSync) MaybeError(op errorfs.Op) error {
	if !f.armed {
		return nil
	}
	if op.Kind == errorfs.OpRename {
		f.renamed = true
	}
	if f.renamed && op.Kind == errorfs.OpFileSync && op.Path == testDir {
		f.renamed = false
		return errorfs.ErrInjected
	}
	return nil
}
func (f *failDirSync) String() string { return "failDirSync" }

func TestC04_DirSyncFailureIsDegradedNotRollback(t *testing.T) {
	inj := &failDirSync{}
	fs := errorfs.Wrap(vfs.NewMem(), inj)
	idx, err := Create(fs, testDir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 10, 1)); err != nil {
		t.Fatal(err)
	}
	inj.armed = true
	res, err := idx.Commit(context.Background())
	if err != nil {
		t.Fatalf("a post-rename directory fsync failure turned into an error: %v", err)
	}
	if !res.DurabilityDegraded || !idx.Status().DurabilityDegraded {
		t.Fatal("degraded durability not reported")
	}
	if got := len(visible(t, idx)); got != 10 {
		t.Fatalf("visible %d, want 10", got)
	}
	checkOwned(t, fs, idx)
	inj.armed = false
	if err := idx.Add(docs(t, 10, 11, 1)); err != nil {
		t.Fatal(err)
	}
	if res := mustCommit(t, idx); res.DurabilityDegraded || idx.Status().DurabilityDegraded {
		t.Fatal("a later successful directory sync did not restore durability")
	}
	// A commit with nothing to publish reports the current generation's
	// durability, not the opposite.
	if res := mustCommit(t, idx); res.DurabilityDegraded || res.Documents != 11 {
		t.Fatalf("empty commit after a durable one: %+v", res)
	}
}

func TestC05_FlushGenerationAllOrNothing(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions()
	// Worker 1 panics only once worker 0 is past its failure check and
	// writing: the sibling output then always exists and must be abandoned
	// (without the wait, worker 0 usually saw the failure first and wrote
	// nothing, and a commit that leaked sibling outputs still passed).
	var armed, sibling sync.Once
	writing := make(chan struct{})
	fired := false
	opts.Hooks.BeforeWorkerFlush = func(worker int) {
		switch worker {
		case 0:
			sibling.Do(func() { close(writing) })
		case 1:
			armed.Do(func() { <-writing; fired = true; panic("injected build panic") })
		}
	}
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 300, 1)); err != nil { // spans both workers
		t.Fatal(err)
	}
	_, err = idx.Commit(context.Background())
	if !fired || !errors.Is(err, ErrGenerationFailed) {
		t.Fatalf("commit with a panicking worker: fired=%v err=%v", fired, err)
	}
	if got := len(visible(t, idx)); got != 0 {
		t.Fatalf("a failed generation published %d docs", got)
	}
	if n := len(segFiles(t, fs)); n != 0 {
		t.Fatalf("sibling outputs not abandoned: %d segment ids on disk", n)
	}
	if idx.Manager().ActiveOperations() != 0 {
		t.Fatal("claims left behind")
	}
	// Nothing accepted is lost: the failed generation's operations are
	// kept, the writer admits more, and the retried commit publishes all.
	if err := idx.Add(docs(t, 0, 30, 2)); err != nil {
		t.Fatal(err)
	}
	if res := mustCommit(t, idx); res.Documents != 300 {
		t.Fatalf("after the retried commit %d docs, want 300", res.Documents)
	}
	vis := visible(t, idx)
	for _, pk := range []string{"p0000", "p0029"} {
		if !strings.Contains(vis[pk], `"n":2`) {
			t.Fatalf("%s: the later upsert lost to the retried one: %s", pk, vis[pk])
		}
	}
	if !strings.Contains(vis["p0299"], `"n":1`) {
		t.Fatalf("p0299 of the failed generation: %q", vis["p0299"])
	}
	checkOwned(t, fs, idx)
}

func TestC06_FlushTimeoutPausesSameGeneration(t *testing.T) {
	release := make(chan struct{})
	opts := testOptions()
	opts.CommitFlushTimeout = 50 * time.Millisecond
	var once sync.Once
	opts.Hooks.BeforeWorkerFlush = func(worker int) {
		if worker == 0 {
			once.Do(func() { <-release })
		}
	}
	fs := vfs.NewMem()
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	// Unblocked before the close on every path: a failure below must fail
	// the test, not leave the close waiting for the stalled worker.
	var unblockOnce sync.Once
	unblock := func() { unblockOnce.Do(func() { close(release) }) }
	defer unblock()
	if err := idx.Add(docs(t, 0, 300, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.Commit(context.Background()); !errors.Is(err, ErrCommitFlushTimeout) {
		t.Fatalf("commit with a stalled worker: %v", err)
	}
	if err := idx.Add(docs(t, 300, 301, 1)); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("ingestion while paused on the generation: %v", err)
	}
	unblock()
	var res CommitResult
	for {
		res, err = idx.Commit(context.Background())
		if !errors.Is(err, ErrCommitFlushTimeout) {
			break
		}
	}
	if err != nil || res.Documents != 300 {
		t.Fatalf("retried commit: %v, %d docs, want 300", err, res.Documents)
	}
	// The next commit is empty: the late worker reported into its own job,
	// and an empty commit publishes nothing.
	if res2 := mustCommit(t, idx); res2.Documents != 300 || res2.Generation != res.Generation {
		t.Fatalf("next commit %+v", res2)
	}
}

func TestC08_CancelBeforeWriterLockStartsNothing(t *testing.T) {
	hooks, reached, release := blockingPublish()
	opts := testOptions()
	opts.Hooks = hooks
	idx, err := Create(vfs.NewMem(), testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	// Unblocked before the close on every path: a failure below must fail
	// the test, not leave the close waiting on the blocked commit.
	var unblockOnce sync.Once
	unblock := func() { unblockOnce.Do(func() { close(release) }) }
	defer unblock()
	if err := idx.Add(docs(t, 0, 5, 1)); err != nil {
		t.Fatal(err)
	}
	go idx.Commit(context.Background())
	<-reached
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := idx.Commit(ctx); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "not started") {
		t.Fatalf("commit cancelled before the writer lock: %v", err)
	}
	unblock()
	<-idx.Idle()
	if g := idx.Metadata().Generation; g != 1 {
		t.Fatalf("generation %d, want 1: the cancelled commit started something", g)
	}
}

func TestC10_IngestionBackpressureUntilFinalizerEnds(t *testing.T) {
	hooks, reached, release := blockingPublish()
	opts := testOptions()
	opts.Hooks = hooks
	idx, err := Create(vfs.NewMem(), testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	// Unblocked before the close on every path: a failure below must fail
	// the test, not leave the close waiting on the blocked finalizer.
	var unblockOnce sync.Once
	unblock := func() { unblockOnce.Do(func() { close(release) }) }
	defer unblock()
	if err := idx.Add(docs(t, 0, 5, 1)); err != nil {
		t.Fatal(err)
	}
	go idx.Commit(context.Background())
	<-reached
	if err := idx.Add(docs(t, 5, 6, 1)); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("Add during the finalizer: %v", err)
	}
	if _, err := idx.Delete("p0000"); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("Delete during the finalizer: %v", err)
	}
	unblock()
	<-idx.Idle()
	if err := idx.Add(docs(t, 5, 6, 1)); err != nil {
		t.Fatalf("Add after the finalizer: %v", err)
	}
}

func TestC11_PublicationFailureKeepsPreparedForRetry(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions()
	// The client's retry is tested here; the background retry (which would
	// also publish) is tested in rules_held_test.go.
	opts.PublicationRetryMin = time.Hour
	var fail atomic.Bool
	fail.Store(true)
	opts.Hooks.BeforePublish = func() error {
		if fail.Load() {
			return errors.New("injected publication failure")
		}
		return nil
	}
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 40, 1)); err != nil {
		t.Fatal(err)
	}
	_, err = idx.Commit(context.Background())
	if err == nil || !IsRetryable(err) {
		t.Fatalf("publication failure: %v", err)
	}
	before := segFiles(t, fs)
	if len(before) == 0 || idx.Manager().ActiveOperations() == 0 {
		t.Fatal("prepared segments were not kept owned for the retry")
	}
	if err := idx.Add(docs(t, 40, 41, 1)); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("a new generation mixed into the prepared one: %v", err)
	}
	fail.Store(false)
	res := mustCommit(t, idx)
	if res.Documents != 40 {
		t.Fatalf("retry published %d docs, want 40", res.Documents)
	}
	for id := range before {
		if !idx.Manager().OwnersOf(id).Live {
			t.Fatalf("retry did not publish the same prepared segment %s", id)
		}
	}
}

func TestC12_PostRenameFailureStillReportsCommit(t *testing.T) {
	// The only post-rename failure the engine can meet is the directory
	// fsync; the commit is reported, the new generation readable.
	inj := &failDirSync{}
	mem := vfs.NewMem()
	fs := errorfs.Wrap(mem, inj)
	idx, err := Create(fs, testDir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(docs(t, 0, 3, 1)); err != nil {
		t.Fatal(err)
	}
	inj.armed = true
	if _, err := idx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustClose(t, idx)
	m, err := metadata.Load(mem, testDir)
	if err != nil || m.Generation != 1 {
		t.Fatalf("metadata after degraded commit: %v %+v", err, m)
	}
}

// opName names the filesystem operations the traces show.
func opName(k errorfs.OpKind) string {
	switch k {
	case errorfs.OpCreate:
		return "Create"
	case errorfs.OpFileWrite:
		return "Write"
	case errorfs.OpFileSync:
		return "Sync"
	case errorfs.OpFileClose:
		return "Close"
	case errorfs.OpRename:
		return "Rename"
	case errorfs.OpOpenDir:
		return "OpenDir"
	case errorfs.OpOpen:
		return "Open"
	case errorfs.OpRemove:
		return "Remove"
	}
	return fmt.Sprintf("op%d", int(k))
}
