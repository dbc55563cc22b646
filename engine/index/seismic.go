package index

import (
	"context"
	"fmt"

	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// DefaultSeismicBudget is the postings one flush may cluster into Seismic
// blocks before leaving dimensions pending (Options.SeismicBudget).
const DefaultSeismicBudget = 1 << 21

// DefaultSeismicPassBudget is the postings one Seismic maintenance pass
// may place (SeismicOptions.Budget).
const DefaultSeismicPassBudget = 1 << 22

// SeismicOptions budget one Seismic maintenance pass.
type SeismicOptions struct {
	// Budget bounds the postings the pass clusters (0: the default).
	Budget int64
}

// seismicDebt returns the output's Seismic state from its own debt, read
// from the output before publication, and the sources' current entries
// (M09): a merge resets stall history, a Seismic pass counts a partial
// pass or a stall, other single-source replacements preserve the
// counters; zero debt clears them.
func (rw *rewrite) seismicDebt(cur []metadata.Segment, pending int) *metadata.SeismicDebt {
	switch {
	case rw.kind == "merge" && len(cur) > 1:
		return metadata.NextSeismicDebt(metadata.SeismicMerge, nil, pending)
	case rw.kind == "seismic":
		return metadata.NextSeismicDebt(metadata.SeismicPass, cur[0].Seismic, pending)
	default:
		return metadata.NextSeismicDebt(metadata.SeismicPreserve, cur[0].Seismic, pending)
	}
}

// SeismicSegment runs one Seismic maintenance pass over a segment with
// Seismic debt: a claimed, address-preserving single-source replacement
// that copies the placed runs and places pending dimensions within the
// budget. Eligibility is read from the claimed source's current metadata
// entry; BP flags and counters are preserved (M11). Publication reads the
// output's debt and updates the counters (M09): lower debt is a partial
// pass (stalls reset), unchanged debt a stall, zero debt clears them.
func (idx *Index) SeismicSegment(ctx context.Context, id segid.ID, opts SeismicOptions) (RewriteResult, error) {
	if opts.Budget == 0 {
		opts.Budget = DefaultSeismicPassBudget
	}
	eligible := func(rw *rewrite) error {
		if rw.seismicPending() == 0 {
			return fmt.Errorf("%w: %s has no Seismic debt", ErrNothingToDo, id)
		}
		return nil
	}
	return idx.rewriteInPlace(ctx, "seismic", id, eligible,
		func(rw *rewrite) (segment.Info, *segment.Reader, error) {
			rw.seismicBudget = opts.Budget
			return rw.build(ctx, func(int, uint32) bool { return true })
		})
}

// seismicPending returns the claimed source's debt from its current
// metadata entry (the claim keeps it from changing).
func (rw *rewrite) seismicPending() int {
	s, err := rw.sourceEntry()
	if err != nil {
		return 0
	}
	return s.SeismicPending()
}
