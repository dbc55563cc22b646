package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/summadev/summa/engine/ivf/ivftest"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/search"
)

// threeVectorSegments commits three generations of real paragraphs with
// vectors: three segments of one run each.
func threeVectorSegments(t *testing.T) *Index {
	_, idx := createMem(t)
	for g := 0; g < 3; g++ {
		if err := idx.Add(docs(t, g*40, g*40+40, 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	return idx
}

// exactKeys returns the primary keys of an exact top-20 query by the
// vector of paragraph i, best first.
func exactKeys(t *testing.T, idx *Index, i int, extra string) []string {
	t.Helper()
	vec, _ := json.Marshal(ivftest.TextVector(paragraphs(t, i+1)[i], testDims))
	raw := json.RawMessage(fmt.Sprintf(`{"dense":{"field":"emb","vector":%s,"k":20%s}}`, vec, extra))
	snap, err := idx.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	res, err := snap.Search(context.Background(), search.Request{Query: raw, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range res.Hits {
		var m map[string]any
		if err := json.Unmarshal(h.Fields, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%v@%.3f", m["id"], h.Score))
	}
	return out
}

func ivfOf(t *testing.T, s metadata.Segment) (runs int, models []string, fragmented bool) {
	t.Helper()
	if len(s.IVF) != 1 || s.IVF[0].Field != "emb" {
		t.Fatalf("segment %s records %+v", s.ID, s.IVF)
	}
	return s.IVF[0].Runs, s.IVF[0].Models, s.IVF[0].Fragmented
}

// TestM08_MergePreservesRunsCoalesceClearsDebt: a merge concatenates the
// sources' encoded runs (same model hashes, in source order: nothing
// re-encoded) and persists the fragmentation bit; coalescing encodes one
// run through the dense writer and the published generation that
// replaces the segment is the one that clears the bit. Exact answers
// never change.
func TestM08_MergePreservesRunsCoalesceClearsDebt(t *testing.T) {
	idx := threeVectorSegments(t)
	defer mustClose(t, idx)
	var srcModels []string
	for _, s := range idx.Metadata().Segments {
		runs, models, frag := ivfOf(t, s)
		if runs != 1 || frag {
			t.Fatalf("fresh segment %s: %d runs, fragmented %v", s.ID, runs, frag)
		}
		srcModels = append(srcModels, models...)
	}
	before := exactKeys(t, idx, 7, `,"exact":true`)
	if _, err := idx.ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	merged := idx.Metadata().Segments[0]
	runs, models, frag := ivfOf(t, merged)
	if runs != 3 || !frag || !slices.Equal(models, srcModels) {
		t.Fatalf("merge output: %d runs %v fragmented %v; sources' models %v", runs, models, frag, srcModels)
	}
	if got := exactKeys(t, idx, 7, `,"exact":true`); !slices.Equal(got, before) {
		t.Fatalf("exact answer changed by the merge:\n%v\n%v", got, before)
	}
	gen := idx.Metadata().Generation
	var atPublish *metadata.Segment
	idx.opts.Hooks.BeforeRewritePublish = func(kind string) {
		s := idx.Metadata().Segments[0]
		atPublish = &s
	}
	res, err := idx.CoalesceSegment(context.Background(), merged.ID)
	if err != nil {
		t.Fatal(err)
	}
	if atPublish == nil || !atPublish.IVFFragmented() {
		t.Fatal("the debt was cleared before the replacement's publication")
	}
	out := idx.Metadata()
	if out.Generation != gen+1 || res.Generation != gen+1 || len(out.Segments) != 1 || out.Segments[0].ID != res.Output {
		t.Fatalf("coalescing published generation %d (from %d), segments %d", out.Generation, gen, len(out.Segments))
	}
	runs, _, frag = ivfOf(t, out.Segments[0])
	if runs != 1 || frag || out.Segments[0].IVFFragmented() {
		t.Fatalf("coalesced output: %d runs, fragmented %v", runs, frag)
	}
	if got := exactKeys(t, idx, 7, `,"exact":true`); !slices.Equal(got, before) {
		t.Fatalf("exact answer changed by coalescing:\n%v\n%v", got, before)
	}
	// The published output was fully validated (Q12) and stays valid.
	if bad, err := idx.Validate(context.Background()); err != nil || len(bad) != 0 {
		t.Fatalf("validate: %v %v", bad, err)
	}
}

// TestM10_CoalesceNeedsPersistedDebt: a fresh single-run vector segment
// is never replaced by coalescing; nothing is published.
func TestM10_CoalesceNeedsPersistedDebt(t *testing.T) {
	idx := threeVectorSegments(t)
	defer mustClose(t, idx)
	gen := idx.Metadata().Generation
	for _, s := range idx.Metadata().Segments {
		if _, err := idx.CoalesceSegment(context.Background(), s.ID); !errors.Is(err, ErrNothingToDo) {
			t.Fatalf("coalescing debt-free %s: %v", s.ID, err)
		}
	}
	if g := idx.Metadata().Generation; g != gen {
		t.Fatalf("generation moved from %d to %d", gen, g)
	}
}

// TestM11_CoalescingPreservesBPState: a maintenance-only coalescing keeps
// the source's BP flags and counters, converged or not.
func TestM11_CoalescingPreservesBPState(t *testing.T) {
	idx := threeVectorSegments(t)
	defer mustClose(t, idx)
	if _, err := idx.ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	src := idx.Metadata().Segments[0]
	// Reorder (one BP pass) keeps the runs: still fragmented, BP done.
	res, err := idx.ReorderSegment(context.Background(), src.ID, ReorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src = idx.Metadata().Segments[0]
	if runs, _, frag := ivfOf(t, src); runs != 3 || !frag || src.ID != res.Output {
		t.Fatalf("reorder output: %d runs, fragmented %v", runs, frag)
	}
	if _, err := idx.CoalesceSegment(context.Background(), src.ID); err != nil {
		t.Fatal(err)
	}
	out := idx.Metadata().Segments[0]
	if out.BPConverged != src.BPConverged || out.BPUnconvergedPasses != src.BPUnconvergedPasses {
		t.Fatalf("coalescing changed BP state: %v/%d -> %v/%d", src.BPConverged, src.BPUnconvergedPasses, out.BPConverged, out.BPUnconvergedPasses)
	}
	if out.IVFFragmented() {
		t.Fatal("coalesced output still fragmented")
	}
}
