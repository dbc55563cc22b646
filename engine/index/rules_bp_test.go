package index

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/optimizer"
	"github.com/summadev/summa/engine/segid"
)

// cappedSegment commits 300 documents as one segment and runs budget-
// truncated BP passes over it until its lineage has passes unconverged
// passes. It returns the segment's metadata entry.
func cappedSegment(t *testing.T, idx *Index, passes int) metadata.Segment {
	t.Helper()
	if err := idx.Add(docs(t, 0, 300, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	if n := len(idx.Metadata().Segments); n != 1 {
		if _, err := idx.ForceMerge(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < passes; i++ {
		id := idx.Metadata().Segments[0].ID
		if _, err := idx.ReorderSegment(context.Background(), id, ReorderOptions{MaxDepth: 1}); err != nil {
			t.Fatal(err)
		}
	}
	s := idx.Metadata().Segments[0]
	if s.BPConverged || s.BPUnconvergedPasses != passes {
		t.Fatalf("setup: converged=%v passes=%d", s.BPConverged, s.BPUnconvergedPasses)
	}
	return s
}

func always(segid.ID) bool { return true }

// TestM11_CompactionPreservesBPFlagsAndCounters: a compaction is a
// maintenance-only replacement; its output keeps the source's BP state,
// so a lineage at the unconverged-pass limit stays capped (Q13) instead of
// being admitted for BP again under a fresh ID.
func TestM11_CompactionPreservesBPFlagsAndCounters(t *testing.T) {
	_, idx := createMem(t)
	defer mustClose(t, idx)
	limit := optimizer.DefaultPolicy().MaxUnconvergedPasses
	src := cappedSegment(t, idx, limit)
	for i := 0; i < 120; i++ {
		if _, err := idx.Delete(fmt.Sprintf("p%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, idx)
	res, err := idx.CompactSegment(context.Background(), src.ID)
	if err != nil {
		t.Fatal(err)
	}
	out := idx.Metadata().Segments[0]
	if out.ID != res.Output || out.ID == src.ID {
		t.Fatalf("compaction output %s, metadata %s", res.Output, out.ID)
	}
	if out.BPConverged != src.BPConverged || out.BPUnconvergedPasses != src.BPUnconvergedPasses {
		t.Fatalf("compaction reset BP state: converged %v->%v, passes %d->%d",
			src.BPConverged, out.BPConverged, src.BPUnconvergedPasses, out.BPUnconvergedPasses)
	}
	if task, ok := optimizer.DefaultPolicy().Choose(idx.Metadata().Segments, always, true); ok && task.Kind == "reorder" {
		t.Fatalf("a capped lineage escaped the pass limit through compaction: %+v", task)
	}
}

// TestM11_AutomaticReorderDecidesFromClaimedSourceMetadata: an automatic
// pass, whatever the scan that chose it saw, checks the claimed source's
// metadata: a capped or converged lineage is skipped (nothing written,
// nothing published); one below the limit runs.
func TestM11_AutomaticReorderDecidesFromClaimedSourceMetadata(t *testing.T) {
	fs, idx := createMem(t)
	defer mustClose(t, idx)
	src := cappedSegment(t, idx, 2)
	auto := ReorderOptions{MaxDepth: 1, Automatic: true, MaxUnconvergedPasses: 2}
	gen := idx.Metadata().Generation
	files := len(segFiles(t, fs))
	_, err := idx.ReorderSegment(context.Background(), src.ID, auto)
	if !errors.Is(err, ErrNothingToDo) {
		t.Fatalf("automatic pass over a capped lineage: %v", err)
	}
	if idx.Metadata().Generation != gen || len(segFiles(t, fs)) != files {
		t.Fatal("a skipped automatic pass published or wrote something")
	}
	auto.MaxUnconvergedPasses = 3
	if _, err := idx.ReorderSegment(context.Background(), src.ID, auto); err != nil {
		t.Fatalf("automatic pass below the limit: %v", err)
	}
	if got := idx.Metadata().Segments[0].BPUnconvergedPasses; got != 3 {
		t.Fatalf("lineage passes %d, want 3", got)
	}
	// A converged segment is never redone automatically; a manual
	// reorder still runs.
	conv, err := idx.ReorderSegment(context.Background(), idx.Metadata().Segments[0].ID, ReorderOptions{})
	if err != nil || !conv.BPConverged {
		t.Fatalf("full manual pass: %+v %v", conv, err)
	}
	auto.MaxUnconvergedPasses = 100
	if _, err := idx.ReorderSegment(context.Background(), conv.Output, auto); !errors.Is(err, ErrNothingToDo) {
		t.Fatalf("automatic pass over converged BP: %v", err)
	}
	if _, err := idx.ReorderSegment(context.Background(), conv.Output, ReorderOptions{}); err != nil {
		t.Fatalf("manual reorder of a converged segment: %v", err)
	}
	checkOwned(t, fs, idx)
}
