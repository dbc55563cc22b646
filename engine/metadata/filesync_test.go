package metadata

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestFileSyncOnDisk: a FileSync started on a written file of a real
// directory (an asynchronous fsync on Linux) waits with success, closes
// the file, and keeps its outcome; one of a missing file fails at Wait
// with a *SyncError naming it; Release of a started sync returns.
func TestFileSyncOnDisk(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "seg_1.cmp"), []byte("segment bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := StartFileSync(vfs.Default, dir, "seg_1.cmp")
	if s.Name() != "seg_1.cmp" {
		t.Fatalf("name %q", s.Name())
	}
	if err := s.Wait(); err != nil {
		t.Fatalf("wait: %v", err)
	}
	if s.f != nil {
		t.Fatal("file still open after Wait")
	}
	if err := s.Wait(); err != nil {
		t.Fatalf("second wait: %v", err)
	}
	missing := StartFileSync(vfs.Default, dir, "seg_2.cmp")
	err := missing.Wait()
	var se *SyncError
	if !errors.As(err, &se) || se.Name != "seg_2.cmp" || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("wait of a missing file: %v, want a *SyncError of seg_2.cmp, not exist", err)
	}
	r := StartFileSync(vfs.Default, dir, "seg_1.cmp")
	r.Release()
	r.Release()
	if r.f != nil {
		t.Fatal("file still open after Release")
	}
}

// TestSaveSyncingWaitsForStarted: SaveSyncing waits for the syncs it is
// given before the rename: a started sync that fails (the file vanished
// before it could be opened) fails the save as a *SyncError, and nothing
// is committed; a successful one lets the generation be published.
func TestSaveSyncingWaitsForStarted(t *testing.T) {
	onDiskAndInMemory(t, func(t *testing.T, fs vfs.FS, dir string) {
		f, err := fs.Create(fs.PathJoin(dir, "seg_1.cmp"), vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("segment bytes")); err != nil {
			t.Fatal(err)
		}
		f.Close()
		m := &Metadata{Version: FormatVersion, Generation: 1, NextID: 2, Schema: sample().Schema}
		bad := StartFileSync(fs, dir, "seg_9.cmp")
		err = SaveSyncing(fs, dir, m, nil, []*FileSync{StartFileSync(fs, dir, "seg_1.cmp"), bad})
		var se *SyncError
		if !errors.As(err, &se) || se.Name != "seg_9.cmp" {
			t.Fatalf("save with a failed started sync: %v, want a *SyncError of seg_9.cmp", err)
		}
		if _, err := fs.Stat(fs.PathJoin(dir, FileName)); err == nil {
			t.Fatal("metadata.json published although a started sync failed")
		}
		if err := SaveSyncing(fs, dir, m, nil, []*FileSync{StartFileSync(fs, dir, "seg_1.cmp")}); err != nil {
			t.Fatalf("save: %v", err)
		}
		if _, err := fs.Stat(fs.PathJoin(dir, FileName)); err != nil {
			t.Fatalf("metadata.json not published: %v", err)
		}
	})
}

// onDiskAndInMemory runs f as two subtests: in a new directory of the
// real filesystem ("disk") and of an in-memory one ("mem").
func onDiskAndInMemory(t *testing.T, f func(t *testing.T, fs vfs.FS, dir string)) {
	t.Helper()
	for _, c := range []struct {
		name string
		fs   vfs.FS
		dir  string
	}{{"disk", vfs.Default, t.TempDir()}, {"mem", vfs.NewMem(), "/idx"}} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.fs.MkdirAll(c.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			f(t, c.fs, c.dir)
		})
	}
}
