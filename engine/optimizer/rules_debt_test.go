package optimizer

import (
	"testing"

	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
)

// TestM10_DebtFreeSegmentsAreNeverReplaced: selection reads only the
// persisted entries, and a segment without debt there (no deletes at the
// compaction ratio, BP converged or not requested, no full tier) is never
// chosen, whatever else the process knows; each kind of debt alone, at its
// threshold, makes it a candidate.
func TestM10_DebtFreeSegmentsAreNeverReplaced(t *testing.T) {
	p := DefaultPolicy()
	clean := seg(1, 100, 29) // 29 % deleted: below the 30 % ratio
	clean.BPConverged = true
	for _, reorder := range []bool{false, true} {
		if task, ok := p.Choose([]metadata.Segment{clean}, all, reorder); ok {
			t.Fatalf("debt-free segment replaced (reorder fields %v): %+v", reorder, task)
		}
	}
	unconverged := clean
	unconverged.BPConverged = false
	if task, ok := p.Choose([]metadata.Segment{unconverged}, all, false); ok {
		t.Fatalf("BP debt without reorder fields: %+v", task)
	}
	if task, ok := p.Choose([]metadata.Segment{unconverged}, all, true); !ok || task.Kind != "reorder" {
		t.Fatalf("a first BP pass for a text field requesting BP: %+v %v", task, ok)
	}
	atRatio := seg(1, 100, 30)
	atRatio.BPConverged = true
	if task, ok := p.Choose([]metadata.Segment{atRatio}, all, true); !ok || task.Kind != "compact" {
		t.Fatalf("30 %% deleted: %+v %v, want a compaction", task, ok)
	}
	// Seven similar segments are no full tier; the eighth makes one.
	var tier []metadata.Segment
	for i := 0; i < 8; i++ {
		s := seg(segid.ID(10+i), 100, 0)
		s.BPConverged = true
		tier = append(tier, s)
		task, ok := p.Choose(tier, all, true)
		if want := i == 7; ok != want || (ok && task.Kind != "merge") {
			t.Fatalf("%d similar segments: %+v %v", i+1, task, ok)
		}
	}
}
