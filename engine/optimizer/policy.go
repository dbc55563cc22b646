package optimizer

import (
	"sort"

	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
)

// Policy chooses maintenance from persisted segment metadata only (M10).
type Policy struct {
	// SegmentsPerTier is how many similar-size segments trigger a merge.
	SegmentsPerTier int
	// MaxMergeAtOnce bounds the sources of one merge.
	MaxMergeAtOnce int
	// TierFactor is the size ratio that separates tiers.
	TierFactor float64
	// FloorDocuments rounds tiny segments up, so they share the lowest tier.
	FloorDocuments uint32
	// CompactDeletedRatio is the deleted share that makes a segment a
	// compaction candidate.
	CompactDeletedRatio float64
	// MaxUnconvergedPasses bounds budget-truncated BP passes per lineage (Q13).
	MaxUnconvergedPasses int
	// MaxSeismicStalls bounds consecutive no-progress Seismic passes of a
	// segment (0: DefaultMaxSeismicStalls).
	MaxSeismicStalls int
}

// DefaultPolicy is a tiered policy like Lucene's defaults, scaled down.
func DefaultPolicy() Policy {
	return Policy{SegmentsPerTier: 8, MaxMergeAtOnce: 8, TierFactor: 8, FloorDocuments: 1000,
		CompactDeletedRatio: 0.3, MaxUnconvergedPasses: 3, MaxSeismicStalls: DefaultMaxSeismicStalls}
}

// Task is one chosen maintenance operation.
type Task struct {
	// Kind is "merge", "compact", "coalesce", "reorder" or "seismic".
	Kind string
	// Sources are the segments it rewrites.
	Sources []segid.ID
}

// Choose returns the next task for an index, skipping ineligible sources
// (quarantined, backed off). hasReorderFields says whether the schema asks
// for BP at all.
func (p Policy) Choose(segs []metadata.Segment, eligible func(segid.ID) bool, hasReorderFields bool) (Task, bool) {
	var cands []metadata.Segment
	for _, s := range segs {
		if eligible(s.ID) {
			cands = append(cands, s)
		}
	}
	if t, ok := p.chooseMerge(cands); ok {
		return t, true
	}
	for _, s := range cands {
		if s.Deletes != nil && float64(s.Deletes.Deleted) >= p.CompactDeletedRatio*float64(s.Documents) {
			return Task{Kind: "compact", Sources: []segid.ID{s.ID}}, true
		}
	}
	// M08, M10: binary IVF fragmentation debt, whatever the reorder
	// attribute says.
	if t, ok := p.chooseCoalesce(cands); ok {
		return t, true
	}
	if hasReorderFields {
		// M11, Q13: first passes and unconverged lineages below the limit;
		// completed or capped BP is never redone.
		for _, s := range cands {
			if !s.BPConverged && s.BPUnconvergedPasses < p.MaxUnconvergedPasses && s.Documents >= 2 {
				return Task{Kind: "reorder", Sources: []segid.ID{s.ID}}, true
			}
		}
	}
	if t, ok := p.chooseSeismic(cands); ok {
		return t, true
	}
	return Task{}, false
}

// chooseMerge groups segments into size tiers and merges the smallest
// segments of the first full tier.
func (p Policy) chooseMerge(cands []metadata.Segment) (Task, bool) {
	sorted := append([]metadata.Segment(nil), cands...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].LiveDocuments() < sorted[j].LiveDocuments() })
	for start := 0; start < len(sorted); {
		base := float64(max(sorted[start].LiveDocuments(), p.FloorDocuments))
		end := start
		for end < len(sorted) && float64(max(sorted[end].LiveDocuments(), p.FloorDocuments)) < base*p.TierFactor {
			end++
		}
		if end-start >= p.SegmentsPerTier {
			n := min(end-start, p.MaxMergeAtOnce)
			t := Task{Kind: "merge"}
			for _, s := range sorted[start : start+n] {
				t.Sources = append(t.Sources, s.ID)
			}
			return t, true
		}
		start = end
	}
	return Task{}, false
}
