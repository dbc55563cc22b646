package index

import (
	"context"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
)

// Compact rewrites the segment with the most deleted rows without them.
// It claims source and output, snapshots the source's mask generation,
// writes directly from the source, and publication is rejected with
// ErrVisibilityChanged if the mask changed meanwhile (M03).
func (idx *Index) Compact(ctx context.Context) (RewriteResult, error) {
	if idx.readOnly {
		return RewriteResult{}, ErrReadOnly
	}
	return idx.compact(ctx, func(s *Snapshot) []SnapshotSegment {
		best := -1
		for i, seg := range s.Segments {
			if seg.Meta.Deletes == nil {
				continue
			}
			if best < 0 || seg.Meta.Deletes.Deleted > s.Segments[best].Meta.Deletes.Deleted {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		return []SnapshotSegment{s.Segments[best]}
	})
}

// CompactSegment compacts one live segment with deleted rows.
func (idx *Index) CompactSegment(ctx context.Context, id segid.ID) (RewriteResult, error) {
	if idx.readOnly {
		return RewriteResult{}, ErrReadOnly
	}
	return idx.compact(ctx, func(s *Snapshot) []SnapshotSegment {
		for _, seg := range s.Segments {
			if seg.Meta.ID == id && seg.Meta.Deletes != nil {
				return []SnapshotSegment{seg}
			}
		}
		return nil
	})
}

// compact runs one claimed compaction of the source pick chooses.
func (idx *Index) compact(ctx context.Context, pick func(*Snapshot) []SnapshotSegment) (RewriteResult, error) {
	return idx.claimedRewrite("compact", pick, func(rw *rewrite) (RewriteResult, error) {
		src := rw.sources[0]
		captured := src.Meta.Deletes.ID
		rw.decorate = keepBPState
		return rw.rebuild(ctx, func(_ int, doc uint32) bool { return !src.Deleted.Contains(doc) },
			func(cur []metadata.Segment) (*roaring.Bitmap, error) {
				if maskID(cur[0]) != captured {
					return nil, ErrVisibilityChanged
				}
				return nil, nil
			})
	})
}

// keepBPState carries the source's BP flags and counters to a
// maintenance-only replacement (M11): compaction keeps the rows' order,
// so completed BP stays completed and a lineage keeps its unconverged
// passes, never escaping the Q13 limit.
func keepBPState(out *metadata.Segment, cur []metadata.Segment) {
	out.BPConverged = cur[0].BPConverged
	out.BPUnconvergedPasses = cur[0].BPUnconvergedPasses
}

func maskID(s metadata.Segment) segid.ID {
	if s.Deletes == nil {
		return 0
	}
	return s.Deletes.ID
}
