package blackbox

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// lockMessage is what a clear "directory in use" message contains.
var lockMessage = regexp.MustCompile(`(?i)lock|in use|another|already`)

// TestSecondServerFailsFast starts a second server (and a doctor) on the
// data directory of a running one: each exits non-zero quickly with a clear
// message, touches no file, and the first server keeps working.
func TestSecondServerFailsFast(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	const index = "locked"
	s := startServer(t, dir, "--optimizer-threads", "0")
	s.CreateIndex(index, testSchema)
	s.Ingest(index, makeDocs(ps, "l", 0, 300))
	s.Commit(index)
	s.Ingest(index, makeDocs(ps, "l", 300, 350)) // pending, uncommitted

	metaPath := filepath.Join(dir, index, "metadata.json")
	metaBefore, err := os.ReadFile(metaPath)
	if err != nil {
		t.Fatal(err)
	}
	// Plant an orphan: a second server must not sweep it.
	orphan := filepath.Join(dir, index, "seg_fff0.tmp")
	if err := os.WriteFile(orphan, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := settledSnapshot(t, dir)

	// A second server.
	second := spawn(t, dir)
	select {
	case <-second.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("a second server on the same data directory is still running after 10s\n%s", tail(second.Output(), 20))
	}
	code := second.ExitCode()
	out := second.Output()
	if code == 0 {
		t.Errorf("second server exited 0, want non-zero\n%s", out)
	}
	if !lockMessage.MatchString(out) {
		t.Errorf("second server's message does not say the directory is in use:\n%s", out)
	}
	t.Logf("second server: exit %d after %v: %s", code, time.Since(second.Started).Round(time.Millisecond), bytes.TrimSpace([]byte(tail(out, 3))))

	// A doctor.
	stdout, stderr, dcode := runDoctor(t, dir)
	if dcode == 0 {
		t.Errorf("--doctor beside a running server exited 0, want non-zero\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	if !lockMessage.Match(append(stdout, stderr...)) {
		t.Errorf("--doctor's message does not say the directory is in use:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}

	after := snapshotDir(t, dir)
	if d := diffSnapshots(before, after); len(d) > 0 {
		t.Errorf("the refused server or doctor changed the data directory:\n%v", d)
	}
	if metaAfter, _ := os.ReadFile(metaPath); !bytes.Equal(metaBefore, metaAfter) {
		t.Errorf("metadata.json changed:\nbefore %s\nafter  %s", metaBefore, metaAfter)
	}
	if !exists(orphan) {
		t.Errorf("the refused server swept %s from a directory it does not own", orphan)
	}

	// The first server still works, including its pending writes.
	if r := s.MustDo("GET", "/readyz", nil); r.Status != 200 {
		t.Errorf("first server /readyz %d after the second one failed", r.Status)
	}
	if got := s.LiveDocs(index); len(got) != 300 {
		t.Errorf("first server: %d documents, want 300", len(got))
	}
	s.Ingest(index, makeDocs(ps, "l", 350, 400))
	s.Commit(index)
	if got := s.LiveDocs(index); len(got) != 400 {
		t.Errorf("first server after a commit: %d documents, want 400", len(got))
	}
	s.Stop()
}
