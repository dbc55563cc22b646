package lifecycle

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/internal/par"
	"github.com/summadev/summa/engine/segid"
)

// ErrClosed is returned by Claim once the manager stopped admitting new
// lifecycle claims (index deletion step 2, or shutdown).
var ErrClosed = errors.New("lifecycle: index no longer admits new segment claims")

// ErrAlreadyClaimed is returned when a rewrite tries to claim a source that
// another operation already holds (L08).
var ErrAlreadyClaimed = errors.New("lifecycle: segment already claimed by another operation")

// Manager owns the segment IDs of one index directory.
type Manager struct {
	// fs and dir locate the index directory.
	fs  vfs.FS
	dir string
	// log receives deletion and sweep events.
	log logr.Logger
	// onDelete runs just before an ID's files are removed (the index closes
	// its cached reader there). It runs without mu held.
	onDelete func(segid.ID)
	// deletes counts in-flight file deletions so that index deletion can
	// drain them (D01 step 6).
	deletes sync.WaitGroup

	// mu guards the owner sets below.
	mu struct {
		sync.Mutex
		// nextID is the next ID to hand out.
		// INVARIANT: greater than every ID in live, active, refs and on disk.
		nextID segid.ID
		// live is the metadata owner: IDs referenced by the published generation.
		live map[segid.ID]struct{}
		// active is the active-operation owner: ID -> name of the operation.
		active map[segid.ID]string
		// refs is the tracker's reader reference count per ID (absent = 0).
		refs map[segid.ID]int
		// retired is the tracker's deferred-deletion set: IDs no longer live
		// whose files are removed once no other owner holds them.
		retired map[segid.ID]struct{}
		// deleting holds IDs whose files are being removed right now.
		deleting map[segid.ID]struct{}
		// closed stops new claims.
		closed bool
		// recycle, when set, may take a file instead of its removal.
		recycle func(name string) bool
	}
}

// SetRecycler makes file removal offer each file (its name in the
// directory) to recycle first: a file it takes (true) is no longer under
// its segment name, which is what removing it means to every owner and to
// the sweep; the rest are removed.
func (m *Manager) SetRecycler(recycle func(name string) bool) {
	m.mu.Lock()
	m.mu.recycle = recycle
	m.mu.Unlock()
}

// Options configures a Manager.
type Options struct {
	// Logger receives lifecycle events; the zero value discards them.
	Logger logr.Logger
	// OnDelete runs before an ID's files are removed.
	OnDelete func(segid.ID)
}

// NewManager returns a manager whose metadata owner holds live and whose
// next ID is nextID.
func NewManager(fs vfs.FS, dir string, live []segid.ID, nextID segid.ID, opts Options) *Manager {
	m := &Manager{fs: fs, dir: dir, log: opts.Logger, onDelete: opts.OnDelete}
	if m.log.GetSink() == nil {
		m.log = logr.Discard()
	}
	m.mu.nextID = nextID
	m.mu.live = make(map[segid.ID]struct{}, len(live))
	for _, id := range live {
		m.mu.live[id] = struct{}{}
		if id >= m.mu.nextID {
			m.mu.nextID = id + 1
		}
	}
	m.mu.active = make(map[segid.ID]string)
	m.mu.refs = make(map[segid.ID]int)
	m.mu.retired = make(map[segid.ID]struct{})
	m.mu.deleting = make(map[segid.ID]struct{})
	return m
}

// NextID returns the next ID the manager will hand out; metadata persists it
// so that IDs are never reused within an index.
func (m *Manager) NextID() segid.ID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.nextID
}

// Close stops new claims (deletion step 2 and shutdown). Existing claims,
// references and deferred deletions continue until they are released.
func (m *Manager) Close() {
	m.mu.Lock()
	m.mu.closed = true
	m.mu.Unlock()
}

// Publish installs a new metadata owner set after a successful metadata
// rename (L03, L04). IDs that leave the live set are retired: their files
// are deleted once no reader and no operation holds them.
func (m *Manager) Publish(live []segid.ID) {
	m.mu.Lock()
	next := make(map[segid.ID]struct{}, len(live))
	for _, id := range live {
		next[id] = struct{}{}
	}
	var retired []segid.ID
	for id := range m.mu.live {
		if _, ok := next[id]; !ok {
			m.mu.retired[id] = struct{}{}
			retired = append(retired, id)
		}
	}
	m.mu.live = next
	m.mu.Unlock()
	m.deleteIfUnowned(retired...)
}

// Ref adds a reader reference to each ID (tracker owner).
func (m *Manager) Ref(ids ...segid.ID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		m.mu.refs[id]++
	}
}

// Unref drops a reader reference from each ID; the last reader of a
// retired ID triggers its deferred deletion.
func (m *Manager) Unref(ids ...segid.ID) {
	var zero []segid.ID
	m.mu.Lock()
	for _, id := range ids {
		n := m.mu.refs[id] - 1
		if n < 0 {
			m.mu.Unlock()
			panic(fmt.Sprintf("lifecycle: unref of segment %s without a reference", id))
		}
		if n == 0 {
			delete(m.mu.refs, id)
			zero = append(zero, id)
		} else {
			m.mu.refs[id] = n
		}
	}
	m.mu.Unlock()
	m.deleteIfUnowned(zero...)
}

// Owners describes who holds an ID; tests and diagnostics use it.
type Owners struct {
	// Live is true when the published metadata references the ID.
	Live bool
	// Active names the operation holding the ID, if any.
	Active string
	// Refs counts reader references.
	Refs int
	// Retired is true when deletion is deferred until the last reader drops.
	Retired bool
}

// Owned reports whether any owner holds the ID.
func (o Owners) Owned() bool { return o.Live || o.Active != "" || o.Refs > 0 }

// OwnersOf returns the owners of id.
func (m *Manager) OwnersOf(id segid.ID) Owners {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ownersLocked(id)
}

// ownersLocked REQUIRES: m.mu held.
func (m *Manager) ownersLocked(id segid.ID) Owners {
	_, live := m.mu.live[id]
	_, retired := m.mu.retired[id]
	return Owners{Live: live, Active: m.mu.active[id], Refs: m.mu.refs[id], Retired: retired}
}

// ActiveOperations returns the number of IDs held by active operations.
func (m *Manager) ActiveOperations() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.mu.active)
}

// Retired returns the IDs whose deletion is deferred, sorted.
func (m *Manager) Retired() []segid.ID {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]segid.ID, 0, len(m.mu.retired))
	for id := range m.mu.retired {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// WaitDeletes waits for in-flight file deletions (D01 step 6).
func (m *Manager) WaitDeletes() { m.deletes.Wait() }

// deleteIfUnowned removes every seg_<id>.* file of each id no owner holds
// (L02). It is the only path that deletes segment files. The files of all
// the ids are found in one listing of the directory: a merge retiring
// many sources lists it once, not once per source.
func (m *Manager) deleteIfUnowned(ids ...segid.ID) {
	m.mu.Lock()
	var del []segid.ID
	for _, id := range ids {
		if m.ownersLocked(id).Owned() {
			continue
		}
		if _, busy := m.mu.deleting[id]; busy {
			continue
		}
		m.mu.deleting[id] = struct{}{}
		m.deletes.Add(1)
		del = append(del, id)
	}
	m.mu.Unlock()
	if len(del) == 0 {
		return
	}
	defer m.deletes.Add(-len(del))

	if m.onDelete != nil {
		for _, id := range del {
			m.onDelete(id)
		}
	}
	errs := m.removeFiles(del)

	m.mu.Lock()
	for i, id := range del {
		delete(m.mu.deleting, id)
		if errs[i] == nil {
			delete(m.mu.retired, id)
		} else {
			// The ID stays retired (tracker-owned) and unowned otherwise:
			// the next sweep at exclusive open or by the optimizer
			// removes it.
			m.mu.retired[id] = struct{}{}
		}
	}
	m.mu.Unlock()
	for i, id := range del {
		if errs[i] != nil {
			m.log.Error(errs[i], "Segment file deletion failed; left for the next sweep", "segment", id.String())
			continue
		}
		m.log.V(1).Info("Segment files deleted", "segment", id.String())
	}
}

// parallelRemoveMin is the number of files from which removeFiles
// removes them concurrently: an unlink frees the file's cached pages in
// the caller, so the sources of a large merge (80 segments at once) took
// tens of milliseconds one after the other; a few files go in order.
const parallelRemoveMin = 8

// removeFiles deletes every file of each id, whatever its suffix (Q02),
// and returns per id the first failure (in listing order).
func (m *Manager) removeFiles(ids []segid.ID) []error {
	errs := make([]error, len(ids))
	names, err := m.fs.List(m.dir)
	if err != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("lifecycle: list %s: %w", m.dir, err)
		}
		return errs
	}
	index := make(map[segid.ID]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	type target struct {
		i    int // the file's id, an index into ids
		name string
	}
	var targets []target
	for _, name := range names {
		fid, _, ok := segid.ParseFileName(name)
		if !ok {
			continue
		}
		if i, want := index[fid]; want {
			targets = append(targets, target{i: i, name: name})
		}
	}
	fails := make([]error, len(targets))
	m.mu.Lock()
	recycle := m.mu.recycle
	m.mu.Unlock()
	remove := func(k int) {
		if recycle != nil && recycle(targets[k].name) {
			return
		}
		if err := m.fs.Remove(m.fs.PathJoin(m.dir, targets[k].name)); err != nil && !isNotExist(err) {
			fails[k] = fmt.Errorf("lifecycle: remove %s: %w", targets[k].name, err)
		}
	}
	if len(targets) >= parallelRemoveMin {
		par.Do(len(targets), remove)
	} else {
		for k := range targets {
			remove(k)
		}
	}
	for k, t := range targets {
		if fails[k] != nil && errs[t.i] == nil {
			errs[t.i] = fails[k]
		}
	}
	return errs
}
