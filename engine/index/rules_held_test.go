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
	"github.com/summadev/summa/engine/metadata"
)

// The background retry of a held publication (C11): a publication that
// failed before its commit point is published again by the writer itself,
// with exponential backoff, once the fault heals, without any commit.

// failMetadataTmp fails the creation of metadata.json.tmp while armed, as
// a directory that refuses new files would: every publication fails before
// its commit point and nothing else is affected.
type failMetadataTmp struct {
	armed atomic.Bool
	mu    sync.Mutex
	// attempts are the times of every failed creation.
	attempts []time.Time
}

// MaybeError fails the creation of metadata.json.tmp while armed.
func (f *failMetadataTmp) MaybeError(op errorfs.Op) error {
	if op.Kind != errorfs.OpCreate || !strings.HasSuffix(op.Path, metadata.TempFileName) || !f.armed.Load() {
		return nil
	}
	f.mu.Lock()
	f.attempts = append(f.attempts, time.Now())
	f.mu.Unlock()
	return errorfs.ErrInjected
}

func (f *failMetadataTmp) String() string { return "failMetadataTmp" }

// failed returns the times of the failed attempts so far.
func (f *failMetadataTmp) failed() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.attempts...)
}

// heldIndex creates an index on a filesystem whose metadata.json.tmp
// cannot be created, admits 40 documents and fails their commit before the
// commit point.
func heldIndex(t *testing.T, retryMin, retryMax time.Duration) (*vfs.MemFS, *failMetadataTmp, *Index) {
	t.Helper()
	return heldIndexLimited(t, retryMin, retryMax, 0)
}

// heldIndexLimited is heldIndex with a bound on the background retries
// (0: the default).
func heldIndexLimited(t *testing.T, retryMin, retryMax time.Duration, limit int) (*vfs.MemFS, *failMetadataTmp, *Index) {
	t.Helper()
	mem := vfs.NewMem()
	inj := &failMetadataTmp{}
	opts := testOptions()
	opts.PublicationRetryMin, opts.PublicationRetryMax = retryMin, retryMax
	opts.PublicationRetryLimit = limit
	idx, err := Create(errorfs.Wrap(mem, inj), testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(docs(t, 0, 40, 1)); err != nil {
		t.Fatal(err)
	}
	inj.armed.Store(true)
	_, err = idx.Commit(context.Background())
	if !errors.Is(err, ErrPublication) || !IsRetryable(err) {
		t.Fatalf("commit on a directory refusing metadata.json.tmp: %v", err)
	}
	h := idx.Status().HeldPublication
	if h == nil || h.Attempts < 1 || h.LastError == "" || h.Since.IsZero() || h.NextRetry.Before(h.Since) {
		t.Fatalf("status after a failed publication: held %+v", h)
	}
	return mem, inj, idx
}

// eventually polls cond until it holds; the generous bound only keeps a
// broken build from hanging, it is not an assertion on timing.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkNothingPublished checks that the held generation is still owned and
// unpublished: generation 0 on disk and in memory, no document visible, no
// metadata.json.tmp left, every seg_ file owned.
func checkNothingPublished(t *testing.T, mem *vfs.MemFS, idx *Index) {
	t.Helper()
	if m, err := metadata.Load(mem, testDir); err != nil || m.Generation != 0 {
		t.Fatalf("metadata on disk while held: %v, %+v", err, m)
	}
	if st := idx.Status(); st.Generation != 0 || st.Documents != 0 || st.UncommittedDocuments != 40 {
		t.Fatalf("status while held: %+v", st)
	}
	if n := len(visible(t, idx)); n != 0 {
		t.Fatalf("%d documents visible while the publication is held", n)
	}
	if _, err := mem.Stat(mem.PathJoin(testDir, metadata.TempFileName)); err == nil {
		t.Fatal("a failed attempt left metadata.json.tmp behind")
	}
	if idx.Manager().ActiveOperations() == 0 {
		t.Fatal("the held generation's prepared segments are not owned")
	}
	checkOwned(t, mem, idx)
}

func TestC11_HeldPublicationRetriedInBackgroundUntilTheFaultHeals(t *testing.T) {
	const retryMin, retryMax = 2 * time.Millisecond, 32 * time.Millisecond
	mem, inj, idx := heldIndex(t, retryMin, retryMax)
	defer mustClose(t, idx)
	held := idx.Status().HeldPublication
	if err := idx.Add(docs(t, 40, 41, 1)); !errors.Is(err, ErrBackpressure) || !strings.Contains(err.Error(), "retried in the background") {
		t.Fatalf("ingestion while the publication is held: %v", err)
	}

	// While the fault persists the retrier keeps trying, backing off, and
	// publishes nothing.
	const attempts = 7
	eventually(t, "background retries while the fault persists", func() bool {
		h := idx.Status().HeldPublication
		return h != nil && h.Attempts >= attempts
	})
	st := idx.Status()
	if st.HeldPublication == nil || st.HeldPublication.Attempts < attempts || st.HeldPublication.Since != held.Since {
		t.Fatalf("held publication after %d attempts: %+v (first %+v)", attempts, st.HeldPublication, held)
	}
	if int(st.PublicationRetries.Failed) != st.HeldPublication.Attempts-1 || st.PublicationRetries.Succeeded != 0 {
		t.Fatalf("retry counts %+v", st.PublicationRetries)
	}
	if next := st.HeldPublication.NextRetry; next.After(time.Now().Add(retryMax)) {
		t.Fatalf("next retry %v is beyond the maximal backoff %v", next, retryMax)
	}
	// The timer never fires early: the gap after failed attempt k is at
	// least the jittered backoff's lower bound (4/5 of min·2^(k-1), capped).
	times := inj.failed()
	for k := 1; k < attempts; k++ {
		floor := min(retryMin<<(k-1), retryMax) * 4 / 5
		if gap := times[k].Sub(times[k-1]); gap < floor {
			t.Fatalf("retry %d came %v after the previous attempt, before its backoff %v", k, gap, floor)
		}
	}
	checkNothingPublished(t, mem, idx)

	// Heal: the retrier publishes the same generation, once, without a
	// commit; ingestion is admitted again and the status clears.
	inj.armed.Store(false)
	eventually(t, "the background retry to publish", func() bool { return idx.Status().HeldPublication == nil })
	select {
	case <-idx.Idle():
	default:
		t.Fatal("the writer is not idle after the background publication")
	}
	st = idx.Status()
	if st.Generation != 1 || st.Documents != 40 || st.UncommittedDocuments != 0 || st.ActiveOperations != 0 {
		t.Fatalf("after the background publication: %+v", st)
	}
	if st.PublicationRetries.Succeeded != 1 {
		t.Fatalf("retry counts %+v, want one success", st.PublicationRetries)
	}
	if got := len(visible(t, idx)); got != 40 {
		t.Fatalf("%d documents visible, want every accepted one (40)", got)
	}
	checkOwned(t, mem, idx)
	if err := idx.Add(docs(t, 40, 45, 1)); err != nil {
		t.Fatalf("ingestion after the background publication: %v", err)
	}
	if res := mustCommit(t, idx); res.Generation != 2 || res.Documents != 45 {
		t.Fatalf("next commit %+v", res)
	}
	if m, err := metadata.Load(mem, testDir); err != nil || m.Generation != 2 {
		t.Fatalf("metadata on disk: %v, %+v", err, m)
	}
}

func TestC11_CommitDuringBackoffPublishesOnceAndTheRetrierNeverCommitsNewDocuments(t *testing.T) {
	mem, inj, idx := heldIndex(t, time.Hour, time.Hour)
	defer mustClose(t, idx)
	inj.armed.Store(false)
	// A client commit during the backoff does the retry as before.
	res := mustCommit(t, idx)
	if res.Generation != 1 || res.Documents != 40 {
		t.Fatalf("commit during the backoff: %+v", res)
	}
	if st := idx.Status(); st.HeldPublication != nil || st.PublicationRetries != (PublicationRetries{}) {
		t.Fatalf("status after the client's retry: %+v", st)
	}
	// The retrier, woken or due, finds nothing held: it neither publishes
	// again nor seals the documents admitted since (only a commit does).
	if err := idx.Add(docs(t, 40, 45, 1)); err != nil {
		t.Fatal(err)
	}
	idx.w.retrier.wake()
	idx.w.retryHeld()
	st := idx.Status()
	if st.Generation != 1 || st.UncommittedDocuments != 5 || st.PublicationRetries != (PublicationRetries{}) {
		t.Fatalf("the retrier acted with nothing held: %+v", st)
	}
	if m, err := metadata.Load(mem, testDir); err != nil || m.Generation != 1 {
		t.Fatalf("metadata on disk: %v, %+v", err, m)
	}
	if n := len(inj.failed()); n != 1 {
		t.Fatalf("%d failed attempts, want only the first commit's", n)
	}
}

func TestC11_CloseDuringBackoffStopsTheRetry(t *testing.T) {
	mem, inj, idx := heldIndex(t, time.Hour, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := idx.Close(ctx); err != nil {
		t.Fatalf("close during the backoff: %v", err)
	}
	select {
	case <-idx.w.retrier.done:
	default:
		t.Fatal("the retrier goroutine is still running after Close")
	}
	if st := idx.Status(); st.HeldPublication != nil {
		t.Fatalf("held publication reported after close: %+v", st.HeldPublication)
	}
	// The held generation was abandoned through tracked cleanup (D01
	// step 5), nothing was published, and no retry ran.
	if n := len(segFiles(t, mem)); n != 0 {
		t.Fatalf("%d segment ids left on disk after close", n)
	}
	if n := len(inj.failed()); n != 1 {
		t.Fatalf("%d attempts, want only the first commit's", n)
	}
	if m, err := metadata.Load(mem, testDir); err != nil || m.Generation != 0 {
		t.Fatalf("metadata after close: %v, %+v", err, m)
	}
}

func TestC11_CloseWhileTheFaultPersistsStopsRetrying(t *testing.T) {
	// A short backoff: Close may meet the retrier waiting, waiting for the
	// writer guard or publishing; in every case it returns and the loop ends.
	mem, inj, idx := heldIndex(t, time.Millisecond, 2*time.Millisecond)
	eventually(t, "background retries", func() bool { return len(inj.failed()) >= 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := idx.Close(ctx); err != nil {
		t.Fatalf("close while retrying: %v", err)
	}
	<-idx.w.retrier.done
	n := len(inj.failed())
	inj.armed.Store(false)
	if m, err := metadata.Load(mem, testDir); err != nil || m.Generation != 0 {
		t.Fatalf("metadata after close: %v, %+v", err, m)
	}
	if got := len(inj.failed()); got != n {
		t.Fatalf("attempts went on after close: %d, then %d", n, got)
	}
	if n := len(segFiles(t, mem)); n != 0 {
		t.Fatalf("%d segment ids left on disk after close", n)
	}
}

func TestC11_RetryDelayDoublesWithJitterUpToTheMaximum(t *testing.T) {
	const lo, hi = time.Second, time.Minute
	for attempts := 1; attempts <= 12; attempts++ {
		base := min(lo<<(attempts-1), hi)
		for range 200 {
			d := retryDelay(lo, hi, attempts)
			if d > base || d < base*4/5 {
				t.Fatalf("attempt %d: delay %v outside [%v, %v]", attempts, d, base*4/5, base)
			}
		}
	}
	if d := retryDelay(lo, hi, 1000); d > hi {
		t.Fatalf("delay %v beyond the maximum", d)
	}
	// The jitter is there: 200 draws over a second's fifth never all
	// land on the base.
	jittered := false
	for range 200 {
		jittered = jittered || retryDelay(lo, hi, 1) < lo
	}
	if !jittered {
		t.Fatal("no jitter in 200 delays")
	}
	// The smallest jitter range (a fifth of 5ns is 1ns) draws 0 or 1.
	for range 50 {
		if d := retryDelay(5, 5, 1); d < 4 || d > 5 {
			t.Fatalf("delay %v outside [4ns, 5ns]", d)
		}
	}
}

// TestC11_BackgroundRetriesAreBoundedThenOnlyACommitRetries: the spec's
// "not retried indefinitely": past PublicationRetryLimit background
// attempts the generation stays held and owned, no retry is scheduled, and
// a commit after the fault heals still publishes it whole.
func TestC11_BackgroundRetriesAreBoundedThenOnlyACommitRetries(t *testing.T) {
	const limit = 3
	_, inj, idx := heldIndexLimited(t, time.Millisecond, 2*time.Millisecond, limit)
	defer idx.Close(context.Background())
	// One failure came from the commit; then the retrier tries limit times.
	eventually(t, "the background retries run out", func() bool {
		h := idx.Status().HeldPublication
		return h != nil && h.NextRetry.IsZero()
	})
	tried := len(inj.failed())
	if tried != 1+limit {
		t.Fatalf("%d failed attempts, want the commit's and %d background ones", tried, limit)
	}
	if got := idx.Status().PublicationRetries.Failed; got != limit {
		t.Errorf("background failures counted %d, want %d", got, limit)
	}
	// Nothing more is tried in the background, even once the fault heals.
	inj.armed.Store(false)
	time.Sleep(50 * time.Millisecond)
	if h := idx.Status().HeldPublication; h == nil || len(inj.failed()) != tried {
		t.Fatalf("a retry ran past the limit: held %+v, attempts %d", h, len(inj.failed()))
	}
	if !errors.Is(idx.Add(docs(t, 40, 41, 1)), ErrBackpressure) {
		t.Error("ingestion admitted while the generation is held")
	}
	// A commit still publishes the held generation whole.
	res, err := idx.Commit(context.Background())
	if err != nil {
		t.Fatalf("commit after the fault healed: %v", err)
	}
	if res.Documents != 40 || idx.Status().HeldPublication != nil {
		t.Fatalf("commit published %d documents, held %+v", res.Documents, idx.Status().HeldPublication)
	}
}
