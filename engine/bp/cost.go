package bp

import (
	"context"
	"math"
)

// LogGapCost returns sum over terms of sum of log2(gap+1) of the docids of
// each term's postings under order (the quantity BP minimises, a proxy for
// postings bytes).
//
// Under order, old document order[p] gets the new id p. For a term whose
// postings have new ids p1 < p2 < ..., the gaps are p1, p2-p1-1, p3-p2-1,
// ... (the "gap minus one" of delta coding, so adjacent ids cost 0 bits).
// A nil order is the identity. It returns NaN when g is not a valid Graph
// or order is not a permutation of its documents.
func LogGapCost(g *Graph, order []uint32) float64 {
	st := newStopper(context.Background(), noDeadline)
	if g.validate(st) != nil {
		return math.NaN()
	}
	if order != nil && validateOrder(st, order, g.NumDocs()) != nil {
		return math.NaN()
	}
	g, err := compactSparse(st, g)
	if err != nil {
		return math.NaN()
	}
	c, err := logGapCost(st, g, order, nil)
	if err != nil {
		return math.NaN()
	}
	return c
}

// logGapCost computes LogGapCost with cancellation checks. logs, if not
// nil, is a log2 table with at least NumDocs+1 entries.
// REQUIRES: g valid and not sparse (see compactSparse), order nil or a permutation of g's documents.
func logGapCost(st *stopper, g *Graph, order []uint32, logs []float64) (float64, error) {
	// last[t] is 1 + the new id of t's previous posting, 0 before the first.
	last := make([]uint32, g.NumTerms)
	var cost float64
	work := 0
	for p := 0; p < g.NumDocs(); p++ {
		d := uint32(p)
		if order != nil {
			d = order[p]
		}
		terms := g.docTerms(d)
		for _, t := range terms {
			gap := uint32(p) - last[t] // new id - previous new id - 1
			last[t] = uint32(p) + 1
			if gap == 0 {
				continue
			}
			if int(gap)+1 < len(logs) {
				cost += logs[gap+1]
			} else {
				cost += math.Log2(float64(gap) + 1)
			}
		}
		if work += len(terms) + 1; work >= unitWork {
			work = 0
			if err := st.cancelled(); err != nil {
				return 0, err
			}
		}
	}
	return cost, nil
}

// log2Table returns t with t[i] = log2(i) for 1 <= i < n, and t[0] = 0.
func log2Table(n int) []float64 {
	t := make([]float64, n)
	for i := 1; i < n; i++ {
		t[i] = math.Log2(float64(i))
	}
	return t
}
