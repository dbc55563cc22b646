// Package index is the engine's index: immutable segments published through
// metadata.json, owned by the lifecycle manager, written by parallel
// indexing workers and read through refcounted snapshots.
package index

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/lifecycle"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// LockFileName is the single-writer lock file inside an index directory.
const LockFileName = "LOCK"

// Index is one open index directory.
type Index struct {
	// fs and dir locate the index.
	fs  vfs.FS
	dir string
	// schema is the index's schema (immutable).
	schema *schema.Schema
	// opts are the effective options.
	opts Options
	// log is opts.Logger with the index directory.
	log logr.Logger
	// readOnly is true for OpenReadOnly: nothing on disk is ever mutated.
	readOnly bool
	// lock is the OS single-writer lock (nil when read-only).
	lock io.Closer
	// mgr owns every segment ID of the directory.
	mgr *lifecycle.Manager
	// w is the writer (nil when read-only).
	w *writer
	// spares creates the commit path's new files from ready spares (nil
	// when read-only; see spareFS).
	spares *spareFS

	// metaMu serializes metadata mutations (C01): publication holds it from
	// building the next generation until the in-memory state matches it.
	metaMu sync.Mutex

	// mu guards the published state below.
	mu struct {
		sync.Mutex
		// meta is the published generation.
		meta *metadata.Metadata
		// current is the snapshot of meta that new searchers receive.
		current *Snapshot
		// readers caches one open reader per live segment.
		readers map[segid.ID]*segment.Reader
		// masks caches each loaded deletion-mask generation.
		masks map[segid.ID]*roaring.Bitmap
		// quarantine lists metadata-live segments that failed to open, with
		// the reason; they are excluded from search, never dropped (Q05).
		quarantine map[segid.ID]string
		// degraded is the last directory-fsync failure after a rename (C04).
		degraded error
		// open counts snapshots not yet released (including current).
		open int
		// closed is set once Close started.
		closed bool
		// changed is closed when the next current view is installed (nil
		// until someone waits: see Changes).
		changed chan struct{}
	}
	// drained is signalled when mu.open drops.
	drained *sync.Cond
}

// Create creates an index with schema s in dir, or opens it if it already
// exists with the same schema. It returns after the directory and the
// first metadata generation are durable.
func Create(fs vfs.FS, dir string, s *schema.Schema, opts Options) (*Index, error) {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("index: create %s: %w", dir, err)
	}
	// Sync the parent so that the new directory entry survives a crash
	// before the first metadata generation is acknowledged.
	if err := metadata.SyncDir(fs, fs.PathDir(dir)); err != nil {
		return nil, fmt.Errorf("index: create %s: %w", dir, err)
	}
	lock, err := lockDir(fs, dir)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.Load(fs, dir)
	switch {
	case errors.Is(err, metadata.ErrNotFound):
		uid := opts.UID
		if uid == "" {
			if uid, err = metadata.NewUID(); err != nil {
				lock.Close()
				return nil, fmt.Errorf("index: create %s: %w", dir, err)
			}
		}
		meta = &metadata.Metadata{Version: metadata.FormatVersion, Schema: s, NextID: 1, UID: uid}
		if err := metadata.Save(fs, dir, meta); err != nil {
			lock.Close()
			return nil, fmt.Errorf("index: create %s: %w", dir, err)
		}
	case err != nil:
		lock.Close()
		return nil, fmt.Errorf("index: create %s: %w", dir, err)
	case !meta.Schema.Equal(s):
		lock.Close()
		return nil, ErrExists
	}
	return openLocked(fs, dir, lock, meta, opts)
}

// Open opens an existing index for writing. It takes the OS single-writer
// lock before reading metadata (Q04), sweeps orphans (Q01) and opens every
// metadata-live segment, quarantining the ones that fail (Q05).
func Open(fs vfs.FS, dir string, opts Options) (*Index, error) {
	lock, err := lockDir(fs, dir)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.Load(fs, dir)
	if err != nil {
		lock.Close()
		if errors.Is(err, metadata.ErrNotFound) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("index: open %s: %w", dir, err)
	}
	return openLocked(fs, dir, lock, meta, opts)
}

// OpenReadOnly opens an index for searching without the writer lock. It
// never mutates the directory (Q03): no sweep, no writer, no publication.
func OpenReadOnly(fs vfs.FS, dir string, opts Options) (*Index, error) {
	meta, err := metadata.Load(fs, dir)
	if err != nil {
		if errors.Is(err, metadata.ErrNotFound) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("index: open %s read-only: %w", dir, err)
	}
	idx := newIndex(fs, dir, meta, opts)
	idx.readOnly = true
	idx.loadSegments(meta)
	return idx, nil
}

// LockDir takes an index directory's single-writer OS lock (LockFileName),
// the lock Open, Create and Doctor hold, for a tool that must read the
// directory while no writer can change it (an offline backup). It fails
// with ErrLocked while another writer holds it and with ErrNotFound when
// dir does not exist.
func LockDir(fs vfs.FS, dir string) (io.Closer, error) { return lockDir(fs, dir) }

func lockDir(fs vfs.FS, dir string) (io.Closer, error) {
	lock, err := fs.Lock(fs.PathJoin(dir, LockFileName))
	if err != nil {
		if _, statErr := fs.Stat(dir); statErr != nil {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrLocked, dir, err)
	}
	return lock, nil
}

func newIndex(fs vfs.FS, dir string, meta *metadata.Metadata, opts Options) *Index {
	opts = opts.withDefaults()
	idx := &Index{fs: fs, dir: dir, schema: meta.Schema, opts: opts, log: opts.Logger.WithValues("index", dir)}
	idx.drained = sync.NewCond(&idx.mu)
	idx.mgr = lifecycle.NewManager(fs, dir, meta.IDs(), meta.NextID, lifecycle.Options{
		Logger: idx.log, OnDelete: idx.dropCached,
	})
	idx.mu.meta = meta
	idx.mu.readers = make(map[segid.ID]*segment.Reader)
	idx.mu.masks = make(map[segid.ID]*roaring.Bitmap)
	idx.mu.quarantine = make(map[segid.ID]string)
	return idx
}

func openLocked(fs vfs.FS, dir string, lock io.Closer, meta *metadata.Metadata, opts Options) (*Index, error) {
	idx := newIndex(fs, dir, meta, opts)
	idx.lock = lock
	// Crash leftovers: a torn metadata.json.tmp is never the commit point.
	_ = fs.Remove(fs.PathJoin(dir, metadata.TempFileName))
	removeSpares(fs, dir)
	if _, err := idx.mgr.Sweep(); err != nil {
		idx.log.Error(err, "Orphan sweep incomplete")
	}
	idx.loadSegments(meta)
	idx.spares = newSpareFS(fs, dir, spareCount(fs, opts), idx.log, opts.Hooks.SpareRefill)
	if idx.spares.slots > 0 {
		idx.mgr.SetRecycler(idx.spares.Adopt)
	}
	idx.w = newWriter(idx)
	return idx, nil
}

// loadSegments opens every metadata-live segment with the cheap check and
// loads its mask; failures quarantine the segment (Q05) and the index
// serves the rest. Segments open concurrently (openSegment touches no
// index state): opening costs a few system calls per file, and an index
// of many small segments opens in about 1/GOMAXPROCS of the time.
func (idx *Index) loadSegments(meta *metadata.Metadata) {
	type opened struct {
		r   *segment.Reader
		bm  *roaring.Bitmap
		err error
	}
	out := make([]opened, len(meta.Segments))
	load := func(i int) {
		s := meta.Segments[i]
		idx.mu.Lock()
		r, haveR := idx.mu.readers[s.ID]
		var bm *roaring.Bitmap
		haveM := s.Deletes == nil
		if !haveM {
			bm, haveM = idx.mu.masks[s.Deletes.ID]
		}
		idx.mu.Unlock()
		if haveR && haveM {
			out[i] = opened{r: r, bm: bm}
			return
		}
		r, bm, err := idx.openSegment(s, r, bm)
		// Quarantine is for deterministic failures; a transient I/O error
		// gets a few more attempts first, so that one failed read does not
		// hide a segment (and its rows from upserts) for the process
		// lifetime.
		for attempt := 0; err != nil && !isDeterministic(err) && attempt < openRetries; attempt++ {
			r, bm, err = idx.openSegment(s, r, bm)
		}
		out[i] = opened{r, bm, err}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 8, max(1, len(meta.Segments))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(out); i = int(next.Add(1) - 1) {
				load(i)
			}
		}()
	}
	wg.Wait()
	idx.mu.Lock()
	defer idx.mu.Unlock()
	for i, s := range meta.Segments {
		o := out[i]
		if o.r != nil {
			idx.mu.readers[s.ID] = o.r
		}
		if o.bm != nil {
			idx.mu.masks[s.Deletes.ID] = o.bm
		}
		if o.err != nil {
			idx.mu.quarantine[s.ID] = o.err.Error()
			idx.log.Error(o.err, "Segment quarantined", "segment", s.ID.String())
		}
	}
	idx.mu.current = idx.newSnapshotLocked(meta)
}

// openRetries bounds the extra attempts to open a segment after a
// transient error.
const openRetries = 3

// isDeterministic reports whether a segment open failure will repeat:
// a missing file or bytes that fail their checks.
func isDeterministic(err error) bool {
	var c *segment.CorruptionError
	return errors.Is(err, segment.ErrMissingFile) || errors.As(err, &c)
}

// openSegment opens segment s's reader (unless r is already open) and
// reads its deletion mask (unless bm is already read). It returns what it
// opened even on error, so that a retry does not open it again.
func (idx *Index) openSegment(s metadata.Segment, r *segment.Reader, bm *roaring.Bitmap) (*segment.Reader, *roaring.Bitmap, error) {
	if r == nil {
		var err error
		if r, err = segment.Open(idx.fs, idx.dir, idx.schema, s.Info, idx.readerOptions()); err != nil {
			return nil, bm, err
		}
	}
	if s.Deletes != nil && bm == nil {
		var err error
		if bm, err = segment.ReadMask(idx.fs, idx.dir, s.Deletes.ID, s.Documents); err != nil {
			return r, nil, fmt.Errorf("deletion mask %s: %w", s.Deletes.ID, err)
		}
	}
	return r, bm, nil
}

// dropCached closes the cached reader or mask of an ID whose files are
// about to be deleted (called by the lifecycle manager, without its lock).
func (idx *Index) dropCached(id segid.ID) {
	idx.mu.Lock()
	r := idx.mu.readers[id]
	delete(idx.mu.readers, id)
	delete(idx.mu.masks, id)
	idx.mu.Unlock()
	if r != nil {
		if err := r.Close(); err != nil {
			idx.log.Error(err, "Closing segment reader", "segment", id.String())
		}
	}
}

// Schema returns the index's schema.
func (idx *Index) Schema() *schema.Schema { return idx.schema }

// Dir returns the index directory.
func (idx *Index) Dir() string { return idx.dir }

// Manager exposes the lifecycle manager (owners of every segment ID).
func (idx *Index) Manager() *lifecycle.Manager { return idx.mgr }

// Status is a point-in-time view of the index.
type Status struct {
	// Generation is the published metadata generation.
	Generation uint64
	// Documents counts live, committed, searchable documents.
	Documents uint64
	// Segments lists the live segments.
	Segments []SegmentStatus
	// Quarantined lists metadata-live segments excluded from search.
	Quarantined []Quarantined
	// DurabilityDegraded is true after a directory fsync failed post-rename.
	DurabilityDegraded bool
	// UncommittedDocuments counts accepted operations not yet committed.
	UncommittedDocuments int
	// ActiveOperations counts IDs held by active operations.
	ActiveOperations int
	// HeldPublication is set while a prepared generation whose publication
	// failed before the commit point awaits its retry (C11); nil otherwise.
	HeldPublication *HeldPublication
	// PublicationRetries counts background retries of held publications.
	PublicationRetries PublicationRetries
}

// SegmentStatus describes one live segment.
type SegmentStatus struct {
	ID               segid.ID
	Documents        uint32
	DeletedDocuments uint32
	SizeBytes        int64
	// Vectors is the binary IVF record of each binary field (runs,
	// fragmentation), from the segment's metadata entry.
	Vectors []segment.IVFInfo
}

// Quarantined is one quarantined segment and why.
type Quarantined struct {
	Segment segid.ID
	Reason  string
}

// Status returns the index's current status.
func (idx *Index) Status() Status {
	idx.mu.Lock()
	meta := idx.mu.meta
	st := Status{Generation: meta.Generation, DurabilityDegraded: idx.mu.degraded != nil}
	for _, s := range meta.Segments {
		ss := SegmentStatus{ID: s.ID, Documents: s.Documents, Vectors: append([]segment.IVFInfo(nil), s.IVF...)}
		for _, f := range s.Files {
			ss.SizeBytes += f.Size
		}
		if s.Deletes != nil {
			ss.DeletedDocuments = s.Deletes.Deleted
			ss.SizeBytes += s.Deletes.Size
		}
		st.Segments = append(st.Segments, ss)
		if reason, q := idx.mu.quarantine[s.ID]; q {
			st.Quarantined = append(st.Quarantined, Quarantined{Segment: s.ID, Reason: reason})
		} else {
			st.Documents += uint64(s.LiveDocuments())
		}
	}
	idx.mu.Unlock()
	sort.Slice(st.Quarantined, func(i, j int) bool { return st.Quarantined[i].Segment < st.Quarantined[j].Segment })
	if idx.w != nil {
		st.UncommittedDocuments = idx.w.uncommitted()
		st.HeldPublication, st.PublicationRetries = idx.w.heldStatus()
	}
	st.ActiveOperations = idx.mgr.ActiveOperations()
	return st
}

// Metadata returns a copy of the published generation.
func (idx *Index) Metadata() *metadata.Metadata {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	return idx.mu.meta.Clone()
}

// Close shuts the index down in the spec's shutdown order (S02): it waits
// for an accepted commit to finish, stops ingestion and joins the indexing
// workers, abandons unpublished segments, stops new claims, waits for every
// snapshot to be released and for deferred deletions, and releases the
// writer lock. Uncommitted documents are dropped: commit first.
func (idx *Index) Close(ctx context.Context) error {
	return idx.close(ctx, false)
}

// CloseForDeletion closes the index in the order of index deletion (D01
// steps 2-6): new lifecycle claims stop before anything waits, then issued
// handles drain, indexing workers are joined, unpublished segments and
// cached readers are dropped, and deferred deletions drain.
func (idx *Index) CloseForDeletion(ctx context.Context) error {
	return idx.close(ctx, true)
}

func (idx *Index) close(ctx context.Context, deleting bool) error {
	idx.mu.Lock()
	if idx.mu.closed {
		idx.mu.Unlock()
		return ErrClosed
	}
	idx.mu.closed = true
	idx.mu.Unlock()
	if deleting {
		idx.mgr.Close() // D01 step 2: no new lifecycle claims
	}
	if idx.w != nil {
		if err := idx.w.close(ctx, deleting); err != nil {
			return err
		}
	}
	idx.mgr.Close()
	if idx.spares != nil {
		// No commit runs any more: drain the refill, remove the spares.
		idx.spares.close()
	}
	idx.mu.Lock()
	cur := idx.mu.current
	idx.mu.current = nil
	idx.mu.Unlock()
	if cur != nil {
		cur.Close()
	}
	if err := idx.waitSnapshots(ctx); err != nil {
		return err
	}
	idx.mgr.WaitDeletes()
	idx.mu.Lock()
	readers := idx.mu.readers
	idx.mu.readers = map[segid.ID]*segment.Reader{}
	idx.mu.Unlock()
	var firstErr error
	for _, r := range readers {
		if err := r.Close(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if idx.lock != nil {
		if err := idx.lock.Close(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// commitFS is the filesystem of the commit path's new files: the spare
// filesystem of a writer (see spareFS).
func (idx *Index) commitFS() vfs.FS {
	if idx.spares != nil {
		return idx.spares
	}
	return idx.fs
}

// waitSnapshots waits until every issued snapshot is released.
func (idx *Index) waitSnapshots(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		idx.mu.Lock()
		idx.drained.Broadcast()
		idx.mu.Unlock()
	})
	defer stop()
	idx.mu.Lock()
	defer idx.mu.Unlock()
	for idx.mu.open > 0 {
		if ctx.Err() != nil {
			return fmt.Errorf("index: waiting for %d open snapshots: %w", idx.mu.open, ctx.Err())
		}
		idx.drained.Wait()
	}
	return nil
}
