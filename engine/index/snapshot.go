package index

import (
	"context"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/search"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// Snapshot is an immutable view of one published generation. It holds
// tracker references on every segment and mask it uses (L09), so their
// files outlive any retirement until the snapshot is closed.
type Snapshot struct {
	// idx is the index the snapshot belongs to.
	idx *Index
	// Generation is the metadata generation the snapshot shows.
	Generation uint64
	// Segments are the searchable (non-quarantined) segments.
	Segments []SnapshotSegment
	// views are the segments as search sees them, built once.
	views []search.SegmentView
	// ids are the tracker references held (segments and masks).
	ids []segid.ID
	// refs counts holders; the last Close releases the tracker references.
	refs atomic.Int32
}

// SnapshotSegment is one segment of a snapshot with its exact mask.
type SnapshotSegment struct {
	// Meta is the segment's metadata entry.
	Meta metadata.Segment
	// Reader reads the segment's files.
	Reader *segment.Reader
	// Deleted is the deletion mask generation of Meta.Deletes, or nil.
	Deleted *roaring.Bitmap
}

// newSnapshotLocked builds a snapshot of meta from the cached readers and
// masks, skipping quarantined segments, and takes its tracker references.
// REQUIRES: idx.mu held.
func (idx *Index) newSnapshotLocked(meta *metadata.Metadata) *Snapshot {
	if idx.mu.changed != nil {
		close(idx.mu.changed) // every new current view is a change (Changes)
		idx.mu.changed = nil
	}
	s := &Snapshot{idx: idx, Generation: meta.Generation,
		Segments: make([]SnapshotSegment, 0, len(meta.Segments)),
		views:    make([]search.SegmentView, 0, len(meta.Segments)),
		ids:      make([]segid.ID, 0, 2*len(meta.Segments))}
	for _, m := range meta.Segments {
		if _, q := idx.mu.quarantine[m.ID]; q {
			continue
		}
		seg := SnapshotSegment{Meta: m, Reader: idx.mu.readers[m.ID]}
		s.ids = append(s.ids, m.ID)
		if m.Deletes != nil {
			seg.Deleted = idx.mu.masks[m.Deletes.ID]
			s.ids = append(s.ids, m.Deletes.ID)
		}
		s.Segments = append(s.Segments, seg)
		s.views = append(s.views, search.SegmentView{Segment: seg.Reader, Deleted: seg.Deleted})
	}
	s.refs.Store(1)
	idx.mu.open++
	// Ref never deletes, so it is safe under idx.mu.
	idx.mgr.Ref(s.ids...)
	return s
}

// Snapshot returns the current snapshot; the caller must Close it.
func (idx *Index) Snapshot() (*Snapshot, error) {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	if idx.mu.closed || idx.mu.current == nil {
		return nil, ErrClosed
	}
	s := idx.mu.current
	s.refs.Add(1)
	return s, nil
}

// Close releases the snapshot; the last holder drops its tracker
// references, which lets deferred deletions of retired files proceed.
func (s *Snapshot) Close() {
	if s.refs.Add(-1) != 0 {
		return
	}
	// Unref may delete files and call back into idx.mu: never under it.
	s.idx.mgr.Unref(s.ids...)
	s.idx.mu.Lock()
	s.idx.mu.open--
	s.idx.drained.Broadcast()
	s.idx.mu.Unlock()
}

// Documents returns the snapshot's live document count.
func (s *Snapshot) Documents() uint64 {
	var n uint64
	for _, seg := range s.Segments {
		n += uint64(seg.Meta.LiveDocuments())
	}
	return n
}

// Search runs a query over the snapshot.
func (s *Snapshot) Search(ctx context.Context, req search.Request) (search.Result, error) {
	return search.Search(ctx, s.idx.schema, s.views, req)
}

// isLive reports whether doc of segment i is visible in the snapshot.
func (s *Snapshot) isLive(i int, doc uint32) bool {
	d := s.Segments[i].Deleted
	return d == nil || !d.Contains(doc)
}

// LookupPrimaryKey reports whether a live document with primary key pk is
// visible in the snapshot.
func (s *Snapshot) LookupPrimaryKey(pk string) (bool, error) {
	for i, seg := range s.Segments {
		docs, err := seg.Reader.PrimaryKeyDocs(pk)
		if err != nil {
			return false, err
		}
		for _, d := range docs {
			if s.isLive(i, d) {
				return true, nil
			}
		}
	}
	return false, nil
}

// Changes returns a channel that is closed when the index's current view
// next changes: a new generation is published (a commit, a maintenance
// replacement, a follower's publication) or a segment is quarantined. A
// long poll takes the channel, then reads Generation or QuarantinedCount,
// then waits on it: a change between the two closes the channel it
// holds, so none is missed, and no waiter polls.
func (idx *Index) Changes() <-chan struct{} {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	if idx.mu.changed == nil {
		idx.mu.changed = make(chan struct{})
	}
	return idx.mu.changed
}
