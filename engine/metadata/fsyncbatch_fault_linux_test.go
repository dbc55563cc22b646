package metadata

import (
	"errors"
	"slices"
	"syscall"
	"testing"
)

// faultAIO stands in for the kernel's asynchronous I/O: it completes the
// fsync of each descriptor of fail with that error and every other one
// successfully, refuses to queue the descriptors of refuse (and those
// after them in the same call), hands the completions back newest first,
// at most step at a time, after interrupts interrupted waits, and fails
// every wait with waitErr if set.
type faultAIO struct {
	t          *testing.T
	fail       map[uint32]syscall.Errno
	refuse     map[uint32]bool
	step       int
	interrupts int
	waitErr    syscall.Errno
	// data maps a descriptor to the data its completion wrongly carries.
	data    map[uint32]uint64
	pending []ioEvent
}

func (k *faultAIO) submit(_ uintptr, cbs []*iocb) int {
	for i, cb := range cbs {
		if cb.opcode != iocbCmdFsync {
			k.t.Errorf("operation %d submitted, want an fsync (%d)", cb.opcode, iocbCmdFsync)
		}
		if k.refuse[cb.fildes] {
			return i
		}
		ev := ioEvent{data: cb.data, res: -int64(k.fail[cb.fildes])}
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
