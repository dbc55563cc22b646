package segment

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
	"golang.org/x/sys/unix"
)

// TestRawPathNamesTheSegmentFile checks that loadFileRaw's path is the one
// the vfs path of every other reader names, for absolute, relative and
// slash-terminated directories, and that it opens that file.
func TestRawPathNamesTheSegmentFile(t *testing.T) {
	dir := t.TempDir()
	id := segid.ID(0x1f2e)
	name := segid.FileName(id, SuffixCompound)
	if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, d := range []string{dir, dir + "/", ".", "./"} {
		p := rawPath(d, id, SuffixCompound)
		if p[len(p)-1] != 0 {
			t.Fatalf("%q: path %q is not NUL-terminated", d, p)
		}
		got, want := filepath.Clean(string(p[:len(p)-1])), filepath.Clean(vfs.Default.PathJoin(d, name))
		if got != want {
			t.Fatalf("%q: raw path %q, want %q", d, got, want)
		}
		fd, err := openRaw(p)
		if err != nil {
			t.Fatalf("%q: %v", d, err)
		}
		if err := unix.Close(fd); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := openRaw([]byte("no-terminator")); err == nil {
		t.Fatal("openRaw accepted a path without its NUL")
	}
}

// TestLoadFileRawMissing checks that a missing file is ErrMissingFile (the
// error index.Open quarantines without retrying) and names its path.
func TestLoadFileRawMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := loadFileRaw(rawPath(dir, 7, SuffixCompound), 100, 7, SuffixCompound, readLimit)
	if !errors.Is(err, ErrMissingFile) {
		t.Fatalf("err = %v, want ErrMissingFile", err)
	}
	if want := filepath.Join(dir, segid.FileName(7, SuffixCompound)); !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to name %s", err, want)
	}
}
