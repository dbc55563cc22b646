package index

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
)

// CommitResult describes a published generation.
type CommitResult struct {
	// Generation is the published metadata generation.
	Generation uint64
	// Documents is the live document count after the commit.
	Documents uint64
	// DurabilityDegraded is set when the directory fsync after the rename
	// failed: the commit stands, crash durability is degraded (C04).
	DurabilityDegraded bool
}

// Commit flushes the current generation and publishes it as one metadata
// generation. Cancelling ctx before the writer lock is acquired starts
// nothing; after that, ctx only stops the wait: the owned commit task
// finishes publication regardless (C08, C09).
func (idx *Index) Commit(ctx context.Context) (CommitResult, error) {
	if idx.w == nil {
		return CommitResult{}, ErrReadOnly
	}
	w := idx.w
	select {
	case w.guard <- struct{}{}:
	case <-ctx.Done():
		return CommitResult{}, fmt.Errorf("index: commit not started: %w", ctx.Err())
	}
	type outcome struct {
		res CommitResult
		err error
	}
	done := make(chan outcome, 1)
	// The task owns the writer guard and releases it when it ends (C07).
	// The snapshot the publication held goes last, after the guard and
	// the answer: dropping it deletes the files the commit retired (the
	// replaced deletion mask of an upsert), which no longer delays the
	// caller or the next commit. Close still waits for it (open
	// snapshots are drained before shutdown goes on).
	w.releases.Add(1)
	go func() {
		defer w.releases.Done()
		res, release, err := w.runCommit()
		<-w.guard
		done <- outcome{res, err}
		// The caller, readied by the send, waits in this P's next slot:
		// yield so that it runs before the release.
		runtime.Gosched()
		release()
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		return CommitResult{}, fmt.Errorf("index: stopped waiting for the commit, which continues: %w", ctx.Err())
	}
}

// runCommit seals the generation (or resumes the sealed one), waits for the
// workers' flush within the timeout, and runs the finalizer. release
// drops the snapshot a publication held (never nil); the caller runs it
// once the guard is released.
// REQUIRES: the writer guard is held.
func (w *writer) runCommit() (res CommitResult, release func(), err error) {
	release = func() {}
	res, err = w.commitJob(&release)
	return res, release, err
}

// commitJob is runCommit; a publication sets *release.
func (w *writer) commitJob(release *func()) (CommitResult, error) {
	job, err := w.sealOrResume()
	if err != nil {
		return CommitResult{}, err
	}
	// While the workers flush: the committed segments' new masks (their
	// operations are final once sealed); publish takes the plan over.
	// The flush requests just made the workers runnable on this goroutine's
	// processor, next in line after it: yield first, so that a worker's
	// flush, the longer path, starts now rather than after the plan
	// (with one free processor the two run in turn as before).
	runtime.Gosched()
	plan := w.idx.planMasks(job.gen)
	if h := w.idx.opts.Hooks.AfterMaskPlan; h != nil {
		h()
	}
	timer := time.NewTimer(w.idx.opts.CommitFlushTimeout)
	defer timer.Stop()
	for _, d := range job.done {
		select {
		case <-d:
		case <-timer.C:
			// C06: stay paused on this generation; the late worker can only
			// report into this job, which the retried Commit picks up.
			plan.drop()
			return CommitResult{}, ErrCommitFlushTimeout
		}
	}
	if err := job.gen.failure(); err != nil {
		plan.drop()
		return CommitResult{}, w.giveUp(job, err, "Indexing generation failed; its operations are kept for the next commit")
	}
	if len(job.outputs()) == 0 && len(job.gen.pending) == 0 {
		// Nothing was admitted: no new generation, no fsync (and no plan).
		w.resume()
		return w.idx.currentResult(), nil
	}
	res, held, err := w.idx.publish(job, plan)
	if held != nil {
		*release = held.Close
	}
	if errors.Is(err, errOutputSync) {
		// Like a failed generation (C05): the outputs are given up and the
		// operations rebuilt by the next commit.
		return CommitResult{}, w.giveUp(job, err, "Syncing a flushed segment failed; its operations are kept for the next commit")
	}
	if err != nil {
		// C11: the prepared outputs stay owned by the job; workers stay
		// paused; a retried Commit, or the background retry, publishes the
		// same outputs.
		w.hold(err)
		return CommitResult{}, err
	}
	// C09: publication and the primary-key view refresh (the new snapshot)
	// are done; resume the workers last.
	w.resume()
	return res, nil
}

// sealOrResume returns the generation's flush job, creating it (and
// asking every worker to flush) if no commit is pending.
func (w *writer) sealOrResume() (*flushJob, error) {
	w.mu.Lock()
	if w.mu.job != nil {
		job := w.mu.job
		w.mu.Unlock()
		return job, nil
	}
	if w.mu.closed {
		w.mu.Unlock()
		return nil, ErrClosed
	}
	job := newFlushJob(w.mu.gen, len(w.workers))
	w.mu.job = job
	w.mu.idle = make(chan struct{})
	w.mu.Unlock()
	// No batch can be admitted any more (job is set); the admitted ones
	// finish their queue sends before the flush requests follow them.
	// Neither wait happens under w.mu.
	w.sends.Wait()
	for _, wk := range w.workers {
		wk.queue <- task{flush: job}
	}
	return job, nil
}

// giveUp ends a commit whose generation cannot be published (C05): it
// abandons every sibling output and the generation's earlier flushes
// through tracked cleanup, so nothing is published, keeps the accepted
// operations for the next commit to retry, logs why (msg) and returns
// the commit's error.
func (w *writer) giveUp(job *flushJob, err error, msg string) error {
	abandonAll(job.takeResults())
	abandonAll(job.gen.takePrepared())
	w.retry(job.gen)
	w.idx.log.Error(err, msg, "operations", job.gen.ops)
	return fmt.Errorf("%w: %w", ErrGenerationFailed, err)
}

// retry replaces a failed generation by a new one holding the same
// operations: its primary-key view and deletes as they were, its documents
// queued again to the workers. Its outputs were abandoned (C05: nothing
// partial is published); the next commit builds and publishes them all.
// REQUIRES: the writer guard is held.
func (w *writer) retry(failed *generation) {
	w.mu.Lock()
	next := newGeneration()
	next.pending, next.ops = failed.pending, failed.ops
	var sends []sendTask
	for _, t := range failed.tasks {
		t.gen = next
		next.tasks = append(next.tasks, t)
		sends = append(sends, sendTask{worker: w.nextWorkerLocked(), task: t})
	}
	// Counted before the next generation admits anything, so the next
	// seal waits for these sends too.
	w.sends.Add(1)
	w.mu.job, w.mu.held = nil, nil
	w.mu.gen = next
	close(w.mu.idle)
	w.mu.Unlock()
	defer w.sends.Done()
	for _, st := range sends {
		st.worker.queue <- st.task
	}
}

// resume starts a new generation and admits ingestion again; a held
// publication is over.
func (w *writer) resume() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.background && w.mu.held != nil {
		w.mu.retries.Succeeded++
	}
	w.mu.job, w.mu.held = nil, nil
	w.mu.gen = newGeneration()
	close(w.mu.idle)
}

// takeResults removes and returns the workers' outputs.
func (j *flushJob) takeResults() []*prepared {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []*prepared
	for i, p := range j.results {
		if p != nil {
			out = append(out, p)
			j.results[i] = nil
		}
	}
	return out
}

// outputs returns every prepared output of the job without removing them.
func (j *flushJob) outputs() []*prepared {
	j.gen.mu.Lock()
	out := append([]*prepared(nil), j.gen.mu.prepared...)
	j.gen.mu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, p := range j.results {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// IsRetryable reports whether err from Commit leaves the generation intact
// for a retried Commit (flush timeout or publication failure before the
// rename; the latter is also retried in the background).
func IsRetryable(err error) bool {
	return errors.Is(err, ErrCommitFlushTimeout) || errors.Is(err, ErrPublication)
}

// errOutputSync: the fsync of a flushed segment's file failed at the
// commit point's sync round (nothing was committed); the commit gives the
// generation's outputs up and rebuilds them.
var errOutputSync = errors.New("index: flushed segment could not be synced")

// ErrPublication: publication failed before the rename (C11); nothing was
// committed, the prepared segments stay owned, and a retried Commit or the
// writer's background retry (Options.PublicationRetryMin) publishes them.
var ErrPublication = errors.New("index: publication failed before the commit point; retry commit")

// currentResult describes the published generation without changing it.
func (idx *Index) currentResult() CommitResult {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	res := CommitResult{Generation: idx.mu.meta.Generation, DurabilityDegraded: idx.mu.degraded != nil}
	for _, s := range idx.mu.meta.Segments {
		if _, q := idx.mu.quarantine[s.ID]; !q {
			res.Documents += uint64(s.LiveDocuments())
		}
	}
	return res
}
