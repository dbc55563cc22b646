package blackbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOrphanSweepAtStartup plants orphan segment files with odd suffixes
// and files whose names do not parse as segment files; a restart deletes
// the orphans (whatever their suffix) and leaves the others alone.
func TestOrphanSweepAtStartup(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	const index = "orphans"
	s := startServer(t, dir)
	s.CreateIndex(index, testSchema)
	s.Ingest(index, makeDocs(ps, "o", 0, 300))
	s.Commit(index)
	s.Ingest(index, makeDocs(ps, "o", 300, 400))
	s.Commit(index)
	s.Stop()

	idxDir := filepath.Join(dir, index)
	md := readMetadata(t, idxDir)
	live := md.LiveIDs()
	orphans := []string{"seg_ff.legacy-partial", "seg_abc.tmp", "seg_abc.post", "seg_7fffffff.del"}
	keep := []string{"notes.txt", "seg_XYZ.post", "seg_1A.post", "seg_.post", "seg_12", "seg_ff"}
	for _, name := range orphans {
		id, _, _ := parseSegFile(name)
		if live[id] {
			t.Fatalf("planted orphan %s collides with live segment %s", name, id)
		}
	}
	for _, name := range append(append([]string{}, orphans...), keep...) {
		if err := os.WriteFile(filepath.Join(idxDir, name), []byte("planted by the test\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	metaBefore := md.Raw

	s = startServer(t, dir)
	for _, name := range orphans {
		if exists(filepath.Join(idxDir, name)) {
			t.Errorf("orphan %s survived the startup sweep", name)
		}
	}
	for _, name := range keep {
		if !exists(filepath.Join(idxDir, name)) {
			t.Errorf("%s is not a segment file name, but the startup sweep deleted it", name)
		}
	}
	if unowned, _ := unownedSegFiles(t, idxDir); len(unowned) > 0 {
		t.Errorf("unowned seg_ files after startup: %v", unowned)
	}
	after := readMetadata(t, idxDir)
	if after.Generation != md.Generation || len(after.Segments) != len(md.Segments) {
		t.Errorf("the sweep changed metadata: generation %d -> %d, %d -> %d segments\nbefore: %s\nafter: %s",
			md.Generation, after.Generation, len(md.Segments), len(after.Segments), metaBefore, after.Raw)
	}
	st := s.Status(index)
	if st.Documents != 400 || len(st.Quarantined) != 0 {
		t.Errorf("after the sweep: documents %d (want 400), quarantined %+v", st.Documents, st.Quarantined)
	}
	if got := s.LiveDocs(index); len(got) != 400 {
		t.Errorf("after the sweep: %d searchable documents, want 400", len(got))
	}
	// The index keeps working.
	s.Ingest(index, makeDocs(ps, "o", 400, 450))
	s.Commit(index)
	if got := s.LiveDocs(index); len(got) != 450 {
		t.Errorf("after a new commit: %d searchable documents, want 450", len(got))
	}
	s.Stop()
	for _, name := range keep {
		if !exists(filepath.Join(idxDir, name)) {
			t.Errorf("%s was deleted by a later commit or shutdown", name)
		}
	}
}
