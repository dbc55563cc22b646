package search

import (
	"math"
	"slices"
	"sync"
)

// excluded marks a document a must-not clause matched.
const excluded = math.MaxUint16

// gate says which documents a clause may change. Every document carries a
// mark: 0 when no clause touched it, k after it matched the first k must
// clauses, 1 after it matched a should clause of a query without must
// clauses, excluded after a must-not clause matched it. A clause moves
// documents marked from to the mark to, and adds to the score of documents
// it moved or that an earlier field of the same clause moved.
type gate struct {
	// from is the mark of the documents the clause may match.
	from uint16
	// to is the mark a match leaves.
	to uint16
	// score tells whether matches add to the score.
	score bool
}

// accumulator holds per-document scores and marks for one segment at a
// time, in slices indexed by doc id.
//
// INVARIANT: between uses, every score and mark is zero; a doc id is in
// touched exactly when its mark is not zero, and its score is zero when its
// mark is.
type accumulator struct {
	// score is each document's score so far.
	score []float64
	// mark is each document's mark (see gate).
	mark []uint16
	// touched lists the documents whose mark is not zero, in no order.
	touched []uint32
	// moved counts the documents moved by the current clause.
	moved int
	// cands and merged are scratch for candidates.
	cands, merged []uint32
}

// candidates returns the documents marked m (not zero), in increasing
// order; the slice is reused by the next call.
func (a *accumulator) candidates(m uint16) []uint32 {
	c := a.cands[:0]
	descents, split := 0, 0
	for _, d := range a.touched {
		if a.mark[d] == m {
			if len(c) > 0 && c[len(c)-1] > d {
				descents, split = descents+1, len(c)
			}
			c = append(c, d)
		}
	}
	switch {
	case descents == 1:
		// Two ascending runs (a clause over two fields): merge them.
		a.merged = mergeRuns(a.merged[:0], c[:split], c[split:])
		c = append(c[:0], a.merged...)
	case descents > 1:
		slices.Sort(c)
	}
	a.cands = c
	return c
}

// mergeRuns appends the merge of the ascending runs x and y, which hold
// distinct values, to dst.
func mergeRuns(dst, x, y []uint32) []uint32 {
	for len(x) > 0 && len(y) > 0 {
		if x[0] < y[0] {
			dst, x = append(dst, x[0]), x[1:]
		} else {
			dst, y = append(dst, y[0]), y[1:]
		}
	}
	dst = append(dst, x...)
	return append(dst, y...)
}

// accumulators recycles accumulators: their slices are as long as the
// largest segment searched, too large to allocate per query.
var accumulators = sync.Pool{New: func() any { return new(accumulator) }}

// getAccumulator returns a zeroed accumulator for segments of up to n docs.
func getAccumulator(n uint32) *accumulator {
	a := accumulators.Get().(*accumulator)
	if uint32(len(a.mark)) < n {
		a.score = make([]float64, n)
		a.mark = make([]uint16, n)
	}
	return a
}

// release zeroes the accumulator and returns it to the pool.
func (a *accumulator) release() {
	a.reset()
	accumulators.Put(a)
}

// reset zeroes the touched documents, keeping the invariant.
func (a *accumulator) reset() {
	for _, d := range a.touched {
		a.score[d], a.mark[d] = 0, 0
	}
	a.touched = a.touched[:0]
	a.moved = 0
}

// admits reports whether the clause behind g can change doc; callers skip
// the work of scoring (and of phrase matching) for docs it does not admit.
func (a *accumulator) admits(g gate, doc uint32) bool {
	m := a.mark[doc]
	return m == g.from || (g.score && m == g.to)
}

// match records that the clause behind g matched doc with score s.
func (a *accumulator) match(g gate, doc uint32, s float64) {
	m := a.mark[doc]
	if m == g.from && m != g.to {
		if m == 0 {
			a.touched = append(a.touched, doc)
		}
		a.mark[doc] = g.to
		m = g.to
		a.moved++
	}
	if m == g.to && g.score {
		a.score[doc] += s
	}
}

// collect offers the documents of view vi marked target and not deleted to
// top and returns their number.
func (acc *accumulator) collect(vi int, view *SegmentView, target uint16, top *topK) int {
	n := 0
	for _, d := range acc.touched {
		if acc.mark[d] != target || view.isDeleted(d) {
			continue
		}
		n++
		if s := acc.score[d]; len(top.heap) < top.k || (top.k > 0 && s >= top.heap[0].score) {
			top.offer(scored{view: vi, doc: d, score: s}) // else not better than the worst kept
		}
	}
	return n
}
