package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/lifecycle"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

var testSchema = schema.MustNew(
	schema.Field{Name: "id", Type: schema.Text, Primary: true},
	schema.Field{Name: "body", Type: schema.Text},
)

func docs(t testing.TB, from, to int) []*schema.Document {
	t.Helper()
	ps := corpustest.Paragraphs(t)
	var out []*schema.Document
	for i := from; i < to; i++ {
		d, err := testSchema.ParseDocument([]byte(fmt.Sprintf(`{"id":"p%04d","body":%q}`, i, ps[i%len(ps)])))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func openTest(t testing.TB, fs vfs.FS, opts Options) *Registry {
	t.Helper()
	if opts.Index.IndexingWorkers == 0 {
		opts.Index.IndexingWorkers = 2
	}
	r, err := Open(fs, "data", opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustCreate(t testing.TB, r *Registry, name string) *Handle {
	t.Helper()
	if _, err := r.Create(context.Background(), name, testSchema); err != nil {
		t.Fatal(err)
	}
	h, err := r.Acquire(name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func exists(fs vfs.FS, path string) bool {
	_, err := fs.Stat(path)
	return err == nil
}

func TestValidIndexName(t *testing.T) {
	for name, want := range map[string]bool{
		"articles": true, "a.b-c": true, "0": true, "a": true,
		"": false, "A": false, "../x": false, "a..b": false, "-a": false, "a-": false, ".a": false,
		"a/b": false, "a_b": false, string(make([]byte, 254)): false,
	} {
		if got := ValidIndexName(name); got != want {
			t.Errorf("ValidIndexName(%q) = %v", name, got)
		}
	}
}

func TestSecondRegistryFailsFastTouchingNothing(t *testing.T) {
	fs := vfs.NewMem()
	r := openTest(t, fs, Options{})
	defer r.Close(context.Background())
	h := mustCreate(t, r, "articles")
	defer h.Release()
	before := fs.String()
	if _, err := Open(fs, "data", Options{}); !errors.Is(err, ErrDataDirLocked) {
		t.Fatalf("second registry: %v", err)
	}
	if fs.String() != before {
		t.Fatal("a second registry touched the directory")
	}
}

func TestCreateIsIdempotentAndSchemaChecked(t *testing.T) {
	r := openTest(t, vfs.NewMem(), Options{})
	defer r.Close(context.Background())
	ctx := context.Background()
	if created, err := r.Create(ctx, "a", testSchema); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if created, err := r.Create(ctx, "a", testSchema); err != nil || created {
		t.Fatalf("same schema again: %v %v", created, err)
	}
	other := schema.MustNew(schema.Field{Name: "x", Type: schema.Keyword})
	if _, err := r.Create(ctx, "a", other); !errors.Is(err, ErrIndexExists) {
		t.Fatalf("other schema: %v", err)
	}
	if _, err := r.Create(ctx, "../x", testSchema); !errors.Is(err, ErrInvalidIndexName) {
		t.Fatalf("hostile name: %v", err)
	}
}

func TestD01_DeletionOrder(t *testing.T) {
	fs := vfs.NewMem()
	r := openTest(t, fs, Options{})
	defer r.Close(context.Background())
	h := mustCreate(t, r, "articles")
	// Released before the close on every path: a failure below must fail
	// the test, not leave the deletion (and so the close) waiting for it.
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(h.Release) }
	defer release()
	if err := h.Add(context.Background(), docs(t, 0, 20)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	idx, _ := h.Index()
	if err := r.Delete(context.Background(), "articles"); err != nil {
		t.Fatal(err)
	}
	// Step 1 is done when Delete returns: the marker exists.
	if !exists(fs, "data/articles/.deleting") {
		t.Fatal("no .deleting marker after Delete returned")
	}
	// Step 2 happens before step 3 waits for our handle: claims are refused
	// and the handle's waiters are signalled.
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("maintenance cancellation not signalled while a handle is held")
	}
	if _, err := idx.Manager().Claim("late"); !errors.Is(err, lifecycle.ErrClosed) {
		t.Fatalf("claim after deletion started: %v", err)
	}
	// Step 3: the directory stays until the handle is released.
	time.Sleep(50 * time.Millisecond)
	if !exists(fs, "data/articles") {
		t.Fatal("directory removed while a handle was still issued")
	}
	release()
	if err := r.WaitDeleted(context.Background(), "articles"); err != nil {
		t.Fatal(err)
	}
	if exists(fs, "data/articles") {
		t.Fatal("step 7 did not remove the directory")
	}
	if _, err := r.Acquire("articles"); !errors.Is(err, ErrIndexNotFound) {
		t.Fatalf("acquire after deletion: %v", err)
	}
}

func TestD02_DeletionDetachedFromRequest(t *testing.T) {
	fs := vfs.NewMem()
	r := openTest(t, fs, Options{})
	defer r.Close(context.Background())
	mustCreate(t, r, "articles").Release()
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Delete(ctx, "articles"); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := r.WaitDeleted(context.Background(), "articles"); err != nil || exists(fs, "data/articles") {
		t.Fatalf("deletion abandoned with its request: %v", err)
	}
}

func TestD03_MarkerAtStartupRemovesDirectory(t *testing.T) {
	fs := vfs.NewMem()
	r := openTest(t, fs, Options{})
	mustCreate(t, r, "gone").Release()
	mustCreate(t, r, "kept").Release()
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := writeMarker(fs, "data/gone"); err != nil {
		t.Fatal(err)
	}
	r = openTest(t, fs, Options{})
	defer r.Close(context.Background())
	if exists(fs, "data/gone") {
		t.Fatal("a marked index survived startup")
	}
	if names := r.Names(); len(names) != 1 || names[0] != "kept" {
		t.Fatalf("indexes after startup: %v", names)
	}
}

func TestD04_HandleFromBeforeDeletionFailsPromptly(t *testing.T) {
	r := openTest(t, vfs.NewMem(), Options{})
	defer r.Close(context.Background())
	h := mustCreate(t, r, "articles")
	if err := r.Delete(context.Background(), "articles"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Index(); !errors.Is(err, ErrIndexDeleting) {
		t.Fatalf("writer lookup on a handle from before the deletion: %v", err)
	}
	if err := h.Add(context.Background(), docs(t, 0, 1)); !errors.Is(err, ErrIndexDeleting) {
		t.Fatalf("add: %v", err)
	}
	if _, err := h.Commit(context.Background()); !errors.Is(err, ErrIndexDeleting) {
		t.Fatalf("commit: %v", err)
	}
	if _, err := r.Create(context.Background(), "articles", testSchema); !errors.Is(err, ErrIndexDeleting) {
		t.Fatalf("create during deletion: %v", err)
	}
	if _, err := r.Acquire("articles"); !errors.Is(err, ErrIndexDeleting) {
		t.Fatalf("acquire during deletion: %v", err)
	}
	h.Release()
	if err := r.WaitDeleted(context.Background(), "articles"); err != nil {
		t.Fatal(err)
	}
	// The name can be used again.
	mustCreate(t, r, "articles").Release()
}

func TestDrainCommitsEverythingAccepted(t *testing.T) {
	fs := vfs.NewMem()
	r := openTest(t, fs, Options{})
	var accepted sync.Map
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		h := mustCreate(t, r, fmt.Sprintf("i%d", w))
		wg.Add(1)
		go func(w int, h *Handle) {
			defer wg.Done()
			defer h.Release()
			for i := 0; ; i++ {
				err := h.Add(context.Background(), docs(t, i, i+1))
				if errors.Is(err, ErrDraining) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				accepted.Store(fmt.Sprintf("i%d/%d", w, i), true)
			}
		}(w, h)
	}
	time.Sleep(30 * time.Millisecond)
	if err := r.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	st := r.DrainStatus()
	if !st.Draining || !st.Drained || st.UncommittedDocuments != 0 {
		t.Fatalf("drain status %+v", st)
	}
	want := map[string]int{}
	accepted.Range(func(k, _ any) bool {
		var w, i int
		fmt.Sscanf(k.(string), "i%d/%d", &w, &i)
		want[fmt.Sprintf("i%d", w)]++
		return true
	})
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = openTest(t, fs, Options{})
	defer r.Close(context.Background())
	for _, s := range r.Statuses() {
		if int(s.Documents) != want[s.Name] {
			t.Fatalf("%s: %d documents after restart, %d accepted", s.Name, s.Documents, want[s.Name])
		}
	}
	r.Resume()
	h, _ := r.Acquire("i0")
	defer h.Release()
	if err := h.Add(context.Background(), docs(t, 900, 901)); err != nil {
		t.Fatalf("write after resume: %v", err)
	}
}

func TestC07_CommitTaskRetriesFlushTimeoutsOnly(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	opts := Options{Index: index.Options{
		IndexingWorkers:    1,
		CommitFlushTimeout: 20 * time.Millisecond,
		Hooks: index.Hooks{BeforeWorkerFlush: func(int) {
			once.Do(func() { <-release })
		}},
	}}
	r := openTest(t, vfs.NewMem(), opts)
	defer r.Close(context.Background())
	h := mustCreate(t, r, "articles")
	defer h.Release()
	if err := h.Add(context.Background(), docs(t, 0, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Commit(context.Background()); !errors.Is(err, index.ErrCommitFlushTimeout) {
		t.Fatalf("first commit: %v", err)
	}
	close(release)
	// A retried request joins the same task (it may see another timeout on
	// a slow machine, as a client would, and retry).
	var res index.CommitResult
	var err error
	for i := 0; i < 100; i++ {
		if res, err = h.Commit(context.Background()); !errors.Is(err, index.ErrCommitFlushTimeout) {
			break
		}
	}
	if err != nil || res.Documents != 10 || res.Generation != 1 {
		t.Fatalf("joined commit: %+v %v", res, err)
	}
}

func TestDoctorRefusesBesideServer(t *testing.T) {
	fs := vfs.NewMem()
	r := openTest(t, fs, Options{})
	mustCreate(t, r, "articles").Release()
	if _, err := Doctor(context.Background(), fs, "data", Options{}); !errors.Is(err, ErrDataDirLocked) {
		t.Fatalf("doctor beside a server: %v", err)
	}
	r.Close(context.Background())
	rep, err := Doctor(context.Background(), fs, "data", Options{})
	if err != nil || len(rep.Indexes) != 1 || rep.Indexes[0].Name != "articles" {
		t.Fatalf("doctor: %+v %v", rep, err)
	}
}

func TestLifecycleEstimateGrowsWithBacklog(t *testing.T) {
	r := openTest(t, vfs.NewMem(), Options{})
	defer r.Close(context.Background())
	h := mustCreate(t, r, "articles")
	defer h.Release()
	empty := r.Lifecycle()
	if empty.DrainEstimateSeconds != 0 {
		t.Fatalf("idle estimate %v", empty.DrainEstimateSeconds)
	}
	if err := h.Add(context.Background(), docs(t, 0, 500)); err != nil {
		t.Fatal(err)
	}
	small := r.Lifecycle()
	if err := h.Add(context.Background(), docs(t, 500, 5000)); err != nil {
		t.Fatal(err)
	}
	big := r.Lifecycle()
	if !(small.DrainEstimateSeconds > 0 && big.DrainEstimateSeconds > small.DrainEstimateSeconds) || big.UncommittedDocuments != 5000 {
		t.Fatalf("estimates: idle %+v, small %+v, big %+v", empty, small, big)
	}
}

// TestC11_HeldPublicationHealsAfterADrainTimedOutAndResumed: a drain over a
// publication that fails before its commit point cannot finish; it times
// out and writes resume. Nobody commits again, yet once the fault heals
// the engine's background retry publishes the held generation, ingestion
// is admitted again and the lifecycle answer no longer lists it.
func TestC11_HeldPublicationHealsAfterADrainTimedOutAndResumed(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	opts := Options{Index: index.Options{
		PublicationRetryMin: 5 * time.Millisecond,
		PublicationRetryMax: 20 * time.Millisecond,
		Hooks: index.Hooks{BeforePublish: func() error {
			if fail.Load() {
				return errors.New("injected publication failure")
			}
			return nil
		}},
	}}
	r := openTest(t, vfs.NewMem(), opts)
	defer r.Close(context.Background())
	h := mustCreate(t, r, "articles")
	defer h.Release()
	if err := h.Add(context.Background(), docs(t, 0, 10)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := r.Drain(ctx)
	cancel()
	if err == nil {
		t.Fatal("a drain over a failing publication finished")
	}
	if st := r.DrainStatus(); st.LastError == "" || st.Drained {
		t.Fatalf("drain status over a failing publication: %+v", st)
	}
	held := r.Lifecycle().HeldPublications
	if len(held) != 1 || held[0].Index != "articles" || held[0].Attempts < 1 || held[0].LastError == "" {
		t.Fatalf("lifecycle after the failed drain: %+v", held)
	}
	r.Resume()
	fail.Store(false)
	// No commit: the write below waits for the background publication
	// (the generous bound only keeps a broken build from hanging).
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Add(ctx, docs(t, 10, 11)); err != nil {
		t.Fatalf("ingestion after the fault healed: %v", err)
	}
	st := h.Status()
	if st.Documents != 10 || st.UncommittedDocuments != 1 || st.HeldPublication != nil {
		t.Fatalf("status after the background publication: %+v", st.Status)
	}
	if held := r.Lifecycle().HeldPublications; len(held) != 0 {
		t.Fatalf("lifecycle still lists %+v", held)
	}
}

// TestRefusedReorderChangesNothing: a manual reorder of an index whose
// schema has no reorder field is refused before it commits the admitted
// ingestion, so the refusal publishes nothing.
func TestRefusedReorderChangesNothing(t *testing.T) {
	r := openTest(t, vfs.NewMem(), Options{})
	defer r.Close(context.Background())
	h := mustCreate(t, r, "articles")
	defer h.Release()
	ctx := context.Background()
	if err := h.Add(ctx, docs(t, 0, 10)); err != nil {
		t.Fatal(err)
	}
	before := h.Status().Generation
	if _, err := h.Reorder(ctx); !errors.Is(err, index.ErrNoReorderFields) {
		t.Fatalf("reorder without a reorder field: %v, want ErrNoReorderFields", err)
	}
	if st := h.Status(); st.Generation != before || st.Documents != 0 {
		t.Fatalf("a refused reorder published generation %d with %d documents (was %d, none committed)",
			st.Generation, st.Documents, before)
	}
}
