package server_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/s3backup"
	"github.com/summadev/summa/engine/server"
	"github.com/summadev/summa/internal/testing/s3test"
)

// segFilesOf returns the seg_ files of dir whose segment ID is in ids.
func segFilesOf(t *testing.T, dir string, ids map[string]bool) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "seg_")
		if !ok {
			continue
		}
		if id, _, _ := strings.Cut(rest, "."); ids[id] {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestB01_UploadHoldsItsGenerationsFilesUntilItEnds: an online backup
// pins the committed generation through the tracker. The upload is held
// before its first file while a forced merge publishes a generation
// without the pinned segments: every file of the pinned generation stays
// on disk, the backup completes with the pinned generation (its number
// and documents), and once the upload released its references the
// retired files are deleted (the tracker's last Unref).
func TestB01_UploadHoldsItsGenerationsFilesUntilItEnds(t *testing.T) {
	st := s3test.Start(t)
	store, err := s3backup.New(s3backup.Config{Endpoint: st.Endpoint, Bucket: st.Bucket, Prefix: "b01",
		CredentialsFile: st.CredentialsFile})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	dir := t.TempDir()
	log := testLogger(t)
	r, err := registry.Open(vfs.Default, dir, registry.Options{Logger: log, Index: index.Options{IndexingWorkers: 2}})
	if err != nil {
		t.Fatalf("open registry: %v", err)
	}
	srv := server.New(r, server.Options{Logger: log, Backups: server.BackupOptions{Store: store, EngineVersion: "test",
		BeforeFile: func(_, _, _ string) {
			once.Do(func() { close(entered); <-release })
		}}})
	ts := httptest.NewServer(srv)
	e := &env{t: t, dir: dir, r: r, srv: srv, ts: ts, c: client.New(ts.URL, ts.Client()), ctx: context.Background()}
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.StopBackups(ctx); err != nil {
			t.Errorf("stop backups: %v", err)
		}
		if err := r.Close(ctx); err != nil {
			t.Errorf("close registry: %v", err)
		}
	})

	e.create("pinned")
	docs := paragraphDocs(t, 60)
	e.mustAdd("pinned", docs[:30]...)
	e.mustCommit("pinned")
	e.mustAdd("pinned", docs[30:]...)
	e.mustCommit("pinned")
	before := e.status("pinned")
	ids := map[string]bool{}
	for _, s := range before.Segments {
		ids[s.ID] = true
	}
	idxDir := filepath.Join(dir, "pinned")
	pinned := segFilesOf(t, idxDir, ids)
	if len(before.Segments) < 2 || len(pinned) == 0 {
		t.Fatalf("want at least two segments with files, got %d segments, files %v", len(before.Segments), pinned)
	}

	b, err := e.c.StartBackup(e.ctx, "pinned")
	if err != nil || b.Generation != before.Generation {
		t.Fatalf("start backup: %+v %v (want generation %d)", b, err, before.Generation)
	}
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the upload did not reach its first file in a minute")
	}
	one := 1
	if _, err := e.c.Merge(e.ctx, "pinned", client.MergeOptions{MaxSegments: &one}); err != nil {
		t.Fatalf("merge: %v", err)
	}
	after := e.status("pinned")
	for _, s := range after.Segments {
		if ids[s.ID] {
			t.Fatalf("the merge left pinned segment %s live: %+v", s.ID, after.Segments)
		}
	}
	if now := segFilesOf(t, idxDir, ids); len(now) != len(pinned) {
		t.Fatalf("files of the pinned generation went during the upload: had %v, now %v", pinned, now)
	}
	close(release)

	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	done, err := e.c.WaitBackup(ctx, "pinned", b.ID, 20*time.Millisecond)
	if err != nil || done.State != client.BackupCompleted || done.Generation != before.Generation || done.Documents != 60 {
		t.Fatalf("backup: %+v %v; want completed, generation %d, 60 documents", done, err, before.Generation)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(segFilesOf(t, idxDir, ids)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("retired files still on disk 30s after the upload ended: %v", segFilesOf(t, idxDir, ids))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
