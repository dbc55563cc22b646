package metadata

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// fsyncBatch starts fds and waits for them.
func fsyncBatch(fds []uintptr) ([]error, bool) {
	b, ok := startFsyncs(fds[:1])
	if !ok {
		return nil, false
	}
	b.add(fds[1:]...)
	return b.wait(), true
}

// TestFsyncBatch: a batch of asynchronous fsyncs of files and their
// directory, started then added to, succeeds, and a descriptor that is not
// open fails alone, with the error fsync(2) gives.
func TestFsyncBatch(t *testing.T) {
	dir := t.TempDir()
	var fds []uintptr
	for _, name := range []string{"a", "b", "c"} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString("payload of " + name); err != nil {
			t.Fatal(err)
		}
		fds = append(fds, f.Fd())
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fds = append(fds, d.Fd())
	errs, ok := fsyncBatch(fds)
	if !ok {
		t.Skip("no asynchronous fsync on this kernel")
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("fsync %d: %v", i, err)
		}
	}
	// A closed descriptor: the kernel refuses to queue it (the ones
	// before it are queued), and its direct fsync reports EBADF.
	closed, err := os.Create(filepath.Join(dir, "closed"))
	if err != nil {
		t.Fatal(err)
	}
	bad := closed.Fd()
	closed.Close()
	errs, ok = fsyncBatch([]uintptr{fds[0], bad, fds[1]})
	if !ok {
		t.Fatal("batch with a closed descriptor not set up")
	}
	if errs[0] != nil || !errors.Is(errs[1], syscall.EBADF) || errs[2] != nil {
		t.Fatalf("errors %v, want nil, EBADF, nil", errs)
	}
}
