package bp

import (
	"context"
	"slices"
	"testing"
)

// bisectOnly runs bisection alone (no orientation, no local swaps) over
// g from the identity and returns the order; plain turns keyOrder off.
func bisectOnly(t *testing.T, g *Graph, plain bool) []uint32 {
	t.Helper()
	st := newStopper(context.Background(), noDeadline)
	p, _ := Budget{Workers: 1}.normalize()
	cg, err := compactSparse(st, g)
	if err != nil {
		t.Fatal(err)
	}
	order := identity(g.NumDocs())
	r := newRun(cg, order, p, st, log2Table(g.NumDocs()+3))
	r.plainHalves = plain
	if _, err := r.bisectAll(); err != nil {
		t.Fatal(err)
	}
	return order
}

// TestKeyOrderSortsHalves: after a partition is refined, each half is in
// increasing order of its documents' "belongs right" keys, computed for
// the final halves.
func TestKeyOrderSortsHalves(t *testing.T) {
	g := realGraph(t)
	st := newStopper(context.Background(), noDeadline)
	p, _ := Budget{Workers: 1}.normalize()
	order := identity(g.NumDocs())
	r := newRun(g, order, p, st, log2Table(g.NumDocs()+3))
	s := newScratch(g.NumTerms)
	n := len(order)
	if err := r.refine(s, 0, n); err != nil {
		t.Fatal(err)
	}
	checkPerm(t, order, n)
	if err := r.countDegrees(s, order, n/2); err != nil {
		t.Fatal(err)
	}
	if err := r.termGains(s, n/2, n-n/2); err != nil {
		t.Fatal(err)
	}
	if err := r.docKeys(s, 0, n, n/2); err != nil {
		t.Fatal(err)
	}
	s.clear()
	for _, half := range [][]float64{r.keys[:n/2], r.keys[n/2:]} {
		if !slices.IsSorted(half) {
			t.Fatalf("a half of %d documents is not sorted by key", len(half))
		}
	}
	if r.keys[0] >= r.keys[n-1] {
		t.Errorf("first key %g, last %g: the halves do not lean apart", r.keys[0], r.keys[n-1])
	}
}

// TestKeyOrderLowersBisectionCost: on real text, bisection with each
// half sorted by key ends at a lower LogGapCost than bisection that
// leaves the halves in the order the swaps left them.
func TestKeyOrderLowersBisectionCost(t *testing.T) {
	g := realGraph(t)
	plain := LogGapCost(g, bisectOnly(t, g, true))
	keyed := LogGapCost(g, bisectOnly(t, g, false))
	t.Logf("bisection alone: halves as swapped %.0f, sorted by key %.0f (%.2f%% lower)", plain, keyed, 100*(1-keyed/plain))
	if keyed >= plain*0.99 {
		t.Errorf("key order %.0f, plain halves %.0f: want at least 1%% lower", keyed, plain)
	}
}
