package metadata

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestFileSyncFailureIsReported: a FileSync whose fsync fails (in memory,
// and on disk with a descriptor the kernel refuses) reports a *SyncError
// with the fsync's error at Wait, and again at a later Wait.
func TestFileSyncFailureIsReported(t *testing.T) {
	for _, fsys := range []struct {
		name string
		fs   vfs.FS
		dir  string
	}{{"disk", vfs.Default, t.TempDir()}, {"mem", vfs.NewMem(), "/idx"}} {
		t.Run(fsys.name, func(t *testing.T) {
			if err := fsys.fs.MkdirAll(fsys.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFiles(t, fsys.fs, fsys.dir, "seg_1.cmp")
			p := &probeFS{FS: fsys.fs, bad: map[string]bool{"seg_1.cmp": true}}
			s := StartFileSync(p, fsys.dir, "seg_1.cmp")
			for range 2 {
				err := s.Wait()
				var se *SyncError
				if !errors.As(err, &se) || se.Name != "seg_1.cmp" || !errors.Is(err, syscall.EIO) && !errors.Is(err, syscall.EBADF) {
					t.Fatalf("wait of a failing fsync: %v, want a *SyncError of seg_1.cmp", err)
				}
			}
		})
	}
}

// TestFileSyncStartsAtOnceOnDisk: on Linux with asynchronous fsync, a
// FileSync of a file on disk submits its fsync when started, not at
// Wait.
func TestFileSyncStartsAtOnceOnDisk(t *testing.T) {
	requireAIO(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "seg_1.cmp"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := StartFileSync(vfs.Default, dir, "seg_1.cmp")
	if s.batch == nil || s.batch.queued != 1 {
		t.Fatal("the fsync was not submitted when the FileSync started")
	}
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
}
