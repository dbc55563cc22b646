package index

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"testing"
	"time"
)

// shuffledDocs returns docs 0..n in a seeded random order, so BP has
// something to gain.
func shuffledDocs(t *testing.T, n int) []int {
	order := rand.New(rand.NewPCG(7, 7)).Perm(n)
	return order
}

func TestQ13_ReorderShrinksPostingsAndKeepsResults(t *testing.T) {
	fs, idx := createMem(t)
	defer mustClose(t, idx)
	all := docs(t, 0, 500, 1)
	for _, i := range shuffledDocs(t, len(all)) {
		if err := idx.Add(all[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, idx)
	if _, err := idx.Delete("p0042"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	if _, err := idx.ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	queries := []string{`light`, `+prism +colours`, `"angle of incidence"`, `refraction -reflexion`, `rays of light`}
	before := map[string][]string{}
	for _, q := range queries {
		res, err := searchQ(t, idx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			before[q] = append(before[q], string(h.Fields))
		}
	}
	vis := visible(t, idx)
	results, err := idx.Reorder(context.Background(), ReorderOptions{})
	if err != nil || len(results) != 1 {
		t.Fatalf("reorder: %+v %v", results, err)
	}
	r := results[0]
	t.Logf("bp postings bytes: before=%d after=%d (doc-id sections: before=%d after=%d)",
		r.PostingsBytesBefore, r.PostingsBytesAfter, r.DocPostingsBytesBefore, r.DocPostingsBytesAfter)
	if r.PostingsBytesAfter >= r.PostingsBytesBefore || r.DocPostingsBytesAfter >= r.DocPostingsBytesBefore {
		t.Fatalf("postings did not shrink: %d -> %d", r.PostingsBytesBefore, r.PostingsBytesAfter)
	}
	if !maps.Equal(visible(t, idx), vis) {
		t.Fatal("reorder changed visibility (the mask was not carried)")
	}
	for _, q := range queries {
		res, err := searchQ(t, idx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != len(before[q]) {
			t.Fatalf("%s: %d hits after reorder, %d before", q, len(res.Hits), len(before[q]))
		}
		for i, h := range res.Hits {
			if string(h.Fields) != before[q][i] {
				t.Fatalf("%s: hit %d differs after reorder", q, i)
			}
		}
	}
	seg := idx.Metadata().Segments[0]
	if seg.BPConverged != r.BPConverged {
		t.Fatal("metadata does not record bpConverged")
	}
	checkOwned(t, fs, idx)
}

func TestQ13_BudgetTruncatedPassCountsUnconverged(t *testing.T) {
	_, idx := createMem(t)
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 300, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	id := idx.Metadata().Segments[0].ID
	res, err := idx.ReorderSegment(context.Background(), id, ReorderOptions{MaxDepth: 1})
	if err != nil {
		t.Fatal(err)
	}
	seg := idx.Metadata().Segments[0]
	if res.BPConverged || seg.BPConverged || seg.BPUnconvergedPasses != 1 {
		t.Fatalf("truncated pass: converged=%v passes=%d", seg.BPConverged, seg.BPUnconvergedPasses)
	}
	// The follow-up pass warm-starts from the current order and counts on.
	if _, err := idx.ReorderSegment(context.Background(), seg.ID, ReorderOptions{MaxDepth: 1}); err != nil {
		t.Fatal(err)
	}
	if got := idx.Metadata().Segments[0].BPUnconvergedPasses; got != 2 {
		t.Fatalf("lineage passes %d, want 2", got)
	}
}

func TestS03_ReorderCancellationDiscardsEverything(t *testing.T) {
	fs, idx := createMem(t)
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 500, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	before := segFiles(t, fs)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	time.Sleep(2 * time.Millisecond)
	_, err := idx.ReorderSegment(ctx, idx.Metadata().Segments[0].ID, ReorderOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled reorder: %v", err)
	}
	if after := segFiles(t, fs); len(after) != len(before) || idx.Manager().ActiveOperations() != 0 {
		t.Fatalf("cancelled reorder left files or claims: %v", after)
	}
}
