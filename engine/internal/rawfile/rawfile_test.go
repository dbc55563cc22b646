package rawfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestFileOnDisk: a created file takes writes, reads them back whole
// (ReadAt reports io.EOF past the end), keeps its descriptor across a
// rename, syncs, and a missing file is fs.ErrNotExist, as with os.
func TestFileOnDisk(t *testing.T) {
	if !Supported(vfs.Default) {
		t.Skip("rawfile is not supported on this system")
	}
	if Supported(vfs.NewMem()) {
		t.Fatal("Supported(in-memory filesystem)")
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	f, err := Create(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(a); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("exclusive create of an existing file: %v", err)
	}
	if err := Rename(a, b); err != nil {
		t.Fatal(err)
	}
	text := []byte("Light is never known to bend into the shadow.")
	if n, err := f.Write(text); n != len(text) || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if _, err := f.WriteAt([]byte("L"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if full, err := f.SyncTo(int64(len(text))); !full || err != nil {
		t.Fatalf("SyncTo: %v, %v", full, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(b)
	if err != nil || string(got) != string(text) {
		t.Fatalf("renamed file holds %q, %v", got, err)
	}
	r, err := Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 10)
	if n, err := r.ReadAt(buf, 5); n != 10 || err != nil || string(buf) != string(text[5:15]) {
		t.Fatalf("ReadAt: %d %q %v", n, buf, err)
	}
	if n, err := r.ReadAt(buf, int64(len(text))-4); n != 4 || err != io.EOF {
		t.Fatalf("ReadAt past the end: %d, %v", n, err)
	}
	all, err := io.ReadAll(r)
	if err != nil || string(all) != string(text) {
		t.Fatalf("Read: %q, %v", all, err)
	}
	if st, err := r.Stat(); err != nil || st.Size() != int64(len(text)) {
		t.Fatalf("Stat: %v, %v", st, err)
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatalf("fsync of the directory: %v", err)
	}
	d.Close()
	if _, err := Open(a); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open of a renamed-away file: %v", err)
	}
	if err := Rename(a, b); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("rename of a missing file: %v", err)
	}
}
