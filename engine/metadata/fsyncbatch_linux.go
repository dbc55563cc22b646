package metadata

import (
	"runtime"
	"sync"
	"syscall"
	"unsafe"
)

// iocbCmdFsync is IOCB_CMD_FSYNC: an asynchronous fsync (Linux 4.18).
const iocbCmdFsync = 2

// iocb is struct iocb of linux/aio_abi.h (64 bytes, little-endian layout
// of aio_key and aio_rw_flags).
type iocb struct {
	data      uint64
	key       uint32
	rwFlags   uint32
	opcode    uint16
	reqprio   int16
	fildes    uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

// ioEvent is struct io_event of linux/aio_abi.h.
type ioEvent struct {
	data uint64
	obj  uint64
	res  int64
	res2 int64
}

// AIO contexts are kept for the life of the process: io_destroy waits for
// an RCU grace period (tens of milliseconds), far longer than the fsyncs.
const (
	// aioEvents is the capacity of one context; larger batches are not
	// set up.
	aioEvents = 64
	// aioContexts bounds the contexts kept (batches running at once, one
	// per index committing); past it a batch is not set up.
	aioContexts = 8
)

// aioPool holds the free AIO contexts and counts the ones created.
var aioPool struct {
	sync.Mutex
	free    []uintptr
	created int
}

// getContext returns a free AIO context, creating one if fewer than
// aioContexts exist; ok is false if none can be had.
func getContext() (ctx uintptr, ok bool) {
	aioPool.Lock()
	defer aioPool.Unlock()
	if n := len(aioPool.free); n > 0 {
		ctx = aioPool.free[n-1]
		aioPool.free = aioPool.free[:n-1]
		return ctx, true
	}
	if aioPool.created >= aioContexts {
		return 0, false
	}
	if _, _, e := syscall.Syscall(syscall.SYS_IO_SETUP, aioEvents, uintptr(unsafe.Pointer(&ctx)), 0); e != 0 {
		return 0, false
	}
	aioPool.created++
	return ctx, true
}

// putContext returns a context with no operation in flight to the pool.
func putContext(ctx uintptr) {
	aioPool.Lock()
	aioPool.free = append(aioPool.free, ctx)
	aioPool.Unlock()
}

// fsyncBatch fsyncs every descriptor at once and returns each one's error.
// The fsyncs go to the kernel as one batch of asynchronous fsyncs
// (io_submit of IOCB_CMD_FSYNC), which it runs concurrently in its worker
// threads while this thread waits for all of them: one goroutine per fsync
// would need a scheduler slot each (GOMAXPROCS) and, with two, runs four
// fsyncs in two waves. Each is the same vfs_fsync an fsync(2) makes, with
// the same error reporting. ok is false, and nothing was synced, when the
// batch cannot be set up (no AIO in the kernel, or its limits reached):
// the caller syncs another way. A descriptor the kernel refuses to queue
// is fsynced directly, which reports why.
func fsyncBatch(fds []uintptr) (errs []error, ok bool) {
	if len(fds) == 0 || len(fds) > aioEvents {
		return nil, false
	}
	ctx, ok := getContext()
	if !ok {
		return nil, false
	}
	cbs := make([]iocb, len(fds))
	ptrs := make([]*iocb, len(fds))
	for i, fd := range fds {
		cbs[i] = iocb{data: uint64(i), opcode: iocbCmdFsync, fildes: uint32(fd)}
		ptrs[i] = &cbs[i]
	}
	r, _, e := syscall.Syscall(syscall.SYS_IO_SUBMIT, ctx, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0])))
	runtime.KeepAlive(cbs)
	if e != 0 {
		putContext(ctx)
		return nil, false // nothing was queued
	}
	submitted := int(r)
	errs = make([]error, len(fds))
	events := make([]ioEvent, submitted)
	got := 0
	for got < submitted {
		want := uintptr(submitted - got)
		n, _, e := syscall.Syscall6(syscall.SYS_IO_GETEVENTS, ctx, want, want, uintptr(unsafe.Pointer(&events[got])), 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			// Waiting failed (it cannot, short of a kernel bug): the
			// results are unknown, and the context, which may still
			// complete them, is not reused.
			for i := range submitted {
				errs[i] = e
			}
			break
		}
		got += int(n)
	}
	if got == submitted {
		putContext(ctx)
	}
	for _, ev := range events[:got] {
		if ev.res < 0 && ev.data < uint64(len(errs)) {
			errs[ev.data] = syscall.Errno(-ev.res)
		}
	}
	for i := submitted; i < len(fds); i++ {
		errs[i] = syscall.Fsync(int(fds[i]))
	}
	return errs, true
}
