package index

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// The C05 tests below fill a worker's buffer (WorkerBufferBytes: 1, every
// batch a worker receives is flushed into a prepared segment at once), so
// that a generation owns buffer-full outputs besides its commit flush.

// failSegmentCreate fails, once armed, the creation of a segment file.
type failSegmentCreate struct{ armed atomic.Bool }

func (f *failSegmentCreate) MaybeError(op errorfs.Op) error {
	if f.armed.Load() && op.Kind == errorfs.OpCreate && strings.Contains(op.Path, "/seg_") {
		return errorfs.ErrInjected
	}
	return nil
}
func (f *failSegmentCreate) String() string { return "failSegmentCreate" }

// oneEarlyFlush adds one batch (64 documents, one task) for worker 0 of
// an index whose every batch is flushed at once (WorkerBufferBytes 1), and
// waits for that buffer-full flush.
func oneEarlyFlush(t *testing.T, idx *Index) {
	t.Helper()
	if err := idx.Add(docs(t, 0, 64, 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "worker 0's buffer-full flush", func() bool { return earlyFlushes(idx) == 1 })
}

// failGeneration arms inj and adds the next batch, whose flush (worker 1)
// fails the generation; it returns once ingestion into the generation is
// refused.
func failGeneration(t *testing.T, idx *Index, inj *failSegmentCreate) {
	t.Helper()
	inj.armed.Store(true)
	if err := idx.Add(docs(t, 64, 128, 1)); err != nil { // worker 1: its flush fails
		t.Fatal(err)
	}
	waitFor(t, "the generation's failure", func() bool { return currentGen(idx).failure() != nil })
	if err := idx.Add(docs(t, 128, 129, 1)); !errors.Is(err, ErrGenerationFailed) {
		t.Fatalf("ingestion into a failed generation: %v", err)
	}
}

// TestC05_FailedGenerationAbandonsEarlyFlushes: a worker flushed its full
// buffer; then another worker's flush fails, which fails the generation.
// The first worker's output is abandoned through tracked cleanup as the
// generation fails: its files are gone and its claim released, not kept
// until the next commit, a close or the sweep of the next open. Nothing
// accepted is lost: the next commit rebuilds and publishes it all.
func TestC05_FailedGenerationAbandonsEarlyFlushes(t *testing.T) {
	inj := &failSegmentCreate{}
	fs := errorfs.Wrap(vfs.NewMem(), inj)
	opts := testOptions()
	opts.WorkerBufferBytes = 1
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	// One batch (64 documents, one task) per worker, round robin.
	oneEarlyFlush(t, idx)
	if n := len(segFiles(t, fs)); n != 1 || idx.Manager().ActiveOperations() != 1 {
		t.Fatalf("after one buffer-full flush: %d segment ids on disk, %d claims", n, idx.Manager().ActiveOperations())
	}
	failGeneration(t, idx, inj)
	if files := segFiles(t, fs); len(files) != 0 {
		t.Fatalf("a failed generation kept its buffer-full outputs: %v", files)
	}
	if n := idx.Manager().ActiveOperations(); n != 0 {
		t.Fatalf("a failed generation kept %d claims", n)
	}
	inj.armed.Store(false)
	if _, err := idx.Commit(context.Background()); !errors.Is(err, ErrGenerationFailed) {
		t.Fatalf("commit of the failed generation: %v", err)
	}
	if res := mustCommit(t, idx); res.Documents != 128 {
		t.Fatalf("the retried commit published %d documents, want 128", res.Documents)
	}
	checkOwned(t, fs, idx)
}

// TestC05_FailedCommitFlushAbandonsEarlyFlushes: the generation holds
// buffer-full outputs when a worker panics in the commit's flush; the
// failed commit leaves no output file and no claim behind.
func TestC05_FailedCommitFlushAbandonsEarlyFlushes(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions()
	opts.WorkerBufferBytes = 1
	var once sync.Once
	fired := false
	opts.Hooks.BeforeWorkerFlush = func(worker int) {
		if worker == 1 {
			once.Do(func() { fired = true; panic("injected build panic") })
		}
	}
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	for i := 0; i < 4; i++ { // four batches, two per worker
		if err := idx.Add(docs(t, i*64, (i+1)*64, 1)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the buffer-full flushes", func() bool { return earlyFlushes(idx) == 4 })
	early := segFiles(t, fs)
	if len(early) != 4 {
		t.Fatalf("buffer-full outputs before the commit: %v, want 4 segments", early)
	}
	_, err = idx.Commit(context.Background())
	if !fired || !errors.Is(err, ErrGenerationFailed) {
		t.Fatalf("commit with a panicking worker: fired=%v err=%v", fired, err)
	}
	if got := len(visible(t, idx)); got != 0 {
		t.Fatalf("a failed generation published %d docs", got)
	}
	// The failed generation's operations are queued again at once to the
	// next generation, whose own buffer-full flushes (a 1-byte buffer) may
	// already have written new segments: only the failed generation's
	// outputs must be gone, files and claims.
	now := segFiles(t, fs)
	for id := range early {
		if _, kept := now[id]; kept {
			t.Fatalf("a failed commit kept the generation's buffer-full output %v: %v", id, now)
		}
		if o := idx.Manager().OwnersOf(id); o.Owned() {
			t.Fatalf("a failed commit kept the claim of its buffer-full output %v: %+v", id, o)
		}
	}
	if res := mustCommit(t, idx); res.Documents != 256 {
		t.Fatalf("the retried commit published %d documents, want 256", res.Documents)
	}
	checkOwned(t, fs, idx)
}

// TestC05_OutputSyncFailureAbandonsEarlyFlushes: the commit point's sync
// round fails on a buffer-full output (C05 path of a failed output
// fsync): every output of the generation is abandoned, none kept.
func TestC05_OutputSyncFailureAbandonsEarlyFlushes(t *testing.T) {
	inj := &failOutputSync{}
	fs := errorfs.Wrap(vfs.NewMem(), inj)
	opts := testOptions()
	opts.WorkerBufferBytes = 1
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	for i := 0; i < 2; i++ {
		if err := idx.Add(docs(t, i*64, (i+1)*64, 1)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the buffer-full flushes", func() bool { return earlyFlushes(idx) == 2 })
	early := segFiles(t, fs)
	if len(early) != 2 {
		t.Fatalf("buffer-full outputs before the commit: %v, want 2 segments", early)
	}
	inj.mu.Lock()
	inj.armed = true
	inj.mu.Unlock()
	if _, err := idx.Commit(context.Background()); !errors.Is(err, ErrGenerationFailed) {
		t.Fatalf("commit with a failed output fsync: %v, want ErrGenerationFailed", err)
	}
	if inj.failed == 0 {
		t.Fatal("no output fsync was attempted")
	}
	// The failed generation's operations are queued again at once to the
	// next generation, whose own buffer-full flushes may already have
	// written new segments: only the failed generation's outputs must be
	// gone, files and claims.
	now := segFiles(t, fs)
	for id := range early {
		if _, kept := now[id]; kept {
			t.Fatalf("a failed output sync kept the generation's buffer-full outputs: %v", now)
		}
		if o := idx.Manager().OwnersOf(id); o.Owned() {
			t.Fatalf("a failed output sync kept the claim of buffer-full output %v: %+v", id, o)
		}
	}
	if res := mustCommit(t, idx); res.Documents != 128 {
		t.Fatalf("the retried commit published %d documents, want 128", res.Documents)
	}
	checkOwned(t, fs, idx)
}

// currentGen returns the generation accepting operations.
func currentGen(idx *Index) *generation {
	idx.w.mu.Lock()
	defer idx.w.mu.Unlock()
	return idx.w.mu.gen
}

// earlyFlushes counts the current generation's buffer-full outputs.
func earlyFlushes(idx *Index) int {
	gen := currentGen(idx)
	gen.mu.Lock()
	defer gen.mu.Unlock()
	return len(gen.mu.prepared)
}

// waitFor polls cond for up to 10 seconds (the workers run on their own).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
