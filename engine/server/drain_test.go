package server_test

import (
	"testing"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/server"
)

// TestDrainRefusesWritesAndResumes drains with uncommitted documents:
// writes get 503 Draining with Retry-After, reads go on, the drain commits
// everything and reports drained; resume admits writes again, and once
// shutdown began resume is refused.
func TestDrainRefusesWritesAndResumes(t *testing.T) {
	e := newEnv(t, server.Limits{})
	e.create("d")
	docs := paragraphDocs(t, 50)
	e.mustAdd("d", docs...)
	if err := e.c.Readyz(e.ctx); err != nil {
		t.Fatalf("readyz before drain: %v", err)
	}
	ds, err := e.c.Drain(e.ctx)
	if err != nil || !ds.Draining {
		t.Fatalf("drain: %+v %v", ds, err)
	}
	_, err = e.c.AddDocuments(e.ctx, "d", docs[0])
	wantAPIError(t, err, 503, client.CodeDraining)
	_, err = e.c.DeleteDocument(e.ctx, "d", "p0001")
	wantAPIError(t, err, 503, client.CodeDraining)
	_, err = e.c.Merge(e.ctx, "d", client.MergeOptions{})
	wantAPIError(t, err, 503, client.CodeDraining)
	wantAPIError(t, e.c.Readyz(e.ctx), 503, client.CodeNotReady)
	if err := e.c.Healthz(e.ctx); err != nil {
		t.Fatalf("healthz during drain: %v", err)
	}
	waitDrained(t, e)
	if st := e.status("d"); st.Documents != uint64(len(docs)) || st.UncommittedDocuments != 0 {
		t.Fatalf("after drain: %+v", st)
	}
	if n := e.hits("d", "light"); n == 0 {
		t.Fatalf("search during drain found nothing")
	}
	if ds, err := e.c.Resume(e.ctx); err != nil || ds.Draining {
		t.Fatalf("resume: %+v %v", ds, err)
	}
	e.mustAdd("d", map[string]any{"id": "new", "body": "after resume"})
	if err := e.c.Readyz(e.ctx); err != nil {
		t.Fatalf("readyz after resume: %v", err)
	}
	e.srv.SetShuttingDown()
	wantAPIError(t, e.c.Readyz(e.ctx), 503, client.CodeNotReady)
	_, err = e.c.Resume(e.ctx)
	wantAPIError(t, err, 503, client.CodeShuttingDown)
}

// waitDrained polls the drain status until drained.
func waitDrained(t *testing.T, e *env) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ds, err := e.c.DrainStatus(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ds.Drained {
			if ds.UncommittedDocuments != 0 || !ds.Draining {
				t.Fatalf("drained status: %+v", ds)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained: %+v", ds)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLifecycle checks the estimate's members and that pending writes
// count in it.
func TestLifecycle(t *testing.T) {
	e := newEnv(t, server.Limits{})
	e.create("l")
	e.mustAdd("l", paragraphDocs(t, 20)...)
	lc, err := e.c.Lifecycle(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lc.UncommittedDocuments != 20 || lc.DrainEstimateSeconds <= 0 || lc.IndexesWithPendingWrites != 1 || lc.FlushDocumentsPerSecond <= 0 {
		t.Fatalf("lifecycle: %+v", lc)
	}
}
