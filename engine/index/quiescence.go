package index

// Quiescence is what an index still runs or holds. After Close every
// count is zero and the workers are stopped: offline maintenance commands
// check it before they exit (M07).
type Quiescence struct {
	// Closed is set once Close started.
	Closed bool
	// WorkersStopped is set once the indexing workers were joined (always
	// set for a read-only index, which has none).
	WorkersStopped bool
	// OpenSnapshots counts snapshots not yet released.
	OpenSnapshots int
	// ActiveOperations counts active-operation claims (outputs, sources).
	ActiveOperations int
	// PendingDeletions counts retired IDs whose files are not deleted yet.
	PendingDeletions int
}

// Quiet reports whether nothing runs or is held any more.
func (q Quiescence) Quiet() bool {
	return q.Closed && q.WorkersStopped && q.OpenSnapshots == 0 && q.ActiveOperations == 0 && q.PendingDeletions == 0
}

// Quiescence returns what the index still runs or holds.
func (idx *Index) Quiescence() Quiescence {
	idx.mu.Lock()
	q := Quiescence{Closed: idx.mu.closed, OpenSnapshots: idx.mu.open}
	idx.mu.Unlock()
	q.WorkersStopped = idx.w == nil || idx.w.stopped.Load()
	q.ActiveOperations = idx.mgr.ActiveOperations()
	q.PendingDeletions = len(idx.mgr.Retired())
	return q
}
