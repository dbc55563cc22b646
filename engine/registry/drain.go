package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/schema"
)

// drainState is the registry's write gate and drain progress.
type drainState struct {
	mu sync.Mutex
	// cond signals writers reaching zero and drain progress.
	cond *sync.Cond
	// draining refuses new writes.
	draining bool
	// drained is true once everything accepted is committed.
	drained bool
	// writers counts writes admitted and not finished.
	writers int
	// epoch increments at every drain start and resume, so a stale drain
	// loop stops.
	epoch int
	// lastErr is the last commit failure seen by the drain loop.
	lastErr error
}

// DrainStatus reports drain progress.
type DrainStatus struct {
	Draining             bool
	Drained              bool
	UncommittedDocuments int
	ActiveOperations     int
	// LastError is the last commit failure of the drain, if any.
	LastError string
}

func (d *drainState) init() { d.cond = sync.NewCond(&d.mu) }

// beginWrite admits one write unless the registry drains.
func (r *Registry) beginWrite() error {
	d := &r.drain
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return ErrDraining
	}
	d.writers++
	return nil
}

func (r *Registry) endWrite() {
	d := &r.drain
	d.mu.Lock()
	d.writers--
	if d.writers == 0 {
		d.cond.Broadcast()
	}
	d.mu.Unlock()
}

// Add admits documents into the index (see index.Index.Add). While a
// commit finalizer runs it waits for it to end, bounded by ctx, and then
// returns index.ErrBackpressure.
func (h *Handle) Add(ctx context.Context, docs []*schema.Document) error {
	if err := h.r.beginWrite(); err != nil {
		return err
	}
	defer h.r.endWrite()
	if err := h.r.admitWrite(0); err != nil {
		return err
	}
	return h.r.observeWrite(h.retryBackpressure(ctx, func(idx *index.Index) error { return idx.Add(docs) }))
}

// Delete deletes a document by primary key at the next commit.
func (h *Handle) Delete(ctx context.Context, pk string) (existed bool, err error) {
	if err := h.r.beginWrite(); err != nil {
		return false, err
	}
	defer h.r.endWrite()
	if err := h.r.admitWrite(0); err != nil {
		return false, err
	}
	err = h.retryBackpressure(ctx, func(idx *index.Index) error {
		var derr error
		existed, derr = idx.Delete(pk)
		return derr
	})
	return existed, h.r.observeWrite(err)
}

func (h *Handle) retryBackpressure(ctx context.Context, op func(*index.Index) error) error {
	for {
		idx, err := h.Index()
		if err != nil {
			return err
		}
		err = op(idx)
		if !errors.Is(err, index.ErrBackpressure) {
			return err
		}
		select {
		case <-idx.Idle():
		case <-ctx.Done():
			return err // ErrBackpressure, with the engine's reason
		case <-h.Done():
			return ErrIndexDeleting
		}
	}
}

// StartDrain refuses new writes and starts committing everything accepted
// in the background. It is idempotent.
func (r *Registry) StartDrain() {
	d := &r.drain
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return
	}
	d.draining, d.drained, d.lastErr = true, false, nil
	d.epoch++
	r.opt.Pause() // no new maintenance; running BP stops between units
	go r.drainLoop(d.epoch)
}

// Drain starts a drain and waits until it is done or ctx ends.
func (r *Registry) Drain(ctx context.Context) error {
	r.StartDrain()
	stop := context.AfterFunc(ctx, func() {
		r.drain.mu.Lock()
		r.drain.cond.Broadcast()
		r.drain.mu.Unlock()
	})
	defer stop()
	d := &r.drain
	d.mu.Lock()
	defer d.mu.Unlock()
	for !d.drained {
		if ctx.Err() != nil {
			return fmt.Errorf("registry: drain not finished: %w", ctx.Err())
		}
		if !d.draining {
			return errors.New("registry: drain cancelled by resume")
		}
		d.cond.Wait()
	}
	return nil
}

// Resume admits writes again.
func (r *Registry) Resume() {
	d := &r.drain
	d.mu.Lock()
	d.draining, d.drained = false, false
	d.epoch++
	d.cond.Broadcast()
	d.mu.Unlock()
	if r.opt != nil {
		r.opt.Resume()
	}
}

// Draining reports whether writes are refused.
func (r *Registry) Draining() bool {
	r.drain.mu.Lock()
	defer r.drain.mu.Unlock()
	return r.drain.draining
}

// DrainStatus reports drain progress.
func (r *Registry) DrainStatus() DrainStatus {
	d := &r.drain
	d.mu.Lock()
	st := DrainStatus{Draining: d.draining, Drained: d.drained}
	if d.lastErr != nil {
		st.LastError = d.lastErr.Error()
	}
	d.mu.Unlock()
	for _, e := range r.entries() {
		s := e.idx.Status()
		st.UncommittedDocuments += s.UncommittedDocuments
		st.ActiveOperations += s.ActiveOperations
		if e.activeCommit() != nil {
			st.ActiveOperations++
		}
	}
	return st
}

// drainRetry is the pause between drain passes after a failed commit.
const drainRetry = time.Second

// drainPoll is the pause while waiting for maintenance to come to rest.
const drainPoll = 20 * time.Millisecond

// maintenanceRunning counts running maintenance tasks, background and
// explicit.
func (r *Registry) maintenanceRunning() int {
	return r.permits.InUse()
}

// drainLoop waits for admitted writes to finish, then commits every index
// with pending writes until nothing is left, and marks the drain done.
func (r *Registry) drainLoop(epoch int) {
	d := &r.drain
	d.mu.Lock()
	for d.writers > 0 && d.epoch == epoch {
		d.cond.Wait()
	}
	d.mu.Unlock()
	for {
		if r.drainEpoch() != epoch {
			return
		}
		pending, err := r.commitPending()
		d.mu.Lock()
		if d.epoch != epoch {
			d.mu.Unlock()
			return
		}
		d.lastErr = err
		if !pending && err == nil && r.maintenanceRunning() > 0 {
			// Blocking maintenance is brought to rest, never abandoned.
			d.mu.Unlock()
			time.Sleep(drainPoll)
			continue
		}
		if !pending && err == nil {
			d.drained = true
			d.cond.Broadcast()
			d.mu.Unlock()
			r.log.Info("Drained")
			return
		}
		d.mu.Unlock()
		if err != nil {
			r.log.Error(err, "Drain commit failed; retrying")
			time.Sleep(drainRetry)
		}
	}
}

func (r *Registry) drainEpoch() int {
	r.drain.mu.Lock()
	defer r.drain.mu.Unlock()
	return r.drain.epoch
}

// commitPending commits every index with uncommitted writes or a running
// commit; pending reports whether anything was found.
func (r *Registry) commitPending() (pending bool, err error) {
	for _, e := range r.entries() {
		if e.deleting.Load() {
			continue
		}
		t := e.activeCommit()
		if t == nil && e.idx.UncommittedDocuments() == 0 {
			continue
		}
		pending = true
		if t == nil {
			t = r.startCommit(e, e.idx)
		}
		<-t.done
		if t.err != nil && err == nil {
			err = fmt.Errorf("registry: drain commit of %s: %w", e.name, t.err)
		}
	}
	return pending, err
}
