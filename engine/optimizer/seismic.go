package optimizer

import (
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
)

// DefaultMaxSeismicStalls bounds consecutive no-progress Seismic passes.
const DefaultMaxSeismicStalls = 3

// chooseSeismic picks a segment with persisted Seismic debt (M10: the
// pendingTerms of its metadata entry, nothing else) whose consecutive
// stalls are below the limit. Successful partial passes are not capped:
// productive work continues past the total-pass threshold that caps BP,
// and neither bpConverged nor a capped BP lineage hides the debt (M09).
func (p Policy) chooseSeismic(cands []metadata.Segment) (Task, bool) {
	limit := p.MaxSeismicStalls
	if limit <= 0 {
		limit = DefaultMaxSeismicStalls
	}
	for _, s := range cands {
		if s.Seismic != nil && s.Seismic.PendingTerms > 0 && s.Seismic.Stalls < limit {
			return Task{Kind: "seismic", Sources: []segid.ID{s.ID}}, true
		}
	}
	return Task{}, false
}
