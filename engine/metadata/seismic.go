package metadata

import "fmt"

// SeismicDebt is a segment's persisted Seismic maintenance state (M09),
// kept apart from BP convergence (BPConverged, BPUnconvergedPasses): a nil
// *SeismicDebt means no debt, and zero debt clears every counter.
type SeismicDebt struct {
	// PendingTerms counts the dimensions whose postings the segment could
	// not place in Seismic blocks (pending nomination terms).
	PendingTerms int `json:"pendingTerms"`
	// PartialPasses counts successful maintenance passes that lowered the
	// debt without clearing it.
	PartialPasses int `json:"partialPasses,omitempty"`
	// Stalls counts consecutive maintenance passes that left the debt
	// unchanged.
	Stalls int `json:"stalls,omitempty"`
}

// SeismicPending returns the segment's persisted Seismic debt.
func (s *Segment) SeismicPending() int {
	if s.Seismic == nil {
		return 0
	}
	return s.Seismic.PendingTerms
}

// The ways a replacement output inherits Seismic state (M09).
const (
	// SeismicFresh: a new segment (flush), no history.
	SeismicFresh = iota
	// SeismicMerge: a copy merge with new inputs; stale stall history is
	// reset.
	SeismicMerge
	// SeismicPreserve: an unchanged single-source replacement (compaction,
	// BP reorder); the source's counters are kept.
	SeismicPreserve
	// SeismicPass: a Seismic maintenance pass over one source; lower debt
	// is a successful partial pass and resets the stalls, unchanged (or
	// higher) debt is one more stall.
	SeismicPass
)

// NextSeismicDebt returns the Seismic state of an output whose own debt,
// read from the output before publication, is pending; src is the single
// source's state for SeismicPreserve and SeismicPass. Zero debt clears the
// counters (nil).
func NextSeismicDebt(how int, src *SeismicDebt, pending int) *SeismicDebt {
	if pending <= 0 {
		return nil
	}
	out := &SeismicDebt{PendingTerms: pending}
	if src == nil || how == SeismicFresh || how == SeismicMerge {
		return out
	}
	out.PartialPasses, out.Stalls = src.PartialPasses, src.Stalls
	if how == SeismicPass {
		if pending < src.PendingTerms {
			out.PartialPasses++
			out.Stalls = 0
		} else {
			out.Stalls++
		}
	}
	return out
}

// validate checks the counters of a decoded entry.
func (d *SeismicDebt) validate(s *Segment) error {
	if d == nil {
		return nil
	}
	if d.PendingTerms <= 0 || d.PartialPasses < 0 || d.Stalls < 0 {
		return fmt.Errorf("metadata: segment %s: seismic debt %+v (zero debt must clear the counters)", s.ID, *d)
	}
	return nil
}
