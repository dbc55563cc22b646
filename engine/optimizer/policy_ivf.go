package optimizer

import (
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
)

// chooseCoalesce returns a coalescing task for the first candidate whose
// persisted metadata records binary IVF fragmentation (M08, M10). Only
// persisted debt counts: a fresh vector segment with one run is never
// chosen merely because its schema has binary fields.
func (p Policy) chooseCoalesce(cands []metadata.Segment) (Task, bool) {
	for _, s := range cands {
		if s.IVFFragmented() {
			return Task{Kind: "coalesce", Sources: []segid.ID{s.ID}}, true
		}
	}
	return Task{}, false
}
