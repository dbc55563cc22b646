package blackbox

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/summadev/summa/client"
)

// TestDeletionMarkerAtStartup simulates a crash right after step 1 of an
// index deletion (the .deleting marker exists, nothing else happened): the
// next start removes the index before /readyz turns 200.
func TestDeletionMarkerAtStartup(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	s := startServer(t, dir)
	s.CreateIndex("doomed", testSchema)
	s.CreateIndex("keeper", testSchema)
	s.Ingest("doomed", makeDocs(ps, "d", 0, 200))
	s.Commit("doomed")
	s.Ingest("keeper", makeDocs(ps, "k", 0, 150))
	s.Commit("keeper")
	s.Stop()

	doomed := filepath.Join(dir, "doomed")
	if err := os.WriteFile(filepath.Join(doomed, ".deleting"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	s = spawn(t, dir)
	if err := s.WaitReady(readyTimeout); err != nil {
		t.Fatalf("not ready: %v\n%s", err, tail(s.Output(), 40))
	}
	if exists(doomed) {
		t.Errorf("/readyz answered 200 while the directory of the index marked .deleting still exists")
	}
	r := s.MustDo("GET", "/v1/indexes/doomed", nil)
	if r.Status != http.StatusNotFound || r.ErrCode() != "IndexNotFound" {
		t.Errorf("GET /v1/indexes/doomed after the interrupted deletion: %s, want 404 IndexNotFound", r)
	}
	var list struct {
		Indexes []client.IndexStatus `json:"indexes"`
	}
	s.Expect(http.StatusOK, "GET", "/v1/indexes", nil, &list)
	var names []string
	for _, st := range list.Indexes {
		names = append(names, st.Name)
	}
	if len(names) != 1 || names[0] != "keeper" {
		t.Errorf("GET /v1/indexes lists %v, want [keeper]", names)
	}
	if got := s.LiveDocs("keeper"); len(got) != 150 {
		t.Errorf("keeper has %d documents, want 150", len(got))
	}
	// The name is free again.
	s.CreateIndex("doomed", testSchema)
	if st := s.Status("doomed"); st.Documents != 0 {
		t.Errorf("re-created index has %d documents", st.Documents)
	}
	s.Stop()
}

// TestDeleteIndexAPI deletes an index through the API: 202
// {"state":"deleting"}, then 404 and the directory gone.
func TestDeleteIndexAPI(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	s := startServer(t, dir)
	s.CreateIndex("x", testSchema)
	s.CreateIndex("y", testSchema)
	s.Ingest("x", makeDocs(ps, "x", 0, 300))
	s.Commit("x")
	s.Ingest("x", makeDocs(ps, "x", 300, 400)) // uncommitted writes too
	s.Ingest("y", makeDocs(ps, "y", 0, 50))
	s.Commit("y")

	if r := s.MustDo("DELETE", "/v1/indexes/nonexistent", nil); r.Status != http.StatusNotFound || r.ErrCode() != "IndexNotFound" {
		t.Errorf("DELETE of a missing index: %s, want 404 IndexNotFound", r)
	}
	if r := s.MustDo("DELETE", "/v1/indexes/Not_A_Name", nil); r.Status != http.StatusBadRequest || r.ErrCode() != "InvalidIndexName" {
		t.Errorf("DELETE /v1/indexes/Not_A_Name: %s, want 400 InvalidIndexName", r)
	}

	var out struct {
		State string `json:"state"`
	}
	s.Expect(http.StatusAccepted, "DELETE", "/v1/indexes/x", nil, &out)
	if out.State != "deleting" {
		t.Errorf("DELETE answered state %q, want deleting", out.State)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := s.MustDo("GET", "/v1/indexes/x", nil)
		if r.Status == http.StatusNotFound {
			if r.ErrCode() != "IndexNotFound" {
				t.Errorf("GET of a deleted index: %s, want error code IndexNotFound", r)
			}
			break
		}
		if r.Status != http.StatusOK {
			t.Fatalf("GET /v1/indexes/x during deletion: %s", r)
		}
		var st client.IndexStatus
		if json.Unmarshal(r.Body, &st) == nil && st.State != "deleting" {
			t.Errorf("GET /v1/indexes/x after DELETE answered 202: state %q, want deleting", st.State)
		}
		if time.Now().After(deadline) {
			t.Fatalf("index x still present 30s after DELETE")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Writes to the deleted index fail.
	if r := s.MustDo("POST", "/v1/indexes/x/documents", NDJSON(makeDocs(ps, "x", 0, 1))); r.Status != http.StatusNotFound && r.Status != http.StatusConflict {
		t.Errorf("ingest into the deleted index: %s, want 404 IndexNotFound or 409 IndexDeleting", r)
	}
	xdir := filepath.Join(dir, "x")
	for exists(xdir) {
		if time.Now().After(deadline) {
			t.Fatalf("directory %s still exists 30s after DELETE (the index already answers 404)", xdir)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.LiveDocs("y"); len(got) != 50 {
		t.Errorf("index y has %d documents after deleting x, want 50", len(got))
	}
	// Gone for good after a restart, and the name can be used again.
	s.Kill()
	s = startServer(t, dir)
	if r := s.MustDo("GET", "/v1/indexes/x", nil); r.Status != http.StatusNotFound {
		t.Errorf("deleted index x is back after a restart: %s", r)
	}
	s.CreateIndex("x", testSchema)
	if st := s.Status("x"); st.Documents != 0 || st.UncommittedDocuments != 0 {
		t.Errorf("re-created index x: documents %d, uncommitted %d; want a fresh index", st.Documents, st.UncommittedDocuments)
	}
	s.Stop()
}
