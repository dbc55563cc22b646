package index

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// residentPages returns how many pages of the file at path are in the
// page cache, and how many it has.
func residentPages(t *testing.T, path string) (resident, pages int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() == 0 {
		return 0, 0
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(mem) }()
	page := os.Getpagesize()
	vec := make([]byte, (len(mem)+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, len(vec)
}

// copyChecked copies leader's committed generation into a follower on the
// disk at dir as the follower's download loop does (Create, write, close,
// Closed, Check), publishes it, and returns the page cache residency of
// the copied files just before publication.
func copyChecked(t *testing.T, lfs vfs.FS, leader *Index, dir string) (resident, pages int) {
	t.Helper()
	follower, err := Create(vfs.Default, dir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, follower)
	in, unpin := prepareCopy(t, leader, follower)
	defer unpin()
	for _, f := range in.Files() {
		writeIncoming(t, in, f.Name, leaderFile(t, lfs, f.Name))
		in.Closed(f.Name)
		if err := in.Check(context.Background(), f.Name); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range in.Files() {
		r, p := residentPages(t, filepath.Join(dir, f.Name))
		resident += r
		pages += p
	}
	if _, err := in.Publish(context.Background()); err != nil {
		in.Abandon()
		t.Fatal(err)
	}
	sameVisible(t, leader, follower)
	return resident, pages
}

// TestLargeCopyDropsItsPagesBehindIt: a copy of at least dropBehindBytes
// leaves in the page cache only the pages its early open of each segment
// read (the rest were written back and dropped, and the open read no
// more than it touched), and still publishes a generation that shows the
// leader's documents; a smaller copy keeps its pages.
func TestLargeCopyDropsItsPagesBehindIt(t *testing.T) {
	lfs, leader := createMem(t)
	defer mustClose(t, leader)
	for i := 0; i < 3; i++ {
		if err := leader.Add(docs(t, i*170, (i+1)*170, 0)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, leader)
	}
	saved := dropBehindBytes
	defer func() { dropBehindBytes = saved }()

	dropBehindBytes = 1
	resident, pages := copyChecked(t, lfs, leader, t.TempDir())
	// What stays is what the early open of each segment read (headers,
	// footers, directories), a page at a time: not the files' bytes, nor
	// the read-ahead of a cold open.
	if pages < 3 || resident*3 > pages {
		t.Fatalf("large copy: %d of its %d pages still in the page cache, want at most a third", resident, pages)
	}

	dropBehindBytes = 1 << 62
	resident, pages = copyChecked(t, lfs, leader, t.TempDir())
	if resident < pages/2 {
		t.Fatalf("small copy: %d of its %d pages in the page cache, want them kept", resident, pages)
	}
}
