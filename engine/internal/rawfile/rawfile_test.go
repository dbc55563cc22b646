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
	// Stat follows the descriptor, not the name it was opened under.
	if err := os.WriteFile(a, []byte("another file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Stat(); err != nil || st.Size() != int64(len(text)) {
		t.Fatalf("Stat of the renamed file: %v, %v", st, err)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
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

// TestReuseNeverEmptiesTheLiveFile: a hard link to the live file is not
// truncated; once the live name is renamed over (the linked file is an
// old generation), the link is reused, emptied and writable.
func TestReuseNeverEmptiesTheLiveFile(t *testing.T) {
	if !Supported(vfs.Default) {
		t.Skip("rawfile is not supported on this system")
	}
	dir := t.TempDir()
	live, spare, tmp := filepath.Join(dir, "live"), filepath.Join(dir, "spare"), filepath.Join(dir, "tmp")
	gen1, gen2 := []byte("generation 1"), []byte("generation 2")
	if err := os.WriteFile(live, gen1, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Link(live, spare); err != nil {
		t.Fatal(err)
	}
	if err := Link(live, spare); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("link over an existing name: %v", err)
	}
	if f, err := Reuse(spare, live); err != ErrSameFile {
		if f != nil {
			f.Close()
		}
		t.Fatalf("Reuse of a link to the live file: %v", err)
	}
	if got, _ := os.ReadFile(live); string(got) != string(gen1) {
		t.Fatalf("the live file holds %q after a refused Reuse", got)
	}
	if err := os.WriteFile(tmp, gen2, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Rename(tmp, live); err != nil {
		t.Fatal(err)
	}
	f, err := Reuse(spare, live)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := f.Stat(); err != nil || st.Size() != 0 {
		t.Fatalf("reused file: %v, %v", st, err)
	}
	if _, err := f.Write([]byte("next")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got, _ := os.ReadFile(live); string(got) != string(gen2) {
		t.Fatalf("the live file holds %q after Reuse of the old one", got)
	}
	if got, _ := os.ReadFile(spare); string(got) != "next" {
		t.Fatalf("the reused file holds %q", got)
	}
	if _, err := Reuse(spare, filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Reuse with a live file that cannot be stat'ed")
	}
}

// TestCreateLinked: the linked file is an ordinary file under its name
// (empty, writable, the bytes readable through the name), an existing
// name is fs.ErrExist and is left as it was, and no other name appears in
// the directory.
func TestCreateLinked(t *testing.T) {
	if !Supported(vfs.Default) {
		t.Skip("rawfile is not supported on this system")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "spare.0")
	f, err := CreateLinked(p)
	if err != nil {
		t.Fatal(err)
	}
	text := []byte("a file linked from an unnamed inode")
	if n, err := f.Write(text); n != len(text) || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != string(text) {
		t.Fatalf("read back through the name: %q, %v", got, err)
	}
	if _, err := CreateLinked(p); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("linked create over an existing file: %v", err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != string(text) {
		t.Fatalf("the existing file changed: %q, %v", got, err)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 {
		t.Fatalf("directory holds %d names, want only the created file", len(names))
	}
}
