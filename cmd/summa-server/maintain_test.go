package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

const maintainSchema = `{"fields":[{"name":"id","type":"keyword","primary":true},{"name":"body","type":"text","reorder":true}]}`

// offlineData builds a stopped data directory holding index opticks in
// three committed segments of 100 documents, 60 of the first deleted.
func offlineData(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	r, err := registry.Open(vfs.Default, dir, registry.Options{Index: index.Options{IndexingWorkers: 1}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Parse([]byte(maintainSchema))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(context.Background(), "opticks", s); err != nil {
		t.Fatal(err)
	}
	h, err := r.Acquire("opticks")
	if err != nil {
		t.Fatal(err)
	}
	ps := corpustest.Paragraphs(t)
	for seg := 0; seg < 3; seg++ {
		var batch []*schema.Document
		for i := seg * 100; i < seg*100+100; i++ {
			d, err := s.ParseDocument([]byte(fmt.Sprintf(`{"id":"p%d","body":%q}`, i, ps[i%len(ps)])))
			if err != nil {
				t.Fatal(err)
			}
			batch = append(batch, d)
		}
		if err := h.Add(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 60; i++ {
		if _, err := h.Delete(context.Background(), fmt.Sprintf("p%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.Release()
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// maintainReport is the report of an offline maintenance command.
type maintainReport struct {
	Operation string `json:"operation"`
	Indexes   []struct {
		Name    string `json:"name"`
		Results []struct {
			Sources []string `json:"sources"`
			Output  string   `json:"output"`
		} `json:"results"`
		Error string `json:"error"`
		After struct {
			Closed           bool `json:"closed"`
			WorkersStopped   bool `json:"workersStopped"`
			OpenSnapshots    int  `json:"openSnapshots"`
			ActiveOperations int  `json:"activeOperations"`
			PendingDeletions int  `json:"pendingDeletions"`
		} `json:"after"`
	} `json:"indexes"`
	Error string `json:"error"`
}

// runMaintainCmd runs the real binary and decodes its report.
func runMaintainCmd(t *testing.T, args ...string) (maintainReport, string, int) {
	t.Helper()
	stdout, stderr, code := runCmd(t, args...)
	var rep maintainReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: stdout is not a JSON report: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout, stderr)
	}
	return rep, stderr, code
}

// checkCleanExit checks what the command's exit left: every index closed
// with its workers stopped and nothing held (the report, read from the
// engine after the close), the data-directory lock free, and every seg_
// file owned by metadata (replaced sources and abandoned outputs
// deleted before the exit, not left for a later sweep).
func checkCleanExit(t *testing.T, dir string, rep maintainReport) *metadata.Metadata {
	t.Helper()
	if len(rep.Indexes) != 1 {
		t.Fatalf("report of %d indexes: %+v", len(rep.Indexes), rep)
	}
	a := rep.Indexes[0].After
	if !a.Closed || !a.WorkersStopped || a.OpenSnapshots != 0 || a.ActiveOperations != 0 || a.PendingDeletions != 0 {
		t.Fatalf("exited before cleanup: %+v", a)
	}
	if err := probeLock(dir); err != nil {
		t.Fatalf("lock after exit: %v", err)
	}
	idir := filepath.Join(dir, "opticks")
	meta, err := metadata.Load(vfs.Default, idir)
	if err != nil {
		t.Fatal(err)
	}
	live := map[segid.ID]bool{}
	for _, id := range meta.IDs() {
		live[id] = true
	}
	names, err := os.ReadDir(idir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range names {
		if id, _, ok := segid.ParseFileName(e.Name()); ok && !live[id] {
			t.Fatalf("%s left on disk after exit: not in metadata generation %d", e.Name(), meta.Generation)
		}
		if e.Name() == metadata.TempFileName {
			t.Fatal("metadata.json.tmp left on disk")
		}
	}
	return meta
}

// TestM07_OfflineMaintenanceStopsWorkersReleasesSnapshotsAndAwaitsCleanup
// runs the real binary's merge, compact and reorder commands over a
// stopped data directory: each is refused beside a lock holder touching
// nothing, and on success and on failure it exits only after its indexes
// are closed, their snapshots released and replaced segments deleted.
func TestM07_OfflineMaintenanceStopsWorkersReleasesSnapshotsAndAwaitsCleanup(t *testing.T) {
	dir := offlineData(t)

	// Locked like --doctor: beside a holder of the data directory, exit 2
	// and nothing touched.
	lock, err := registry.LockDataDir(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	for _, cmd := range []string{"merge", "compact", "reorder"} {
		rep, stderr, code := runMaintainCmd(t, cmd, "--data-dir", dir)
		if code != exitUsage || !strings.Contains(stderr, "in use by another summa-server") || rep.Error == "" {
			t.Fatalf("%s beside a lock holder: exit %d, stderr %q", cmd, code, stderr)
		}
	}
	if after := tree(t, dir); after != before {
		t.Fatalf("a refused command touched the directory:\nbefore\n%s\nafter\n%s", before, after)
	}
	lock.Close()

	// compact: success.
	rep, stderr, code := runMaintainCmd(t, "compact", "--data-dir", dir, "--index", "opticks")
	if code != exitOK || len(rep.Indexes) != 1 || len(rep.Indexes[0].Results) != 1 {
		t.Fatalf("compact: exit %d %+v\n%s", code, rep, stderr)
	}
	compacted := rep.Indexes[0].Results[0]
	meta := checkCleanExit(t, dir, rep)
	if len(meta.Segments) != 3 || countLive(meta) != 240 {
		t.Fatalf("after compact: %d segments, %d live", len(meta.Segments), countLive(meta))
	}
	for _, s := range meta.Segments {
		if s.ID.String() == compacted.Sources[0] {
			t.Fatal("the compacted source is still live")
		}
	}

	// reorder: success, every segment.
	rep, stderr, code = runMaintainCmd(t, "reorder", "--data-dir", dir, "--bp-time-budget", "30s")
	if code != exitOK || len(rep.Indexes[0].Results) != 3 {
		t.Fatalf("reorder: exit %d %+v\n%s", code, rep, stderr)
	}
	meta = checkCleanExit(t, dir, rep)
	if countLive(meta) != 240 {
		t.Fatalf("after reorder: %d live", countLive(meta))
	}

	// merge: failure. A corrupt source fails the preflight; the output is
	// abandoned and the command still closes everything before it exits.
	gen := meta.Generation
	victim := meta.Segments[1]
	corruptMiddle(t, filepath.Join(dir, "opticks", segid.FileName(victim.ID, victim.Files[0].Suffix)))
	rep, stderr, code = runMaintainCmd(t, "merge", "--data-dir", dir, "--index", "opticks")
	if code != exitFailure || rep.Error == "" || rep.Indexes[0].Error == "" {
		t.Fatalf("merge over a corrupt source: exit %d %+v\n%s", code, rep, stderr)
	}
	meta = checkCleanExit(t, dir, rep)
	if meta.Generation != gen {
		t.Fatalf("a failed merge published generation %d", meta.Generation)
	}

	// merge: success once the corrupt segment is repaired by the doctor.
	if _, stderr, code := runCmd(t, "--data-dir", dir, "--doctor"); code != exitOK {
		t.Fatalf("doctor: exit %d\n%s", code, stderr)
	}
	rep, stderr, code = runMaintainCmd(t, "merge", "--data-dir", dir, "--max-segments", "1")
	if code != exitOK || len(rep.Indexes[0].Results) != 1 || len(rep.Indexes[0].Results[0].Sources) != 2 {
		t.Fatalf("merge: exit %d %+v\n%s", code, rep, stderr)
	}
	meta = checkCleanExit(t, dir, rep)
	if len(meta.Segments) != 1 {
		t.Fatalf("after merge: %d segments", len(meta.Segments))
	}
}

// countLive returns the live documents of a generation.
func countLive(m *metadata.Metadata) uint32 {
	var n uint32
	for _, s := range m.Segments {
		n += s.LiveDocuments()
	}
	return n
}

// corruptMiddle flips one byte in the middle of a file.
func corruptMiddle(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
