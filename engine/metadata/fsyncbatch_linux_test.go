package metadata

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
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
	requireAIO(t)
	errs, ok := fsyncBatch(fds)
	if !ok {
		t.Fatal("batch not set up")
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

// openFiles creates n written files in a new directory and returns their
// descriptors (closed at the test's end).
func openFiles(t *testing.T, n int) []uintptr {
	t.Helper()
	dir := t.TempDir()
	fds := make([]uintptr, n)
	for i := range fds {
		f, err := os.Create(filepath.Join(dir, "f"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if _, err := f.WriteString("payload"); err != nil {
			t.Fatal(err)
		}
		fds[i] = f.Fd()
	}
	return fds
}

// requireAIO skips t on a kernel without asynchronous I/O (io_setup
// refused, probed with the raw system call); on any other, a batch that
// is not set up is a failure.
func requireAIO(t *testing.T) {
	t.Helper()
	var ctx uintptr
	if _, _, e := syscall.Syscall(syscall.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&ctx)), 0); e != 0 {
		t.Skipf("no asynchronous I/O on this kernel: %v", e)
	}
	syscall.Syscall(syscall.SYS_IO_DESTROY, ctx, 0, 0)
}

// closedFd returns the number of a descriptor that is not open (the
// largest a descriptor can have: never handed out).
func closedFd(t *testing.T) uintptr {
	t.Helper()
	return badFd
}

// TestFsyncBatchCapacity: a batch holds up to aioEvents fsyncs submitted
// to the kernel; a larger one is not set up (the caller syncs another
// way), and fsyncs added past the capacity are made directly, each
// reporting its own outcome in its place.
func TestFsyncBatchCapacity(t *testing.T) {
	fds := openFiles(t, aioEvents+1)
	requireAIO(t)
	if b, ok := startFsyncs(fds[:1]); !ok {
		t.Fatal("batch not set up")
	} else {
		b.wait()
	}
	if _, ok := startFsyncs(fds); ok {
		t.Fatalf("a batch of %d fsyncs was set up, past its capacity %d", len(fds), aioEvents)
	}
	b, ok := startFsyncs(fds[:aioEvents])
	if !ok || b.queued != aioEvents {
		t.Fatalf("a batch of exactly %d fsyncs: ok %v, %d queued", aioEvents, ok, b.queued)
	}
	if errs := b.wait(); len(errs) != aioEvents || errors.Join(errs...) != nil {
		t.Fatalf("full batch: %d results, %v", len(errs), errors.Join(errs...))
	}
	// Added up to the capacity: queued in the kernel.
	b, _ = startFsyncs(fds[:1])
	b.add(fds[1:aioEvents]...)
	if b.queued != aioEvents {
		t.Fatalf("added up to the capacity: %d queued, want %d", b.queued, aioEvents)
	}
	if errs := b.wait(); len(errs) != aioEvents || errors.Join(errs...) != nil {
		t.Fatalf("added up to the capacity: %d results, %v", len(errs), errors.Join(errs...))
	}
	// One past it: the added ones are fsynced directly, a closed one fails
	// in its place.
	b, _ = startFsyncs(fds[:2])
	added := append(append([]uintptr{}, fds[2:aioEvents]...), closedFd(t))
	b.add(added...)
	if b.queued != 2 {
		t.Fatalf("added past the capacity: %d queued, want the 2 started", b.queued)
	}
	errs := b.wait()
	if len(errs) != aioEvents+1 || !errors.Is(errs[aioEvents], syscall.EBADF) || errors.Join(errs[:aioEvents]...) != nil {
		t.Fatalf("added past the capacity: %d results, last %v, others %v", len(errs), errs[len(errs)-1], errors.Join(errs[:aioEvents]...))
	}
	// An empty start is a batch, to be added to.
	b, ok = startFsyncs(nil)
	if !ok {
		t.Fatal("an empty batch was not set up")
	}
	b.add(fds[0])
	if errs := b.wait(); len(errs) != 1 || errs[0] != nil || b.queued != 1 {
		t.Fatalf("empty batch added to: %v, %d queued", errs, b.queued)
	}
}

// TestFsyncBatchRefusedStart: a batch whose first descriptor the kernel
// refuses is not set up and records nothing (the caller syncs another
// way), and its context goes back to the pool.
func TestFsyncBatchRefusedStart(t *testing.T) {
	fds := openFiles(t, 1)
	requireAIO(t)
	if b, ok := startFsyncs(fds); !ok {
		t.Fatal("batch not set up")
	} else {
		b.wait()
	}
	free := len(aioPool.free)
	if b, ok := startFsyncs([]uintptr{closedFd(t), fds[0]}); ok {
		t.Fatalf("a batch starting with a closed descriptor was set up: %+v", b)
	}
	if len(aioPool.free) != free {
		t.Fatalf("the refused batch's context was not returned: %d free, want %d", len(aioPool.free), free)
	}
	// Added to a batch: the refused one is fsynced directly and fails.
	b, _ := startFsyncs(nil)
	b.add(closedFd(t))
	if errs := b.wait(); len(errs) != 1 || !errors.Is(errs[0], syscall.EBADF) {
		t.Fatalf("a closed descriptor added: %v, want EBADF", errs)
	}
}

// TestFsyncBatchContextsReused: every batch waited for returns its
// context, whose completions were all reaped: many more batches than a
// context holds events, one after the other, are each set up and queued
// in the kernel, and at most aioContexts contexts exist at once; past
// them a batch is not set up.
func TestFsyncBatchContextsReused(t *testing.T) {
	requireAIO(t)
	fds := openFiles(t, 3)
	for i := range 3 * aioEvents {
		b, ok := startFsyncs(fds)
		if !ok {
			t.Fatalf("batch %d not set up", i)
		}
		if b.queued != len(fds) {
			t.Fatalf("batch %d: %d queued, want %d", i, b.queued, len(fds))
		}
		if errs := b.wait(); errors.Join(errs...) != nil {
			t.Fatalf("batch %d: %v", i, errs)
		}
	}
	var held []uintptr
	defer func() {
		for _, ctx := range held {
			putContext(ctx)
		}
	}()
	for range aioContexts + 1 {
		ctx, ok := getContext()
		if !ok {
			break
		}
		held = append(held, ctx)
	}
	if len(held) != aioContexts || aioPool.created != aioContexts {
		t.Fatalf("%d contexts held, %d created; want at most %d", len(held), aioPool.created, aioContexts)
	}
	if _, ok := startFsyncs(fds); ok {
		t.Fatal("a batch was set up with every context in use")
	}
	// A FileSync then syncs the ordinary way.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "seg_1.cmp"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := StartFileSync(vfs.Default, dir, "seg_1.cmp")
	if s.batch != nil {
		t.Fatal("a FileSync holds a batch with every context in use")
	}
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
}
