package blackbox

import (
	"path/filepath"
	"testing"
	"time"
)

// TestSIGTERMCommitsAcceptedDocuments ingests without committing, sends
// SIGTERM and requires a clean exit within the shutdown deadline; the
// restarted server has every accepted document (the shutdown drains, and a
// drain commits).
func TestSIGTERMCommitsAcceptedDocuments(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	const index = "term"
	s := startServer(t, dir)
	s.CreateIndex(index, testSchema)
	s.Ingest(index, makeDocs(ps, "c", 0, 200))
	s.Commit(index)
	// Accepted, never committed; an upsert and a delete among them.
	for i := 0; i < 1200; i += 300 {
		s.Ingest(index, makeDocs(ps, "u", i, i+300))
	}
	up := makeDoc(ps, "c", 5, 999999)
	s.Ingest(index, []Doc{up})
	s.Expect(200, "DELETE", "/v1/indexes/"+index+"/documents/"+pk("c", 6), nil, nil)

	st := s.Status(index)
	if st.Documents != 200 {
		t.Errorf("before SIGTERM: documents %d, want 200 (nothing else committed)", st.Documents)
	}
	if st.UncommittedDocuments == 0 {
		t.Errorf("before SIGTERM: STATUS uncommittedDocuments 0 with 1202 operations accepted")
	}
	if res := s.Search(index, "+id:"+pk("u", 0), 10); res.TotalHits != 0 {
		t.Errorf("an uncommitted document is searchable before any commit")
	}

	code, took := s.Term(shutdownDeadline + 5*time.Second)
	t.Logf("SIGTERM -> exit %d after %v", code, took)
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0\n%s", code, tail(s.Output(), 30))
	}
	if took > shutdownDeadline {
		t.Errorf("shutdown took %v, more than the %v deadline", took, shutdownDeadline)
	}

	s = startServer(t, dir)
	live := s.LiveDocs(index)
	if want := 200 + 1200 - 1; len(live) != want {
		t.Errorf("after restart: %d documents, want %d", len(live), want)
	}
	for i := 0; i < 1200; i++ {
		if _, ok := live[pk("u", i)]; !ok {
			t.Errorf("accepted document %s lost by the SIGTERM shutdown", pk("u", i))
			break
		}
	}
	if d, ok := live[pk("c", 5)]; !ok || d.N != 999999 {
		t.Errorf("upsert of %s before SIGTERM: got %+v, want n=999999", pk("c", 5), d)
	}
	if _, ok := live[pk("c", 6)]; ok {
		t.Errorf("delete of %s before SIGTERM was lost", pk("c", 6))
	}
	if st := s.Status(index); st.Documents != uint64(len(live)) || st.UncommittedDocuments != 0 {
		t.Errorf("after restart: STATUS documents %d uncommitted %d", st.Documents, st.UncommittedDocuments)
	}
	if unowned, _ := unownedSegFiles(t, filepath.Join(dir, index)); len(unowned) > 0 {
		t.Errorf("after the SIGTERM shutdown: unowned seg_ files %v", unowned)
	}
	s.Stop()
}

// TestSIGTERMDeadlinePasses gives the shutdown less time than the drain's
// commit needs: the process must still exit promptly, and a restart finds
// every committed document, the uncommitted ones all or none (no partial
// generation), and no unowned seg_ file.
func TestSIGTERMDeadlinePasses(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	const index = "deadline"
	const deadline = 30 * time.Millisecond
	s := startServer(t, dir, "--shutdown-deadline", deadline.String())
	s.CreateIndex(index, testSchema)
	s.Ingest(index, makeDocs(ps, "c", 0, 300))
	s.Commit(index)
	const pending = 12000
	for i := 0; i < pending; i += 1000 {
		s.Ingest(index, makeDocs(ps, "u", i, i+1000))
	}
	code, took := s.Term(deadline + 15*time.Second)
	t.Logf("SIGTERM with --shutdown-deadline %v and %d uncommitted documents: exit %d after %v", deadline, pending, code, took)
	if took > deadline+5*time.Second {
		t.Errorf("exit took %v with a shutdown deadline of %v", took, deadline)
	}

	s = startServer(t, dir, "--optimizer-threads", "0")
	live := s.LiveDocs(index)
	for i := 0; i < 300; i++ {
		if _, ok := live[pk("c", i)]; !ok {
			t.Fatalf("committed document %s lost after a shutdown past its deadline", pk("c", i))
		}
	}
	switch n := len(live) - 300; n {
	case 0, pending:
		t.Logf("after restart: %d of the %d uncommitted documents are there", n, pending)
	default:
		t.Errorf("after restart: %d of the %d uncommitted documents are there: a partial generation", n, pending)
	}
	if unowned, _ := unownedSegFiles(t, filepath.Join(dir, index)); len(unowned) > 0 {
		t.Errorf("after a shutdown past its deadline: unowned seg_ files %v", unowned)
	}
	if st := s.Status(index); len(st.Quarantined) > 0 || st.Documents != uint64(len(live)) {
		t.Errorf("after restart: documents %d (searchable %d), quarantined %v", st.Documents, len(live), st.Quarantined)
	}
	s.Stop()
}
