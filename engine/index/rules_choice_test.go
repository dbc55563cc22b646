package index

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/summadev/summa/engine/segid"
)

// TestM01_ForceMergeToMaxSegmentsMergesTheSmallest: ForceMerge(n) leaves n
// segments by merging the smallest ones, does nothing when there are no
// more than n, and treats n < 1 as 1.
func TestM01_ForceMergeToMaxSegmentsMergesTheSmallest(t *testing.T) {
	_, idx := createMem(t)
	defer mustClose(t, idx)
	for _, r := range [][2]int{{0, 20}, {20, 25}, {25, 35}, {35, 38}} { // 20, 5, 10, 3 documents
		if err := idx.Add(docs(t, r[0], r[1], 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	largest := idx.Metadata().Segments[0].ID
	res, err := idx.ForceMerge(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	segs := idx.Metadata().Segments
	if len(segs) != 2 || len(res.Sources) != 3 {
		t.Fatalf("ForceMerge(2) of 4 segments: %d left, %d merged", len(segs), len(res.Sources))
	}
	for _, s := range res.Sources {
		if s == largest {
			t.Fatal("ForceMerge(2) merged the largest segment instead of the three smallest")
		}
	}
	gen := idx.Metadata().Generation
	if _, err := idx.ForceMerge(context.Background(), 2); !errors.Is(err, ErrNothingToDo) || idx.Metadata().Generation != gen {
		t.Fatalf("ForceMerge(2) of 2 segments: %v", err)
	}
	if _, err := idx.ForceMerge(context.Background(), 0); err != nil || len(idx.Metadata().Segments) != 1 {
		t.Fatalf("ForceMerge(0): %v, %d segments; want one", err, len(idx.Metadata().Segments))
	}
}

// TestQ13_ReorderBudgetsDefaultAndLimitZeroMeansNone: an unset time or
// memory budget takes its default and a set one is kept; a two-document
// segment can be reordered; MaxUnconvergedPasses 0 sets no lineage limit.
func TestQ13_ReorderBudgetsDefaultAndLimitZeroMeansNone(t *testing.T) {
	if o := (ReorderOptions{}).withDefaults(); o.TimeBudget != 60*time.Second || o.MemoryBudgetBytes != 256<<20 {
		t.Fatalf("defaults: %+v", o)
	}
	if o := (ReorderOptions{TimeBudget: time.Nanosecond, MemoryBudgetBytes: 1}).withDefaults(); o.TimeBudget != time.Nanosecond || o.MemoryBudgetBytes != 1 {
		t.Fatalf("set budgets replaced: %+v", o)
	}
	_, idx := createMem(t)
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 2, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	if res, err := idx.Reorder(context.Background(), ReorderOptions{}); err != nil || len(res) != 1 {
		t.Fatalf("reorder of an index of one two-document segment: %d passes, %v", len(res), err)
	}
	if _, err := idx.ReorderSegment(context.Background(), idx.Metadata().Segments[0].ID, ReorderOptions{}); err != nil {
		t.Fatalf("reorder of a two-document segment: %v", err)
	}
	_, capped := createMem(t)
	defer mustClose(t, capped)
	src := cappedSegment(t, capped, 2)
	if _, err := capped.ReorderSegment(context.Background(), src.ID, ReorderOptions{MaxDepth: 1, Automatic: true}); err != nil {
		t.Fatalf("automatic pass after 2 unconverged passes with no lineage limit: %v", err)
	}
}

// TestM01_MergeSegmentsNeedsTwoLiveSources: the optimizer's merge of named
// segments merges exactly the live ones it names, and does nothing when
// fewer than two of them are live.
func TestM01_MergeSegmentsNeedsTwoLiveSources(t *testing.T) {
	_, idx := createMem(t)
	defer mustClose(t, idx)
	for i := 0; i < 3; i++ {
		if err := idx.Add(docs(t, i*10, i*10+10, 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	segs := idx.Metadata().Segments
	gen := idx.Metadata().Generation
	if _, err := idx.MergeSegments(context.Background(), []segid.ID{segs[0].ID, 0xfffff}); !errors.Is(err, ErrNothingToDo) || idx.Metadata().Generation != gen {
		t.Fatalf("merge of one live segment: %v", err)
	}
	res, err := idx.MergeSegments(context.Background(), []segid.ID{segs[0].ID, segs[2].ID})
	if err != nil || len(res.Sources) != 2 || len(idx.Metadata().Segments) != 2 {
		t.Fatalf("merge of two named segments: %+v %v, %d segments left", res, err, len(idx.Metadata().Segments))
	}
}
