package blackbox

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// maxNameLen is the longest legal index name (a DNS-1123 subdomain).
const maxNameLen = 253

// longName returns a legal index name of n characters: labels of label
// characters separated by dots (label 63 gives the fewest dots, label 1 a
// name full of dots), the first starting with first.
func longName(first byte, n, label int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
		if (i+1)%(label+1) == 0 {
			b[i] = '.'
		}
	}
	b[0] = first
	if b[n-1] == '.' {
		panic("longName: the name would end with a dot")
	}
	return string(b)
}

// hostileNames are legal names at and around the limits: the longest
// names with few and with many dots, the first length whose trash name
// used to pass the 255-byte file name limit, and the shortest name.
func hostileNames() []string {
	return []string{
		longName('m', maxNameLen, 63),
		longName('d', maxNameLen, 1),
		strings.Repeat("y", 223),
		"z",
	}
}

// trashEntries lists what in dataDir is neither an index directory nor a
// file of the server: leftovers of a removal.
func trashEntries(t *testing.T, dataDir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".summa-trash") {
			out = append(out, e.Name())
		}
	}
	return out
}

// waitGone waits until GET answers 404 and the index's directory is gone.
func waitGone(t *testing.T, s *Server, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	dir := filepath.Join(s.DataDir, name)
	for {
		r := s.MustDo("GET", "/v1/indexes/"+name, nil)
		if r.Status == http.StatusNotFound && !exists(dir) {
			return
		}
		if r.Status != http.StatusOK && r.Status != http.StatusNotFound {
			t.Fatalf("GET %.40s... during deletion: %s", name, r)
		}
		if time.Now().After(deadline) {
			t.Fatalf("index %.40s... (%d chars): GET %d, directory present %v 30s after DELETE (holding %v)",
				name, len(name), r.Status, exists(dir), dirNames(dir))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requireEmpty requires a (re-)created index to hold nothing.
func requireEmpty(t *testing.T, s *Server, name, when string) {
	t.Helper()
	st := s.Status(name)
	if st.Documents != 0 || len(st.Segments) != 0 || st.UncommittedDocuments != 0 {
		t.Errorf("%s: index %.40s... (%d chars) holds %d documents in %d segments (%d uncommitted); want an empty index",
			when, name, len(name), st.Documents, len(st.Segments), st.UncommittedDocuments)
	}
	if res := s.Search(name, allQuery, 10); res.TotalHits != 0 {
		t.Errorf("%s: index %.40s... finds %d deleted documents", when, name, res.TotalHits)
	}
}

// TestD01_DeleteLegalNamesOfEveryLength deletes indexes whose names reach
// the 253-character limit (with few and with many dots): DELETE removes
// the directory and leaves no trash, a PUT with the same schema creates
// an empty index, and the server restarts and the doctor runs cleanly.
func TestD01_DeleteLegalNamesOfEveryLength(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	s := startServer(t, dir)
	names := hostileNames()
	for i, name := range names {
		s.CreateIndex(name, testSchema)
		s.Ingest(name, makeDocs(ps, fmt.Sprintf("n%d", i), 0, 40))
		s.Commit(name)
		if got := s.Search(name, allQuery, 100).TotalHits; got != 40 {
			t.Fatalf("index of %d chars finds %d documents, want 40", len(name), got)
		}
	}
	for _, name := range names {
		var out struct {
			State string `json:"state"`
		}
		s.Expect(http.StatusAccepted, "DELETE", "/v1/indexes/"+name, nil, &out)
		waitGone(t, s, name)
	}
	if left := trashEntries(t, dir); len(left) > 0 {
		t.Errorf("deletions left %v in the data directory", left)
	}
	for _, name := range names {
		s.CreateIndex(name, testSchema) // 201: the name is free
		requireEmpty(t, s, name, "re-created after DELETE")
	}
	s.Stop()

	if stdout, stderr, code := runDoctor(t, dir); code != 0 {
		t.Fatalf("--doctor exit %d\nstdout: %s\nstderr: %s", code, stdout, tail(string(stderr), 20))
	}
	s = startServer(t, dir)
	for _, name := range names {
		requireEmpty(t, s, name, "after a restart")
	}
	s.Stop()
}

// TestD03_LongNameDeletionFinishesAfterCrash leaves every state a kill -9
// can leave during the deletion of indexes with names at the limit: the
// marker alone (after step 1), a directory renamed into the trash and
// half-removed (during step 7), and the trash names of an older version.
// The server starts, finishes every deletion before it is ready, and a
// PUT of the same name creates an empty index; --doctor does the same.
func TestD03_LongNameDeletionFinishesAfterCrash(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	for _, tool := range []string{"server", "doctor"} {
		t.Run(tool, func(t *testing.T) {
			dir := t.TempDir()
			s := startServer(t, dir)
			names := hostileNames()
			for i, name := range names {
				s.CreateIndex(name, testSchema)
				s.Ingest(name, makeDocs(ps, fmt.Sprintf("c%d", i), 0, 30))
				s.Commit(name)
			}
			s.Stop()
			for _, name := range names {
				if err := os.WriteFile(filepath.Join(dir, name, ".deleting"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Trash of a removal cut short: this version's fixed-length name
			// and an older version's <prefix><name>-<nanos>.
			for _, trash := range []string{".summa-trash-0123456789abcdef-fedcba9876543210", ".summa-trash-victim-1752570000000000000"} {
				if err := os.MkdirAll(filepath.Join(dir, trash), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, trash, "seg_1.post"), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tool == "doctor" {
				stdout, stderr, code := runDoctor(t, dir)
				if code != 0 {
					t.Fatalf("--doctor exit %d\nstdout: %s\nstderr: %s", code, stdout, tail(string(stderr), 20))
				}
				if rep := parseDoctorReport(t, stdout); len(rep.Indexes) != 0 {
					t.Errorf("--doctor reports %d indexes; every index was being deleted", len(rep.Indexes))
				}
				for _, name := range names {
					if exists(filepath.Join(dir, name)) {
						t.Errorf("--doctor left the directory of %.40s... (%d chars) marked .deleting", name, len(name))
					}
				}
				if left := trashEntries(t, dir); len(left) > 0 {
					t.Errorf("--doctor left trash %v", left)
				}
			}
			s = startServer(t, dir)
			for _, name := range names {
				if exists(filepath.Join(dir, name)) {
					t.Errorf("the directory of %.40s... (%d chars) marked .deleting survived the start", name, len(name))
				}
				if r := s.MustDo("GET", "/v1/indexes/"+name, nil); r.Status != http.StatusNotFound {
					t.Errorf("GET %.40s... after the interrupted deletion: %s, want 404", name, r)
				}
			}
			if left := trashEntries(t, dir); len(left) > 0 {
				t.Errorf("the start left trash %v", left)
			}
			for _, name := range names {
				s.CreateIndex(name, testSchema)
				requireEmpty(t, s, name, "re-created after the interrupted deletion")
			}
			s.Stop()
		})
	}
}

// TestD03_LongNameDeletionSurvivesKill9 kills the server right after
// DELETE answered 202 for indexes with names at the limit, at a different
// moment of the ordered deletion each time, and requires every deletion
// to be finished after the restart, with no trash left.
func TestD03_LongNameDeletionSurvivesKill9(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	names := hostileNames()[:2]
	for trial := 0; trial < 4; trial++ {
		s := startServer(t, dir)
		for i, name := range names {
			s.CreateIndex(name, testSchema)
			s.Ingest(name, makeDocs(ps, fmt.Sprintf("k%d", i), 0, 60))
			s.Commit(name)
		}
		for _, name := range names {
			s.Expect(http.StatusAccepted, "DELETE", "/v1/indexes/"+name, nil, nil)
		}
		if trial > 0 {
			waitRemovalStarted(filepath.Join(dir, names[trial%len(names)]), time.Duration(trial)*time.Millisecond)
		}
		s.Kill()
		s = startServer(t, dir)
		for _, name := range names {
			if r := s.MustDo("GET", "/v1/indexes/"+name, nil); r.Status != http.StatusNotFound {
				t.Errorf("trial %d: GET %.40s... after kill -9 during its deletion: %s, want 404", trial, name, r)
			}
			if exists(filepath.Join(dir, name)) {
				t.Errorf("trial %d: directory of %.40s... remains after the restart: %v", trial, name, dirNames(filepath.Join(dir, name)))
			}
		}
		if left := trashEntries(t, dir); len(left) > 0 {
			t.Errorf("trial %d: trash left after the restart: %v", trial, left)
		}
		s.Stop()
	}
}

// TestBackupOfLongNames backs up indexes whose names reach the limit and
// serves the copy.
func TestBackupOfLongNames(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	s := startServer(t, dir)
	names := hostileNames()
	for i, name := range names {
		s.CreateIndex(name, testSchema)
		s.Ingest(name, makeDocs(ps, fmt.Sprintf("b%d", i), 0, 25+i))
		s.Commit(name)
	}
	s.Stop()
	dst := filepath.Join(t.TempDir(), "copy")
	rep, _, stderr, code := runBackup(t, dir, dst)
	if code != 0 {
		t.Fatalf("backup exit %d: %s\n%s", code, rep.Error, tail(string(stderr), 20))
	}
	if len(rep.Indexes) != len(names) {
		t.Errorf("backup copied %d indexes, want %d", len(rep.Indexes), len(names))
	}
	c := startServer(t, dst)
	for i, name := range names {
		if got := len(c.LiveDocs(name)); got != 25+i {
			t.Errorf("copy of %.40s... (%d chars) has %d documents, want %d", name, len(name), got, 25+i)
		}
	}
	c.Stop()
}
