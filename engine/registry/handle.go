package registry

import (
	"context"

	"github.com/summadev/summa/engine/diskspace"
	"github.com/summadev/summa/engine/index"
)

// Handle is an issued reference to one index. Deletion drains issued
// handles (D01 step 3), so every Handle must be released.
type Handle struct {
	// r is the issuing registry.
	r *Registry
	// e is the index's entry.
	e *entry
}

// Acquire issues a handle on an index.
func (r *Registry) Acquire(name string) (*Handle, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return nil, ErrShuttingDown
	}
	e := r.mu.entries[name]
	if e == nil || e.idx == nil {
		return nil, ErrIndexNotFound
	}
	if e.deleting.Load() {
		return nil, ErrIndexDeleting
	}
	e.hmu.Lock()
	e.handles++
	e.hmu.Unlock()
	return &Handle{r: r, e: e}, nil
}

// Release returns the handle.
func (h *Handle) Release() {
	e := h.e
	e.hmu.Lock()
	e.handles--
	if e.handles == 0 {
		e.hzero.Broadcast()
	}
	e.hmu.Unlock()
}

// Name returns the index name.
func (h *Handle) Name() string { return h.e.name }

// Index returns the index for reading and writing. A handle obtained just
// before a deletion started fails here promptly with ErrIndexDeleting
// instead of waiting on the deletion that needs the handle (D04).
func (h *Handle) Index() (*index.Index, error) {
	if h.e.deleting.Load() {
		return nil, ErrIndexDeleting
	}
	return h.e.idx, nil
}

// Done is closed when the index's deletion starts; waits holding the
// handle must stop then (D01 step 2).
func (h *Handle) Done() <-chan struct{} { return h.e.ctx.Done() }

// Context returns a context cancelled when ctx is or when the index's
// deletion starts.
func (h *Handle) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.e.ctx, cancel)
	return c, func() { stop(); cancel() }
}

// Status is the index's status as the API shows it.
type Status struct {
	index.Status
	// Name is the index name.
	Name string
	// Deleting is true once the deletion started.
	Deleting bool
	// Storage is the data directory's volume (nil when statfs failed).
	Storage *diskspace.State
}

// Status returns the index's status.
func (h *Handle) Status() Status {
	return Status{Status: h.e.idx.Status(), Name: h.e.name, Deleting: h.e.deleting.Load(), Storage: h.r.storageState()}
}

// Statuses returns the status of every index, sorted by name.
func (r *Registry) Statuses() []Status {
	var out []Status
	storage := r.storageState()
	for _, e := range r.entries() {
		out = append(out, Status{Status: e.idx.Status(), Name: e.name, Deleting: e.deleting.Load(), Storage: storage})
	}
	return out
}
