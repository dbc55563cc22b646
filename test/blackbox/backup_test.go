package blackbox

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// BackupReport is the report printed by `summa-server backup`.
type BackupReport struct {
	Indexes []struct {
		Name       string `json:"name"`
		Files      int    `json:"files"`
		Bytes      int64  `json:"bytes"`
		Generation uint64 `json:"generation"`
	} `json:"indexes"`
	Bytes int64  `json:"bytes"`
	Error string `json:"error"`
}

// runBackup runs `summa-server backup --data-dir dir --to dst extra...`.
func runBackup(t *testing.T, dir, dst string, extra ...string) (rep BackupReport, stdout, stderr []byte, code int) {
	t.Helper()
	needBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, append([]string{"backup", "--data-dir", dir, "--to", dst}, extra...)...)
	cmd.Env = cleanEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("backup did not finish within 2 minutes\nstderr:\n%s", tail(errb.String(), 30))
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("run backup: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("backup stdout is not a JSON report: %v\nstdout:\n%s\nstderr:\n%s", err, out.Bytes(), errb.Bytes())
	}
	var more json.RawMessage
	if err := dec.Decode(&more); err != io.EOF {
		t.Fatalf("backup stdout holds more than one JSON report:\n%s", out.Bytes())
	}
	return rep, out.Bytes(), errb.Bytes(), cmd.ProcessState.ExitCode()
}

// TestBackupOfflineCopy ingests, deletes and commits through the API;
// beside the running server a backup exits 2 and touches neither
// directory; after SIGTERM the backup copies exactly the committed state
// (metadata.json and the files it references, no orphan), and a server
// started on the copy finds every committed document and none of the
// deleted ones.
func TestBackupOfflineCopy(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	const index = "saved"
	s := startServer(t, dir, "--optimizer-threads", "0")
	s.CreateIndex(index, testSchema)
	s.Ingest(index, makeDocs(ps, "b", 0, 300))
	s.Commit(index)
	s.Ingest(index, makeDocs(ps, "b", 300, 400))
	s.Commit(index)
	want := map[string]bool{}
	for i := 0; i < 400; i++ {
		want[pk("b", i)] = true
	}
	for i := 0; i < 400; i += 37 {
		s.Expect(200, "DELETE", "/v1/indexes/"+index+"/documents/"+pk("b", i), nil, nil)
		delete(want, pk("b", i))
	}
	last := s.Commit(index)
	s.Ingest(index, makeDocs(ps, "b", 400, 420)) // accepted, never committed: drained at SIGTERM

	// Beside the running server: exit 2, nothing touched.
	dst := filepath.Join(t.TempDir(), "backup")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	before := settledSnapshot(t, dir)
	rep, stdout, stderr, code := runBackup(t, dir, dst)
	if code != 2 || rep.Error == "" || !lockMessage.Match(stderr) {
		t.Fatalf("backup beside a running server: exit %d (want 2)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if d := diffSnapshots(before, snapshotDir(t, dir)); len(d) > 0 {
		t.Errorf("the refused backup changed the data directory:\n%v", d)
	}
	if names := dirNames(dst); len(names) != 0 {
		t.Errorf("the refused backup wrote into the destination: %v", names)
	}

	s.Stop()
	for i := 400; i < 420; i++ {
		want[pk("b", i)] = true // SIGTERM drains: committed at shutdown
	}
	gen := readMetadata(t, filepath.Join(dir, index)).Generation
	if gen <= last.Generation {
		t.Fatalf("generation %d after SIGTERM, want > %d (the drain commit)", gen, last.Generation)
	}
	// An orphan the backup must leave behind.
	orphan := filepath.Join(dir, index, "seg_fff0.store")
	if err := os.WriteFile(orphan, []byte("orphan"), 0o644); err != nil {
		t.Fatal(err)
	}

	reportFile := filepath.Join(t.TempDir(), "termination-log")
	rep, stdout, stderr, code = runBackup(t, dir, dst, "--report-file", reportFile)
	if code != 0 {
		t.Fatalf("backup: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if data, err := os.ReadFile(reportFile); err != nil || !bytes.Equal(data, stdout) {
		t.Errorf("report file %q (%v), want stdout %q", data, err, stdout)
	}
	copyDir := filepath.Join(dst, index)
	var size int64
	ents, err := os.ReadDir(copyDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		size += info.Size()
		if _, _, ok := parseSegFile(e.Name()); !ok && e.Name() != "metadata.json" {
			t.Errorf("backup copied %s, not metadata.json or a segment file", e.Name())
		}
	}
	if len(rep.Indexes) != 1 || rep.Indexes[0].Name != index || rep.Indexes[0].Generation != gen ||
		rep.Indexes[0].Files != len(ents) || rep.Indexes[0].Bytes != size || rep.Bytes != size {
		t.Errorf("report %s; the copy has %d files, %d bytes, generation %d", stdout, len(ents), size, gen)
	}
	unowned, m := unownedSegFiles(t, copyDir)
	if len(unowned) > 0 {
		t.Errorf("backup copied unowned files %v", unowned)
	}
	if missing := missingSegFiles(t, copyDir, m); len(missing) > 0 {
		t.Errorf("backup is missing the files of live segments %v (copy holds %v)", missing, dirNames(copyDir))
	}
	if m.Generation != gen {
		t.Errorf("copy at generation %d, want %d", m.Generation, gen)
	}
	if !exists(orphan) {
		t.Errorf("backup removed %s from the data directory", orphan)
	}

	// A server on the copy finds exactly the committed documents.
	c := startServer(t, dst, "--optimizer-threads", "0")
	st := c.Status(index)
	if len(st.Quarantined) != 0 || st.Generation != gen {
		t.Errorf("server on the copy: %+v", st)
	}
	got := c.LiveDocs(index)
	var lost, extra []string
	for k := range want {
		if _, ok := got[k]; !ok {
			lost = append(lost, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(lost)
	sort.Strings(extra)
	if len(lost) > 0 || len(extra) > 0 || int(st.Documents) != len(want) {
		t.Errorf("server on the copy: %d documents (STATUS %d), want %d; lost %v, deleted but present %v",
			len(got), st.Documents, len(want), lost, extra)
	}
	if res := c.Search(index, "light", 10); res.TotalHits == 0 {
		t.Errorf("search \"light\" on the copy found nothing")
	}
	c.Stop()

	// A second backup into the same destination is refused.
	_, stdout, stderr, code = runBackup(t, dir, dst)
	if code != 2 {
		t.Errorf("backup into a finished backup: exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
