package bp

import "slices"

// orientSweeps bounds the passes of orientation over the bisection tree;
// a pass that changes nothing ends it earlier. With reversals alone, a
// second pass took only 0.03% more off the doc-id bytes of the linux-doc
// sections (1,787,053 -> 1,786,454) for about 0.7 s more CPU on 24,650
// sections.
const orientSweeps = 1

// orienter reverses spans of the bisection tree, or swaps their two
// halves, when that lowers LogGapCost exactly. Bisection only decides
// which documents share a part, not in which direction a part is read or
// which of two sibling parts comes first: a term split between two
// sibling parts pays a gap from the last of its documents in the left
// part to the first in the right part, and the first document of every
// term pays for its position (the "gap" from -1). Both moves keep every
// gap inside a half, so the change is computed from each term's first and
// last documents in each half and its neighbours outside the span.
//
// The position lists are a term->position CSR, updated as spans change.
// Spans of one level are visited left to right in one scan of the
// positions, so cursor[t] is always the index in t's list of its next
// occurrence: no search is needed.
type orienter struct {
	g     *Graph
	order []uint32
	st    *stopper
	// logs[i] = log2(i).
	logs []float64
	// tOff[t]..tOff[t+1] is t's slice of tPos, the positions of its
	// documents, increasing.
	tOff []uint64
	tPos []uint32
	// cursor[t] is the index in tPos of t's next occurrence in the scan;
	// first[t] the index of its first occurrence in the current span.
	cursor, first []uint64
	// mid[t] is the index of t's first occurrence in the right half of
	// the current span (cursor[t] after the span when it has none there).
	mid []uint64
	// stamp[t] is the value of span when t was last seen; span counts the
	// spans visited, from 1.
	stamp   []uint32
	span    uint32
	touched []uint32
	work    int
}

// newOrienter builds the position lists of order over g.
func newOrienter(st *stopper, g *Graph, order []uint32, logs []float64) (*orienter, error) {
	o := &orienter{g: g, order: order, st: st, logs: logs,
		tOff:   make([]uint64, uint64(g.NumTerms)+1),
		tPos:   make([]uint32, len(g.Terms)),
		cursor: make([]uint64, g.NumTerms),
		first:  make([]uint64, g.NumTerms),
		mid:    make([]uint64, g.NumTerms),
		stamp:  make([]uint32, g.NumTerms),
	}
	for _, t := range g.Terms {
		o.tOff[t+1]++
	}
	for t := 1; t < len(o.tOff); t++ {
		o.tOff[t] += o.tOff[t-1]
	}
	if err := o.fill(); err != nil {
		return nil, err
	}
	return o, nil
}

// fill writes the position lists in one scan of the order and leaves the
// cursors at the start of every list.
func (o *orienter) fill() error {
	copy(o.cursor, o.tOff[:len(o.cursor)])
	for p, d := range o.order {
		for _, t := range o.g.docTerms(d) {
			o.tPos[o.cursor[t]] = uint32(p)
			o.cursor[t]++
		}
		if err := o.tick(o.g.docLen(d)); err != nil {
			return err
		}
	}
	copy(o.cursor, o.tOff[:len(o.cursor)])
	return nil
}

// tick counts work and checks the stopper between bounded units.
func (o *orienter) tick(n int) error {
	if o.work += n + 1; o.work >= unitWork {
		o.work = 0
		return o.st.check()
	}
	return nil
}

// levels returns the spans of the bisection tree below the root, level by
// level from the top, split as bisectAll splits them and continued below
// bisection's leaves down to single documents (a span of two is the
// smallest reversed): reversing any span is exact, so the leaves, in
// whatever order bisection left them, are oriented too.
func levels(n int) [][]span {
	var out [][]span
	parts := []span{{0, n}}
	for len(parts) > 0 {
		var next []span
		for _, s := range parts {
			mid := s.lo + (s.hi-s.lo)/2
			for _, k := range [2]span{{s.lo, mid}, {mid, s.hi}} {
				if k.hi-k.lo >= 2 {
					next = append(next, k)
				}
			}
		}
		if len(next) > 0 {
			out = append(out, next)
		}
		parts = next
	}
	return out
}

// orient runs the sweeps over the tree's spans and returns the number of
// changes (reversals and swaps). It stops early, keeping the changes
// done, at the deadline (errDeadline) or on cancellation (the error).
func (o *orienter) orient() (int, error) {
	tree := levels(len(o.order))
	flips := 0
	for range orientSweeps {
		before := flips
		for _, level := range tree {
			copy(o.cursor, o.tOff[:len(o.cursor)])
			pos := 0
			for _, s := range level {
				if err := o.skip(pos, s.lo); err != nil {
					return flips, err
				}
				pos = s.hi
				flipped, err := o.visit(s)
				if err != nil {
					return flips, err
				}
				if flipped {
					flips++
				}
			}
		}
		if flips == before {
			break
		}
	}
	return flips, nil
}

// skip advances the cursors over the positions [from, to), which belong
// to no span of the level (parts too small to split).
func (o *orienter) skip(from, to int) error {
	for p := from; p < to; p++ {
		d := o.order[p]
		for _, t := range o.g.docTerms(d) {
			o.cursor[t]++
		}
		if err := o.tick(o.g.docLen(d)); err != nil {
			return err
		}
	}
	return nil
}

// visit scans span s (advancing the cursors past it), then reverses it
// or swaps its two halves (split as bisection splits) if either lowers
// the cost, the better of the two, and reports whether it changed the
// order. The spans of a level must be visited left to right after the
// cursors were reset; positions before s are final for this level,
// positions after s are current.
func (o *orienter) visit(s span) (bool, error) {
	o.span++
	o.touched = o.touched[:0]
	m := s.lo + (s.hi-s.lo)/2
	if err := o.scan(s.lo, m); err != nil {
		return false, err
	}
	for _, t := range o.touched {
		o.mid[t] = o.cursor[t]
	}
	inA := len(o.touched)
	if err := o.scan(m, s.hi); err != nil {
		return false, err
	}
	for _, t := range o.touched[inA:] {
		o.mid[t] = o.first[t]
	}
	flip, swap := o.deltas(s, m)
	switch {
	case flip < -flipEpsilon && flip <= swap:
		o.reverse(s)
	case swap < -flipEpsilon:
		o.swapHalves(s, m)
	default:
		return false, nil
	}
	return true, o.tick(len(o.touched) + s.hi - s.lo)
}

// scan advances the cursors over the positions [from, to) of the current
// span, recording each term's first occurrence in the span.
func (o *orienter) scan(from, to int) error {
	for p := from; p < to; p++ {
		d := o.order[p]
		for _, t := range o.g.docTerms(d) {
			if o.stamp[t] != o.span {
				o.stamp[t] = o.span
				o.first[t] = o.cursor[t]
				o.touched = append(o.touched, t)
			}
			o.cursor[t]++
		}
		if err := o.tick(o.g.docLen(d)); err != nil {
			return err
		}
	}
	return nil
}

// reverse reverses span s in the order and the position lists.
func (o *orienter) reverse(s span) {
	mirror := uint32(s.lo + s.hi - 1)
	for _, t := range o.touched {
		ps := o.tPos[o.first[t]:o.cursor[t]]
		for i, j := 0, len(ps)-1; i <= j; i, j = i+1, j-1 {
			ps[i], ps[j] = mirror-ps[j], mirror-ps[i]
		}
	}
	slices.Reverse(o.order[s.lo:s.hi])
}

// swapHalves moves the documents of [m, s.hi) before those of [s.lo, m),
// each half keeping its order, in the order and the position lists.
func (o *orienter) swapHalves(s span, m int) {
	a, b := uint32(m-s.lo), uint32(s.hi-m)
	for _, t := range o.touched {
		ps := o.tPos[o.first[t]:o.cursor[t]]
		k := o.mid[t] - o.first[t]
		for i := range ps[:k] {
			ps[i] += b
		}
		for i := range ps[k:] {
			ps[k+uint64(i)] -= a
		}
		rotate(ps, int(k))
	}
	rotate(o.order[s.lo:s.hi], int(a))
}

// rotate moves x[:k] after x[k:].
func rotate(x []uint32, k int) {
	slices.Reverse(x[:k])
	slices.Reverse(x[k:])
	slices.Reverse(x)
}

// flipEpsilon is the smallest cost decrease, in bits, worth a flip (float
// noise must not flip a span back and forth).
const flipEpsilon = 1e-6

// deltas returns the changes of LogGapCost if span s were reversed (flip)
// or if its halves [s.lo, m) and [m, s.hi) traded places (swap), from the
// touched terms' first and last positions in each half and their
// neighbours outside s. Gaps inside a half never change.
func (o *orienter) deltas(s span, m int) (flip, swap float64) {
	logs := o.logs
	mirror := int64(s.lo + s.hi - 1)
	a, b := int64(m-s.lo), int64(s.hi-m)
	for _, t := range o.touched {
		i1, im, i2 := o.first[t], o.mid[t], o.cursor[t]
		prev := int64(-1)
		if i1 > o.tOff[t] {
			prev = int64(o.tPos[i1-1])
		}
		next := int64(-1)
		if i2 < o.tOff[t+1] {
			next = int64(o.tPos[i2])
		}
		f, l := int64(o.tPos[i1]), int64(o.tPos[i2-1])
		// Flip: first and last become mirror-l and mirror-f.
		flip += logs[mirror-l-prev] - logs[f-prev]
		if next >= 0 {
			flip += logs[next-mirror+f] - logs[next-l]
		}
		// Swap: the right half's documents move a places down, the left
		// half's b places up.
		var nf, nl int64
		switch {
		case im == i1: // only in the right half
			nf, nl = f-a, l-a
		case im == i2: // only in the left half
			nf, nl = f+b, l+b
		default:
			lA, fB := int64(o.tPos[im-1]), int64(o.tPos[im])
			nf, nl = fB-a, lA+b
			swap += logs[f+b-(l-a)] - logs[fB-lA]
		}
		swap += logs[nf-prev] - logs[f-prev]
		if next >= 0 {
			swap += logs[next-nl] - logs[next-l]
		}
	}
	return flip, swap
}
