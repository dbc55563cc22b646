package index

import (
	"context"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
)

// ForceMerge merges segments until at most maxSegments remain: the
// smallest segments are merged into one. Every physical row is copied and
// the output's mask concatenates the sources' masks as they are at
// publication, so deletes that arrive during the merge are kept (M01).
func (idx *Index) ForceMerge(ctx context.Context, maxSegments int) (RewriteResult, error) {
	if idx.readOnly {
		return RewriteResult{}, ErrReadOnly
	}
	if maxSegments < 1 {
		maxSegments = 1
	}
	return idx.merge(ctx, func(s *Snapshot) []SnapshotSegment {
		if len(s.Segments) <= maxSegments {
			return nil
		}
		segs := append([]SnapshotSegment(nil), s.Segments...)
		sort.SliceStable(segs, func(i, j int) bool { return segs[i].Meta.Documents < segs[j].Meta.Documents })
		return segs[:len(segs)-maxSegments+1]
	})
}

// MergeSegments merges the given live segments into one (the optimizer's
// merge policy chooses them). Segments no longer live or quarantined are
// skipped; fewer than two remaining is ErrNothingToDo.
func (idx *Index) MergeSegments(ctx context.Context, ids []segid.ID) (RewriteResult, error) {
	if idx.readOnly {
		return RewriteResult{}, ErrReadOnly
	}
	want := make(map[segid.ID]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	return idx.merge(ctx, func(s *Snapshot) []SnapshotSegment {
		var out []SnapshotSegment
		for _, seg := range s.Segments {
			if want[seg.Meta.ID] {
				out = append(out, seg)
			}
		}
		if len(out) < 2 {
			return nil
		}
		return out
	})
}

// merge runs one claimed merge of the sources pick chooses.
func (idx *Index) merge(ctx context.Context, pick func(*Snapshot) []SnapshotSegment) (RewriteResult, error) {
	return idx.claimedRewrite("merge", pick, func(rw *rewrite) (RewriteResult, error) {
		return rw.rebuild(ctx, func(int, uint32) bool { return true },
			func(cur []metadata.Segment) (*roaring.Bitmap, error) { return rw.concatMasks(cur), nil })
	})
}

// concatMasks builds the output mask from the sources' current masks,
// offset by each source's physical row base. A source missing from the
// current metadata (a commit deleted all its rows) is hidden whole.
func (rw *rewrite) concatMasks(cur []metadata.Segment) *roaring.Bitmap {
	out := roaring.New()
	var base uint32
	rw.idx.mu.Lock()
	defer rw.idx.mu.Unlock()
	for i, s := range cur {
		if s.ID != rw.sources[i].Meta.ID {
			out.AddRange(uint64(base), uint64(base)+uint64(rw.sources[i].Meta.Documents))
		} else if s.Deletes != nil {
			if m := rw.idx.mu.masks[s.Deletes.ID]; m != nil {
				it := m.Iterator()
				for it.HasNext() {
					out.Add(base + it.Next())
				}
			}
		}
		base += rw.sources[i].Meta.Documents
	}
	return out
}
