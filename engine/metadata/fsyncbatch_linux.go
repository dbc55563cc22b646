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
	// aioEvents is the capacity of one context: the most fsyncs one
	// batch holds.
	aioEvents = 64
	// aioContexts bounds the contexts kept (batches running at once: per
	// index committing, the save's and one per FileSync in flight, the
	// commit's flushed segments and masks); past it a batch is not set up
	// and the caller syncs another way.
	aioContexts = 32
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

// aioKernel is the part of the kernel's asynchronous I/O a batch uses.
// Tests replace it (aio) to complete fsyncs with errors and to interrupt
// or fail waits, which a healthy disk never does.
type aioKernel interface {
	// submit queues the operations cbs on context ctx and returns how
	// many it queued, a prefix of cbs (none if it refused the first).
	submit(ctx uintptr, cbs []*iocb) int
	// getEvents waits until len(events) operations of ctx completed,
	// writes them into events and returns how many it wrote (fewer if a
	// signal interrupted the wait).
	getEvents(ctx uintptr, events []ioEvent) (int, syscall.Errno)
}

// aio is the kernel's asynchronous I/O.
var aio aioKernel = linuxAIO{}

// linuxAIO makes the io_submit and io_getevents system calls.
type linuxAIO struct{}

func (linuxAIO) submit(ctx uintptr, cbs []*iocb) int {
	r, _, e := syscall.Syscall(syscall.SYS_IO_SUBMIT, ctx, uintptr(len(cbs)), uintptr(unsafe.Pointer(&cbs[0])))
	if e != 0 {
		return 0
	}
	return int(r)
}

func (linuxAIO) getEvents(ctx uintptr, events []ioEvent) (int, syscall.Errno) {
	n := uintptr(len(events))
	r, _, e := syscall.Syscall6(syscall.SYS_IO_GETEVENTS, ctx, n, n, uintptr(unsafe.Pointer(&events[0])), 0, 0)
	return int(r), e
}

// fsyncs is a batch of asynchronous fsyncs (io_submit of IOCB_CMD_FSYNC),
// which the kernel runs concurrently in its worker threads while the
// caller goes on and, at wait, one thread waits for all of them: one
// goroutine per fsync would need a scheduler slot each (GOMAXPROCS) and,
// with two, runs four fsyncs in two waves. Each is the same vfs_fsync an
// fsync(2) makes, with the same error reporting.
type fsyncs struct {
	// ctx is the AIO context.
	ctx uintptr
	// errs holds each fsync's error, by the order of start and add.
	errs []error
	// queued counts the fsyncs submitted and not yet waited for.
	queued int
}

// startFsyncs submits an fsync of every descriptor. ok is false, and
// nothing was submitted, when the batch cannot be set up (no AIO in the
// kernel, or its limits reached): the caller syncs another way.
func startFsyncs(fds []uintptr) (b *fsyncs, ok bool) {
	if len(fds) > aioEvents {
		return nil, false
	}
	ctx, ok := getContext()
	if !ok {
		return nil, false
	}
	b = &fsyncs{ctx: ctx}
	if len(fds) > 0 && b.submit(fds, false) == 0 {
		putContext(ctx)
		return nil, false
	}
	return b, true
}

// add submits an fsync of each descriptor into the batch (or, past the
// batch's capacity or if the kernel refuses one, fsyncs it directly).
func (b *fsyncs) add(fds ...uintptr) {
	if len(b.errs)+len(fds) > aioEvents {
		for _, fd := range fds {
			b.errs = append(b.errs, syscall.Fsync(int(fd)))
		}
		return
	}
	b.submit(fds, true)
}

// submit queues fds and returns the number queued. The kernel queues a
// prefix; the ones it refuses are fsynced directly (which reports why),
// unless none was queued and direct is false: then fds are not recorded.
func (b *fsyncs) submit(fds []uintptr, direct bool) int {
	base := len(b.errs)
	b.errs = append(b.errs, make([]error, len(fds))...)
	cbs := make([]iocb, len(fds))
	ptrs := make([]*iocb, len(fds))
	for i, fd := range fds {
		cbs[i] = iocb{data: uint64(base + i), opcode: iocbCmdFsync, fildes: uint32(fd)}
		ptrs[i] = &cbs[i]
	}
	n := aio.submit(b.ctx, ptrs)
	runtime.KeepAlive(cbs)
	if n == 0 && !direct {
		b.errs = b.errs[:base]
		return 0
	}
	b.queued += n
	for i := n; i < len(fds); i++ {
		b.errs[base+i] = syscall.Fsync(int(fds[i]))
	}
	return n
}

// wait waits for every queued fsync and returns each fsync's error, in
// the order they were started and added. The batch is over.
func (b *fsyncs) wait() []error {
	events := make([]ioEvent, b.queued)
	got := 0
	for got < len(events) {
		n, e := aio.getEvents(b.ctx, events[got:])
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			// Waiting failed (it cannot, short of a kernel bug): the
			// results are unknown, and the context, which may still
			// complete them, is not reused.
			for i := range b.errs {
				if b.errs[i] == nil {
					b.errs[i] = e
				}
			}
			return b.errs
		}
		got += n
	}
	for _, ev := range events {
		if ev.res < 0 && ev.data < uint64(len(b.errs)) {
			b.errs[ev.data] = syscall.Errno(-ev.res)
		}
	}
	putContext(b.ctx)
	return b.errs
}
