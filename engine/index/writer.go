package index

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/summadev/summa/engine/schema"
)

// writer admits operations into the current generation and hands them to
// the indexing workers.
type writer struct {
	// idx is the owning index.
	idx *Index
	// guard is the writer lock held by a commit task (capacity 1); the task
	// that owns it outlives the request that started it (C07).
	guard chan struct{}
	// workers index documents in parallel.
	workers []*worker
	// workersDone is joined when the writer closes (D01 step 4).
	workersDone sync.WaitGroup
	// cancelWorkers stops long worker loops on close.
	cancelWorkers context.CancelFunc
	// retrier retries a held publication in the background (C11).
	retrier retrier
	// stopOnce closes retrier.stop once.
	stopOnce sync.Once
	// stopped is set once close joined the workers (M07 reports it).
	stopped atomic.Bool
	// sends counts admitted batches whose tasks are still being sent to
	// the workers' queues (outside mu). The seal waits for it before the
	// flush requests; close waits for it before closing the queues.
	// INVARIANT: Add happens under mu after admitLocked succeeded, so no
	// Add can start once a job is sealed or the writer is closed.
	sends sync.WaitGroup
	// releases counts commit tasks that answered and still drop their
	// publication's snapshot (Commit); tests wait for it before they look
	// for the files a commit retired.
	releases sync.WaitGroup
	// background is true while the retrier's attempt runs. Guarded by the
	// writer guard (only its holder reads or writes it).
	background bool

	// mu guards the admission state below.
	mu struct {
		sync.Mutex
		// gen is the generation accepting operations.
		gen *generation
		// job is the generation being committed; while set, ingestion gets
		// ErrBackpressure (C10) and a retried Commit resumes it (C06, C11).
		job *flushJob
		// held is set while job's publication failed before the commit
		// point and awaits a retry (C11); see held.go.
		held *heldPublication
		// retries counts background retries of held publications.
		retries PublicationRetries
		// idle is closed when no commit holds the generation.
		idle chan struct{}
		// nextOpstamp orders operations.
		nextOpstamp uint64
		// rr picks the next worker.
		rr int
		// closed rejects all operations.
		closed bool
	}
}

func newWriter(idx *Index) *writer {
	w := &writer{idx: idx, guard: make(chan struct{}, 1), retrier: newRetrier()}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancelWorkers = cancel
	w.mu.gen = newGeneration()
	w.mu.idle = make(chan struct{})
	close(w.mu.idle)
	w.workers = make([]*worker, idx.opts.IndexingWorkers)
	for i := range w.workers {
		wk := &worker{id: i, idx: idx, queue: make(chan task, 64)}
		wk.reset(w.mu.gen)
		w.workers[i] = wk
		w.workersDone.Add(1)
		go wk.run(ctx, &w.workersDone)
	}
	go w.retryLoop()
	return w
}

// admitLocked checks that the writer accepts operations.
// REQUIRES: w.mu held.
func (w *writer) admitLocked() error {
	switch {
	case w.mu.closed:
		return ErrClosed
	case w.mu.held != nil:
		h := w.mu.held
		return fmt.Errorf("%w: the publication of the previous commit failed before its commit point (%w); "+
			"it is retried in the background (next at %s) or by the next commit",
			ErrBackpressure, h.lastErr, h.nextRetry.UTC().Format(time.RFC3339))
	case w.mu.job != nil:
		return ErrBackpressure
	}
	if err := w.mu.gen.failure(); err != nil {
		return fmt.Errorf("%w: %w; commit to retry the generation", ErrGenerationFailed, err)
	}
	return nil
}

// Add accepts documents into the current generation, all or nothing: they
// become visible and durable at the next successful Commit. A document
// whose primary key exists replaces the old version at that commit.
func (idx *Index) Add(docs []*schema.Document) error {
	if idx.w == nil {
		return ErrReadOnly
	}
	return idx.w.add(docs)
}

func (w *writer) add(docs []*schema.Document) error {
	if len(docs) == 0 {
		return nil
	}
	tasks, err := w.admitDocs(docs)
	if err != nil {
		return err
	}
	// The queue sends may block on a busy worker: never under w.mu. The
	// seal waits for them (sends) before asking the workers to flush, so
	// every task reaches its worker before the generation's flush.
	defer w.sends.Done()
	for _, st := range tasks {
		st.worker.queue <- st.task
	}
	return nil
}

// sendTask is one task and the worker it goes to.
type sendTask struct {
	worker *worker
	task   task
}

// admitDocs admits a batch whole under w.mu: opstamps, the pending
// primary-key view, the generation's task list and each task's worker.
// On success the caller owns one w.sends count and must send the tasks.
func (w *writer) admitDocs(docs []*schema.Document) ([]sendTask, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.admitLocked(); err != nil {
		return nil, err
	}
	gen := w.mu.gen
	ops := make([]uint64, len(docs))
	for i, d := range docs {
		w.mu.nextOpstamp++
		ops[i] = w.mu.nextOpstamp
		if d.PrimaryKey != "" {
			gen.pending[d.PrimaryKey] = pendingOp{opstamp: ops[i]}
		}
	}
	gen.ops += len(docs)
	// Split large batches across workers; enqueueing never fails, so the
	// batch is admitted whole.
	n := len(w.workers)
	chunk := (len(docs) + n - 1) / n
	if chunk < 64 {
		chunk = 64
	}
	var out []sendTask
	for start := 0; start < len(docs); start += chunk {
		end := min(start+chunk, len(docs))
		t := task{docs: docs[start:end], ops: ops[start:end], gen: gen}
		gen.tasks = append(gen.tasks, t)
		out = append(out, sendTask{worker: w.nextWorkerLocked(), task: t})
	}
	w.sends.Add(1)
	return out, nil
}

// nextWorkerLocked picks the next worker, round robin.
// REQUIRES: w.mu is held.
func (w *writer) nextWorkerLocked() *worker {
	wk := w.workers[w.mu.rr%len(w.workers)]
	w.mu.rr++
	return wk
}

// Delete deletes the live document with primary key pk at the next
// commit. It reports whether such a document existed (committed and not
// deleted, or added in the current generation).
func (idx *Index) Delete(pk string) (bool, error) {
	if idx.w == nil {
		return false, ErrReadOnly
	}
	if idx.schema.Primary() < 0 {
		return false, ErrNoPrimaryKey
	}
	return idx.w.delete(pk)
}

func (w *writer) delete(pk string) (bool, error) {
	for {
		w.mu.Lock()
		if err := w.admitLocked(); err != nil {
			w.mu.Unlock()
			return false, err
		}
		gen := w.mu.gen
		if p, ok := gen.pending[pk]; ok {
			w.recordDeleteLocked(gen, pk)
			w.mu.Unlock()
			return !p.deleted, nil
		}
		w.mu.Unlock()
		// The lookup over every committed segment runs without w.mu, so
		// ingestion and status calls never wait for it.
		existed, err := w.lookupCommitted(pk)
		if err != nil {
			return false, err
		}
		w.mu.Lock()
		// Committed visibility changes only when a generation is sealed
		// and published, which replaces w.mu.gen: if it is the same and the
		// key is still untouched, the lookup is current.
		if w.mu.gen == gen && w.admitLocked() == nil {
			if _, touched := gen.pending[pk]; !touched {
				w.recordDeleteLocked(gen, pk)
				w.mu.Unlock()
				return existed, nil
			}
		}
		w.mu.Unlock()
	}
}

// recordDeleteLocked adds a delete of pk to gen.
// REQUIRES: w.mu held.
func (w *writer) recordDeleteLocked(gen *generation, pk string) {
	w.mu.nextOpstamp++
	gen.pending[pk] = pendingOp{opstamp: w.mu.nextOpstamp, deleted: true}
	gen.ops++
}

// lookupCommitted reports whether a live committed document has key pk.
func (w *writer) lookupCommitted(pk string) (bool, error) {
	snap, err := w.idx.Snapshot()
	if err != nil {
		return false, err
	}
	defer snap.Close()
	if h := w.idx.opts.Hooks.DuringPrimaryKeyLookup; h != nil {
		h(pk)
	}
	existed, err := snap.LookupPrimaryKey(pk)
	if err != nil {
		return false, fmt.Errorf("index: look up primary key: %w", err)
	}
	return existed, nil
}

// uncommitted returns the number of accepted, uncommitted operations.
func (w *writer) uncommitted() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.mu.gen.ops
	return n
}

// Idle returns a channel closed when no commit holds the writer, for
// callers that want to wait out ErrBackpressure.
func (idx *Index) Idle() <-chan struct{} {
	if idx.w == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	idx.w.mu.Lock()
	defer idx.w.mu.Unlock()
	return idx.w.mu.idle
}

// UncommittedDocuments returns the number of accepted, uncommitted operations.
func (idx *Index) UncommittedDocuments() int {
	if idx.w == nil {
		return 0
	}
	return idx.w.uncommitted()
}

// close stops the writer: it stops the background retry of a held
// publication, waits for an accepted commit task (or a retry already
// publishing) to release the writer guard (S02), rejects new operations,
// joins the workers (D01 step 4) and abandons unpublished outputs, a held
// generation included (D01 step 5).
func (w *writer) close(ctx context.Context, deleting bool) error {
	w.mu.Lock()
	w.mu.closed = true
	w.mu.Unlock()
	w.stopRetrier()
	if deleting {
		w.cancelWorkers()
	}
	select {
	case w.guard <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("index: waiting for the running commit: %w", ctx.Err())
	}
	defer func() { <-w.guard }()
	// With the guard held and stop closed the retrier cannot start an
	// attempt; it returns at once.
	select {
	case <-w.retrier.done:
	case <-ctx.Done():
		return fmt.Errorf("index: waiting for the publication retrier: %w", ctx.Err())
	}
	w.cancelWorkers()
	w.sends.Wait() // admitted batches still being sent; closed: no new ones
	for _, wk := range w.workers {
		close(wk.queue)
	}
	w.workersDone.Wait()
	w.stopped.Store(true)
	w.mu.Lock()
	job, gen := w.mu.job, w.mu.gen
	w.mu.job, w.mu.held = nil, nil
	w.mu.Unlock()
	if job != nil && !job.published {
		abandonAll(job.takeResults())
		abandonAll(job.gen.takePrepared())
	}
	abandonAll(gen.takePrepared())
	return nil
}
