package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/diskspace"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/optimizer"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segment"
)

// LockFileName is the data-directory lock: one server or doctor at a time.
// It starts with a dot, so no index (a DNS-1123 name) can collide with it.
const LockFileName = ".summa.lock"

// DeletingMarker marks an index directory whose deletion has started.
const DeletingMarker = ".deleting"

// Options configure a registry.
type Options struct {
	// Logger receives registry events.
	Logger logr.Logger
	// Index are the options every index is opened with. When its Cache is
	// nil, Open makes one of segment.DefaultCacheBytes that every index of
	// the registry shares: the process's one block cache.
	Index index.Options
	// Optimizer configures background maintenance (Threads 0: off).
	Optimizer optimizer.Config
	// Reorder budgets every BP pass, background and manual.
	Reorder index.ReorderOptions
	// MinFreeBytes is the volume's reserve: below it, ingestion, commits
	// and maintenance are refused (storage.go); 0 keeps none,
	// diskspace.AutoReserve takes diskspace.DefaultReserve.
	MinFreeBytes int64
}

// Registry is the set of indexes of one data directory.
type Registry struct {
	// fs and dir locate the data directory.
	fs  vfs.FS
	dir string
	// opts are the registry's options.
	opts Options
	// log is the registry's logger.
	log logr.Logger
	// lock is the data-directory lock.
	lock io.Closer
	// deletions tracks detached deletions (D02).
	deletions sync.WaitGroup
	// stats measures commits for the drain estimate.
	stats commitStats
	// drain is the drain state.
	drain drainState
	// permits bound concurrent maintenance, background and explicit (M04).
	permits *optimizer.Permits
	// opt is the background maintenance supervisor.
	opt *optimizer.Optimizer
	// space watches the data directory's volume (storage.go).
	space *diskspace.Monitor

	// mu guards entries and closed.
	mu struct {
		sync.Mutex
		// entries holds every index by name, including ones being deleted.
		entries map[string]*entry
		// closed rejects new registry requests (S02 first step).
		closed bool
	}
}

// entry is one index of the registry.
type entry struct {
	// name and dir identify the index.
	name, dir string
	// lease serializes open, create and delete of this name (capacity 1).
	lease chan struct{}
	// idx is the open index; nil until created.
	idx *index.Index
	// ctx is cancelled at deletion step 2: maintenance and waiters that
	// hold handles stop waiting.
	ctx    context.Context
	cancel context.CancelFunc
	// deleting is set once the .deleting marker exists.
	deleting atomic.Bool
	// deleted is closed when the directory is gone.
	deleted chan struct{}
	// handles counts issued handles; zero is signalled on hmu's cond.
	hmu     sync.Mutex
	handles int
	hzero   *sync.Cond
	// committer runs the owned commit task (C07).
	committer committer
}

func newEntry(name, dir string) *entry {
	e := &entry{name: name, dir: dir, lease: make(chan struct{}, 1), deleted: make(chan struct{})}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.hzero = sync.NewCond(&e.hmu)
	return e
}

// Open takes the data-directory lock, finishes deletions interrupted by a
// crash (D03), and opens every index through the engine's locked writer
// opener. A second process fails fast with ErrDataDirLocked, touching
// nothing.
func Open(fs vfs.FS, dir string, opts Options) (*Registry, error) {
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if opts.Index.Logger.GetSink() == nil {
		opts.Index.Logger = opts.Logger
	}
	if opts.Index.Cache == nil {
		opts.Index.Cache = segment.NewCache(segment.DefaultCacheBytes)
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("registry: create data directory %s: %w", dir, err)
	}
	lock, err := LockDataDir(fs, dir)
	if err != nil {
		return nil, err
	}
	r := &Registry{fs: fs, dir: dir, opts: opts, log: opts.Logger, lock: lock,
		space: diskspace.NewMonitor(dir, opts.MinFreeBytes)}
	r.mu.entries = make(map[string]*entry)
	r.stats.init()
	r.drain.init()
	if d, err := probeFsync(fs, dir); err == nil {
		r.stats.setFsync(d)
	} else {
		r.log.Error(err, "Fsync probe failed")
	}
	if err := r.openAll(); err != nil {
		lock.Close()
		return nil, err
	}
	if opts.Optimizer.Logger.GetSink() == nil {
		opts.Optimizer.Logger = opts.Logger
	}
	if opts.Optimizer.Storage == nil {
		opts.Optimizer.Storage = r.storageForOptimizer
	}
	r.permits = optimizer.NewPermits(opts.Optimizer.Threads)
	r.opt = optimizer.New(opts.Optimizer, r.permits)
	r.opt.Start(r.targets)
	return r, nil
}

// LockDataDir takes the data-directory lock (LockFileName) that the
// server, the doctor and a backup hold for as long as they use dir. It
// fails with ErrDataDirLocked while another process (or another holder in
// this process) has it. The lock file is created if missing.
func LockDataDir(fs vfs.FS, dir string) (io.Closer, error) {
	lock, err := fs.Lock(fs.PathJoin(dir, LockFileName))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDataDirLocked, dir, err)
	}
	return lock, nil
}

// openAll removes marked directories and opens the others.
func (r *Registry) openAll() error {
	names, err := r.fs.List(r.dir)
	if err != nil {
		return fmt.Errorf("registry: list %s: %w", r.dir, err)
	}
	sort.Strings(names)
	if err := r.removeTrash(names); err != nil {
		return err
	}
	for _, name := range names {
		if !ValidIndexName(name) {
			continue
		}
		dir := r.fs.PathJoin(r.dir, name)
		if st, err := r.fs.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		// D03: a deletion crashed after its marker; finish it first.
		if marked, err := r.finishMarkedRemoval(dir); err != nil {
			return fmt.Errorf("registry: finish the interrupted deletion of index %s: %w", name, err)
		} else if marked {
			r.log.Info("Finished an interrupted index deletion", "index", name)
			continue
		}
		idx, err := index.Open(r.fs, dir, r.opts.Index)
		if errors.Is(err, index.ErrNotFound) {
			continue // not an index directory
		}
		if err != nil {
			return fmt.Errorf("registry: open index %s: %w", name, err)
		}
		e := newEntry(name, dir)
		e.idx = idx
		r.mu.entries[name] = e
		st := idx.Status()
		r.log.Info("Index opened", "index", name, "generation", st.Generation, "documents", st.Documents,
			"quarantined", len(st.Quarantined))
	}
	return nil
}

// Create creates an index, or does nothing if it exists with the same
// schema (created is false then). It returns after the directory and the
// first metadata are durable.
func (r *Registry) Create(ctx context.Context, name string, s *schema.Schema) (created bool, err error) {
	return r.create(ctx, name, s, "")
}

// CreateCopy is Create for a follower's copy of a leader's index: a new
// index takes the leader's UID (metadata.Metadata.UID).
func (r *Registry) CreateCopy(ctx context.Context, name string, s *schema.Schema, uid string) (created bool, err error) {
	return r.create(ctx, name, s, uid)
}

// create is Create with the new index's UID (empty: a random one).
func (r *Registry) create(ctx context.Context, name string, s *schema.Schema, uid string) (created bool, err error) {
	if !ValidIndexName(name) {
		return false, fmt.Errorf("%w: %q", ErrInvalidIndexName, name)
	}
	r.mu.Lock()
	if r.mu.closed {
		r.mu.Unlock()
		return false, ErrShuttingDown
	}
	e := r.mu.entries[name]
	if e == nil {
		e = newEntry(name, r.fs.PathJoin(r.dir, name))
		r.mu.entries[name] = e
	}
	r.mu.Unlock()
	if e.deleting.Load() { // D04: checked before waiting for the lease
		return false, ErrIndexDeleting
	}
	if err := e.acquireLease(ctx); err != nil {
		return false, err
	}
	defer e.releaseLease()
	if e.deleting.Load() { // D04: and again after acquiring it
		return false, ErrIndexDeleting
	}
	if e.idx != nil {
		if !e.idx.Schema().Equal(s) {
			return false, ErrIndexExists
		}
		return false, nil
	}
	// A deletion of this name whose step 7 failed left its directory with
	// the marker: finish it, so that the new index starts empty and never
	// reopens the deleted one's documents. Until it is finished, the name
	// is still being deleted.
	if _, err := r.finishMarkedRemoval(e.dir); err != nil {
		r.dropIfEmpty(e)
		return false, fmt.Errorf("registry: create index %s: %w: %w", name, ErrIndexDeleting, err)
	}
	opts := r.opts.Index
	opts.UID = uid
	idx, err := index.Create(r.fs, e.dir, s, opts)
	if err != nil {
		r.dropIfEmpty(e)
		if errors.Is(err, index.ErrExists) {
			return false, ErrIndexExists
		}
		return false, fmt.Errorf("registry: create index %s: %w", name, err)
	}
	if err := metadata.SyncDir(r.fs, r.dir); err != nil {
		r.log.Error(err, "Data directory sync after create failed", "index", name)
	}
	r.mu.Lock()
	e.idx = idx
	r.mu.Unlock()
	r.log.Info("Index created", "index", name)
	return true, nil
}

// dropIfEmpty forgets an entry whose creation failed.
func (r *Registry) dropIfEmpty(e *entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.idx == nil && r.mu.entries[e.name] == e {
		delete(r.mu.entries, e.name)
	}
}

func (e *entry) acquireLease(ctx context.Context) error {
	select {
	case e.lease <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("registry: waiting for index %s: %w", e.name, ctx.Err())
	case <-e.deleted:
		return ErrIndexNotFound
	}
}

func (e *entry) releaseLease() { <-e.lease }

// Names returns the names of the open indexes, sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for name, e := range r.mu.entries {
		if e.idx != nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// entries returns the entries with an index, sorted by name.
func (r *Registry) entries() []*entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*entry, 0, len(r.mu.entries))
	for _, e := range r.mu.entries {
		if e.idx != nil {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Dir returns the data directory.
func (r *Registry) Dir() string { return r.dir }
