package optimizer

import (
	"testing"

	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// ivfSeg is a segment whose binary field has runs encoded runs.
func ivfSeg(id int, runs int) metadata.Segment {
	s := seg(segid.ID(id), 100, 0)
	s.BPConverged = true
	rec := segment.IVFInfo{Field: "emb", Runs: runs, Vectors: 100, Fragmented: runs > 1}
	for i := 0; i < runs; i++ {
		rec.Models = append(rec.Models, "00000000000000aa")
	}
	s.IVF = []segment.IVFInfo{rec}
	return s
}

// TestM08_CoalesceIndependentOfReorder: a segment whose persisted
// metadata records binary IVF fragmentation is a coalescing candidate
// whether or not the schema has reorder fields.
func TestM08_CoalesceIndependentOfReorder(t *testing.T) {
	p := DefaultPolicy()
	for _, reorder := range []bool{false, true} {
		task, ok := p.Choose([]metadata.Segment{ivfSeg(1, 1), ivfSeg(2, 3)}, all, reorder)
		if !ok || task.Kind != "coalesce" || len(task.Sources) != 1 || task.Sources[0] != 2 {
			t.Fatalf("reorder fields %v: %+v %v, want coalescing of segment 2", reorder, task, ok)
		}
	}
}

// TestM10_FreshVectorSegmentsAreNotReplaced: a vector segment with one
// run (no persisted debt) is never chosen merely because its schema
// supports maintenance; BP-converged so no other debt either.
func TestM10_FreshVectorSegmentsAreNotReplaced(t *testing.T) {
	p := DefaultPolicy()
	for _, reorder := range []bool{false, true} {
		if task, ok := p.Choose([]metadata.Segment{ivfSeg(1, 1), ivfSeg(2, 1)}, all, reorder); ok {
			t.Fatalf("fresh vector segments replaced (reorder %v): %+v", reorder, task)
		}
	}
	// The debt is the persisted bit, not a run count the process infers.
	s := ivfSeg(3, 2)
	s.IVF[0].Fragmented = false
	if task, ok := p.Choose([]metadata.Segment{s}, all, false); ok {
		t.Fatalf("segment without the persisted bit chosen: %+v", task)
	}
}
