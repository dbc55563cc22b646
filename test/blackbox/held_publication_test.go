package blackbox

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/summadev/summa/client"
)

// TestHeldPublicationIsRetriedInTheBackground: the documents of a
// generation are written as segments, then the index directory refuses
// writes, so the commit fails before its commit point (metadata.json.tmp
// cannot be created): 500, retryable, and the prepared generation is held
// (STATUS, /v1/admin/lifecycle and /metrics say so). Once the directory
// accepts writes again, nobody commits: the engine's background retry
// publishes the held generation, every accepted document becomes visible
// and ingestion is admitted again.
func TestHeldPublicationIsRetriedInTheBackground(t *testing.T) {
	needBinary(t)
	dir := t.TempDir()
	// One worker whose buffer is always full: each ingestion request is
	// written as a segment right away, so the commit itself only has to
	// publish. No background maintenance writes into the directory.
	s := startServer(t, dir, "--optimizer-threads", "0", "--indexing-workers", "1",
		"--indexing-buffer-bytes", "1", "--publication-retry-min", "100ms", "--publication-retry-max", "400ms")
	const index = "held"
	s.CreateIndex(index, testSchema)
	ps := paragraphs(t)
	s.Ingest(index, makeDocs(ps, "p", 0, 20))
	s.Commit(index)
	idxDir := filepath.Join(dir, index)
	committed := readMetadata(t, idxDir)
	var suffixes int
	for _, sufs := range segFiles(t, idxDir) {
		suffixes = max(suffixes, len(sufs))
	}

	// The next 40 documents are written as a prepared segment: wait until
	// every file of it exists (the rest of its writing needs no new entry).
	s.Ingest(index, makeDocs(ps, "p", 20, 60))
	waitFor(t, "the prepared segment's files", func() bool {
		for id, sufs := range segFiles(t, idxDir) {
			if !committed.LiveIDs()[id] && len(sufs) == suffixes {
				return true
			}
		}
		return false
	})
	if err := setImmutable(idxDir, true); err != nil {
		t.Skipf("this filesystem has no immutable attribute (%v)", err)
	}
	t.Cleanup(func() { _ = setImmutable(idxDir, false) })

	r := s.MustDo("POST", "/v1/indexes/"+index+"/commit", nil)
	var eb ErrorBody
	if err := json.Unmarshal(r.Body, &eb); err != nil || r.Status != http.StatusInternalServerError || !eb.Error.Retryable {
		t.Fatalf("commit on an immutable directory: %s", r)
	}
	st := s.Status(index)
	if h := st.HeldPublication; h == nil || h.Attempts < 1 || h.LastError == "" || h.Since.IsZero() {
		t.Fatalf("STATUS after the failed publication: %+v", h)
	}
	if st.Documents != 20 || st.UncommittedDocuments != 40 {
		t.Fatalf("after the failed publication: %d committed, %d uncommitted; want 20 and 40", st.Documents, st.UncommittedDocuments)
	}
	// While the directory refuses writes the engine keeps retrying and
	// publishes nothing.
	waitFor(t, "background retries", func() bool {
		h := s.Status(index).HeldPublication
		return h != nil && h.Attempts >= 3
	})
	var lc struct {
		HeldPublications []client.IndexHeldPublication `json:"heldPublications"`
	}
	s.Expect(http.StatusOK, "GET", "/v1/admin/lifecycle", nil, &lc)
	if len(lc.HeldPublications) != 1 || lc.HeldPublications[0].Index != index || lc.HeldPublications[0].Attempts < 3 {
		t.Fatalf("lifecycle while held: %+v", lc.HeldPublications)
	}
	if m := s.MustDo("GET", "/metrics", nil); !strings.Contains(string(m.Body), `summa_index_held_publication{index="held"} 1`) {
		t.Fatalf("metrics lack the held publication gauge")
	}
	if m := readMetadata(t, idxDir); m.Generation != committed.Generation {
		t.Fatalf("generation %d published while the directory refused writes", m.Generation)
	}

	// Heal. No commit from here on.
	if err := setImmutable(idxDir, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the background retry to publish", func() bool {
		return s.Status(index).HeldPublication == nil
	})
	st = s.Status(index)
	if st.Documents != 60 || st.UncommittedDocuments != 0 || st.Generation != committed.Generation+1 {
		t.Fatalf("after the background retry: generation %d, %d committed, %d uncommitted; want %d, 60, 0",
			st.Generation, st.Documents, st.UncommittedDocuments, committed.Generation+1)
	}
	if got := s.LiveDocs(index); len(got) != 60 {
		t.Fatalf("%d documents searchable, want 60", len(got))
	}
	lc.HeldPublications = nil // an absent member leaves the field as it was
	s.Expect(http.StatusOK, "GET", "/v1/admin/lifecycle", nil, &lc)
	if len(lc.HeldPublications) != 0 {
		t.Fatalf("lifecycle still lists %+v", lc.HeldPublications)
	}
	m := s.MustDo("GET", "/metrics", nil)
	for _, want := range []string{
		`summa_index_held_publication{index="held"} 0`,
		`summa_held_publication_retries_total{index="held",outcome="success"} 1`,
	} {
		if !strings.Contains(string(m.Body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if unowned, _ := unownedSegFiles(t, idxDir); len(unowned) != 0 {
		t.Fatalf("files owned by no generation after the retry: %v", unowned)
	}
	// Ingestion is admitted again, without any commit in between.
	s.Ingest(index, makeDocs(ps, "p", 60, 61))
	if res := s.Commit(index); res.Documents != 61 {
		t.Fatalf("next commit: %d documents, want 61", res.Documents)
	}
}
