package metadata

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// faultAIO stands in for the kernel's asynchronous I/O: it completes the
// fsync of each descriptor of fail with that error and every other one
// with all (successfully if zero), refuses to queue the descriptors of refuse (and those
// after them in the same call), hands the completions back newest first,
// at most step at a time, after interrupts interrupted waits, and fails
// every wait with waitErr if set.
type faultAIO struct {
	t          *testing.T
	fail       map[uint32]syscall.Errno
	all        syscall.Errno
	refuse     map[uint32]bool
	step       int
	interrupts int
	waitErr    syscall.Errno
	// data maps a descriptor to the data its completion wrongly carries.
	data map[uint32]uint64
	// onSubmit, if set, is called at each submission of n operations.
	onSubmit func(n int)
	pending  []ioEvent
}

func (k *faultAIO) submit(_ uintptr, cbs []*iocb) int {
	if k.onSubmit != nil {
		k.onSubmit(len(cbs))
	}
	for i, cb := range cbs {
		if cb.opcode != iocbCmdFsync {
			k.t.Errorf("operation %d submitted, want an fsync (%d)", cb.opcode, iocbCmdFsync)
		}
		if k.refuse[cb.fildes] {
			return i
		}
		e, ok := k.fail[cb.fildes]
		if !ok {
			e = k.all
		}
		ev := ioEvent{data: cb.data, res: -int64(e)}
		if d, ok := k.data[cb.fildes]; ok {
			ev.data = d
		}
		k.pending = append(k.pending, ev)
	}
	return len(cbs)
}

func (k *faultAIO) getEvents(_ uintptr, events []ioEvent) (int, syscall.Errno) {
	if k.waitErr != 0 {
		return 0, k.waitErr
	}
	if k.interrupts > 0 {
		k.interrupts--
		return 0, syscall.EINTR
	}
	if len(events) == 0 || len(events) > len(k.pending) {
		// The kernel would block for ever, or write past the buffer.
		k.t.Fatalf("a wait for %d completions with %d pending", len(events), len(k.pending))
	}
	n := min(len(events), k.step)
	for i := range n {
		events[i] = k.pending[len(k.pending)-1-i]
	}
	k.pending = k.pending[:len(k.pending)-n]
	return n, 0
}

// withAIO runs f with k as the kernel's asynchronous I/O.
func withAIO(t *testing.T, k aioKernel, f func()) {
	t.Helper()
	requireAIO(t) // the batch's context is a real one
	defer func(real aioKernel) { aio = real }(aio)
	aio = k
	f()
}

// TestFsyncBatchReportsEachFailureInItsSlot: an asynchronous fsync that
// completes with an error is reported in the slot of its descriptor (in
// the order started, then added), and only there, however the
// completions come back: out of order, a few at a time, after
// interrupted waits.
func TestFsyncBatchReportsEachFailureInItsSlot(t *testing.T) {
	k := &faultAIO{t: t, fail: map[uint32]syscall.Errno{11: syscall.EIO, 13: syscall.ENOSPC, 14: syscall.EIO}, step: 2, interrupts: 2}
	withAIO(t, k, func() {
		b, ok := startFsyncs([]uintptr{10, 11})
		if !ok {
			t.Fatal("batch not set up")
		}
		b.add(12, 13, 14, 15)
		errs := b.wait()
		want := []error{nil, syscall.EIO, nil, syscall.ENOSPC, syscall.EIO, nil}
		if !slices.EqualFunc(errs, want, func(a, b error) bool { return a == b }) {
			t.Fatalf("errors %v, want %v", errs, want)
		}
		if len(k.pending) != 0 {
			t.Fatalf("%d completions never waited for", len(k.pending))
		}
	})
}

// TestFsyncBatchFailedWaitFailsEveryUnreportedFsync: when waiting for the
// completions fails, every fsync whose result is unknown is reported
// failed with the wait's error, and one already known (refused by the
// kernel and synced directly) keeps its own; the context, which may
// still complete them, is not reused.
func TestFsyncBatchFailedWaitFailsEveryUnreportedFsync(t *testing.T) {
	k := &faultAIO{t: t, refuse: map[uint32]bool{uint32(badFd): true}, waitErr: syscall.EINVAL, step: 1}
	withAIO(t, k, func() {
		b, ok := startFsyncs([]uintptr{10, 11, badFd})
		if !ok {
			t.Fatal("batch not set up")
		}
		defer putContext(b.ctx) // back to the pool for the other tests
		errs := b.wait()
		want := []error{syscall.EINVAL, syscall.EINVAL, syscall.EBADF}
		if !slices.EqualFunc(errs, want, func(a, b error) bool { return errors.Is(a, b) }) {
			t.Fatalf("errors %v, want %v", errs, want)
		}
		aioPool.Lock()
		reused := slices.Contains(aioPool.free, b.ctx)
		aioPool.Unlock()
		if reused {
			t.Fatal("the context of a failed wait went back to the pool")
		}
	})
}

// TestFsyncBatchIgnoresACompletionOfNoSlot: a failed completion whose data
// names no fsync of the batch (which a kernel never returns) changes no
// slot and crashes nothing.
func TestFsyncBatchIgnoresACompletionOfNoSlot(t *testing.T) {
	// 12's completion names slot 3, one past the batch's three.
	k := &faultAIO{t: t, fail: map[uint32]syscall.Errno{11: syscall.EIO, 12: syscall.EIO}, data: map[uint32]uint64{12: 3}, step: 3}
	withAIO(t, k, func() {
		b, ok := startFsyncs([]uintptr{10, 11})
		if !ok {
			t.Fatal("batch not set up")
		}
		b.add(12)
		errs := b.wait()
		want := []error{nil, syscall.EIO, nil}
		if !slices.EqualFunc(errs, want, func(a, b error) bool { return a == b }) {
			t.Fatalf("errors %v, want %v", errs, want)
		}
	})
}

// TestC02_SaveOnDiskSyncsThroughTheEarlyBatch: on a real disk, a save
// starts the fsyncs of the unsynced files and the directory as one
// asynchronous batch, before the metadata is written, and an fsync of
// that batch that completes with an error fails the save (a *SyncError
// naming the file) with nothing renamed.
func TestC02_SaveOnDiskSyncsThroughTheEarlyBatch(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"seg_1.cmp", "seg_1.msk"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var submissions []int
	k := &faultAIO{t: t, all: syscall.EIO, step: 8, onSubmit: func(n int) {
		if len(submissions) == 0 {
			if _, err := os.Stat(filepath.Join(dir, TempFileName)); !os.IsNotExist(err) {
				t.Errorf("the early fsyncs were submitted after the metadata file was created (%v)", err)
			}
		}
		submissions = append(submissions, n)
	}}
	withAIO(t, k, func() {
		err := SaveSyncing(vfs.Default, dir, generation(3), []string{"seg_1.cmp", "seg_1.msk"}, nil)
		var se *SyncError
		if !errors.As(err, &se) || se.Name != "seg_1.cmp" || !errors.Is(err, syscall.EIO) {
			t.Fatalf("save with failing asynchronous fsyncs: %v, want a *SyncError for seg_1.cmp with EIO", err)
		}
	})
	if _, err := os.Stat(filepath.Join(dir, FileName)); !os.IsNotExist(err) {
		t.Fatalf("%s after a failed save: %v", FileName, err)
	}
	// The two files and the directory, then the metadata file.
	if !slices.Equal(submissions, []int{3, 1}) {
		t.Fatalf("submissions of %v fsyncs, want [3 1]", submissions)
	}
}
