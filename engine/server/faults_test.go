package server_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/server"
)

// TestBackpressure holds a commit in its finalizer: ingestion waits
// BackpressureWait and answers 503 Backpressure with Retry-After; once the
// commit ends, ingestion works again.
func TestBackpressure(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	entered := make(chan struct{})
	e := newEnvWith(t, server.Limits{BackpressureWait: 200 * time.Millisecond}, index.Options{
		IndexingWorkers: 1,
		Hooks: index.Hooks{BeforePublish: func() error {
			once.Do(func() { close(entered) })
			<-release
			return nil
		}},
	})
	e.create("bp")
	e.mustAdd("bp", paragraphDocs(t, 10)...)
	done := make(chan error, 1)
	go func() { _, err := e.c.Commit(e.ctx, "bp"); done <- err }()
	<-entered
	start := time.Now()
	_, err := e.c.AddDocuments(e.ctx, "bp", map[string]any{"id": "late"})
	wantAPIError(t, err, 503, client.CodeBackpressure)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("backpressure answered after %v, before its wait", d)
	}
	_, err = e.c.DeleteDocument(e.ctx, "bp", "p0001")
	wantAPIError(t, err, 503, client.CodeBackpressure)
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("commit: %v", err)
	}
	e.mustAdd("bp", map[string]any{"id": "late"})
	if res := e.mustCommit("bp"); res.Documents != 11 {
		t.Fatalf("documents %d", res.Documents)
	}
}

// TestCommitFlushTimeout blocks the worker's flush past the flush timeout:
// commit answers 503 CommitFlushTimeout (retryable, Retry-After); the
// commit goes on and a retried commit joins it and succeeds.
func TestCommitFlushTimeout(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	e := newEnvWith(t, server.Limits{}, index.Options{
		IndexingWorkers:    1,
		CommitFlushTimeout: 100 * time.Millisecond,
		Hooks:              index.Hooks{BeforeWorkerFlush: func(int) { once.Do(func() { <-release }) }},
	})
	e.create("ft")
	e.mustAdd("ft", paragraphDocs(t, 10)...)
	_, err := e.c.Commit(e.ctx, "ft")
	if ae := wantAPIError(t, err, 503, client.CodeCommitFlushTimeout); !ae.Retryable {
		t.Fatalf("CommitFlushTimeout not retryable")
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := e.c.Commit(e.ctx, "ft")
		if err == nil {
			if res.Documents != 10 {
				t.Fatalf("documents %d", res.Documents)
			}
			break
		}
		if !client.IsCode(err, client.CodeCommitFlushTimeout) || time.Now().After(deadline) {
			t.Fatalf("retried commit: %v", err)
		}
	}
}

// TestGenerationFailed makes a worker panic during the flush: commit
// answers 500 GenerationFailed, retryable, the documents are kept, and the
// next commit publishes them.
func TestGenerationFailed(t *testing.T) {
	var once sync.Once
	e := newEnvWith(t, server.Limits{}, index.Options{
		IndexingWorkers: 1,
		Hooks:           index.Hooks{BeforeWorkerFlush: func(int) { once.Do(func() { panic("injected worker failure") }) }},
	})
	e.create("gf")
	docs := paragraphDocs(t, 10)
	e.mustAdd("gf", docs...)
	_, err := e.c.Commit(e.ctx, "gf")
	if ae := wantAPIError(t, err, 500, client.CodeGenerationFailed); !ae.Retryable {
		t.Fatalf("GenerationFailed not retryable")
	}
	// The accepted documents were kept: committing again publishes them.
	if res := e.mustCommit("gf"); res.Documents != uint64(len(docs)) {
		t.Fatalf("documents %d", res.Documents)
	}
}

// TestHeldPublicationRetriedInBackground fails a publication before its
// commit point: commit answers 500, retryable; STATUS, /v1/admin/lifecycle
// and /metrics show the held publication; ingestion answers Backpressure.
// Once the fault heals the engine publishes the held generation itself,
// without another commit: the documents are visible, ingestion is
// admitted, and the held state is gone.
func TestHeldPublicationRetriedInBackground(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	e := newEnvWith(t, server.Limits{BackpressureWait: 50 * time.Millisecond}, index.Options{
		IndexingWorkers:     1,
		PublicationRetryMin: 5 * time.Millisecond,
		PublicationRetryMax: 20 * time.Millisecond,
		Hooks: index.Hooks{BeforePublish: func() error {
			if fail.Load() {
				return errors.New("injected: the directory refuses metadata.json.tmp")
			}
			return nil
		}},
	})
	e.create("hp")
	docs := paragraphDocs(t, 10)
	e.mustAdd("hp", docs...)
	_, err := e.c.Commit(e.ctx, "hp")
	if ae := wantAPIError(t, err, 500, client.CodeInternal); !ae.Retryable || !strings.Contains(ae.Message, "background") {
		t.Fatalf("failed publication: %+v", ae)
	}
	st, err := e.c.GetIndex(e.ctx, "hp")
	if err != nil {
		t.Fatal(err)
	}
	if h := st.HeldPublication; h == nil || h.Attempts < 1 || !strings.Contains(h.LastError, "injected") ||
		h.Since.IsZero() || h.NextRetry.Before(h.Since) {
		t.Fatalf("STATUS while held: %+v", h)
	}
	lc, err := e.c.Lifecycle(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(lc.HeldPublications) != 1 || lc.HeldPublications[0].Index != "hp" || lc.HeldPublications[0].Attempts < 1 {
		t.Fatalf("lifecycle while held: %+v", lc.HeldPublications)
	}
	out, err := e.c.Metrics(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `summa_index_held_publication{index="hp"} 1`) {
		t.Errorf("metrics lack the held gauge")
	}
	_, err = e.c.AddDocuments(e.ctx, "hp", map[string]any{"id": "late"})
	if ae := wantAPIError(t, err, 503, client.CodeBackpressure); !strings.Contains(ae.Message, "retried in the background") {
		t.Fatalf("backpressure while held: %+v", ae)
	}

	fail.Store(false)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err = e.c.GetIndex(e.ctx, "hp")
		if err != nil {
			t.Fatal(err)
		}
		if st.HeldPublication == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the held publication was not retried: %+v", st.HeldPublication)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st.Documents != uint64(len(docs)) || st.UncommittedDocuments != 0 || st.Generation != 1 {
		t.Fatalf("after the background retry: %+v", st)
	}
	if lc, err = e.c.Lifecycle(e.ctx); err != nil || len(lc.HeldPublications) != 0 {
		t.Fatalf("lifecycle after the retry: %v %+v", err, lc)
	}
	out, _ = e.c.Metrics(e.ctx)
	for _, want := range []string{
		`summa_index_held_publication{index="hp"} 0`,
		`summa_held_publication_retries_total{index="hp",outcome="success"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	e.mustAdd("hp", map[string]any{"id": "late"})
	if res := e.mustCommit("hp"); res.Documents != uint64(len(docs))+1 {
		t.Fatalf("documents %d", res.Documents)
	}
}
