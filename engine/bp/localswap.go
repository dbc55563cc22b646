package bp

import "slices"

// swapWindow is how far apart two documents may be for localSwaps to
// exchange them. On the linux-doc sections (24,650, path order), doc-id
// bytes after BP (1,783,865 without the swaps): window 8 with three
// sweeps 1,772,634; window 16: one sweep 1,774,892, three 1,770,740, five
// 1,770,033; window 64, one sweep, 1,775,015; window 4, five sweeps,
// 1,774,479. The CPU grows with window x sweeps.
const swapWindow = 8

// swapSweeps bounds the sweeps of localSwaps; a sweep without exchange
// ends it earlier.
const swapSweeps = 3

// localSwaps sweeps the order left to right and, at each position p,
// exchanges its document with the one of p+1..p+swapWindow whose
// exchange lowers LogGapCost the most, when one does. The change is
// exact: a term held by both documents keeps its positions, and a term
// held by one moves one posting between the two positions, whose cost
// change is read from the term's neighbours in the position lists. It
// returns the number of exchanges; it stops early, keeping them, at the
// deadline (errDeadline) or on cancellation (the error).
//
// Bisection and orientation move whole parts; this moves single
// documents across the boundaries of bisection's leaves and of the
// parts orientation placed side by side.
func (o *orienter) localSwaps() (int, error) {
	n := len(o.order)
	var deltaD [swapWindow + 1]float64
	// changed[pos] is 1 + the last sweep that exchanged the document at
	// pos (0: none).
	changed := make([]int32, n)
	swaps := 0
	for sweep := range int32(swapSweeps) {
		before := swaps
		copy(o.cursor, o.tOff[:len(o.cursor)])
		for p := 0; p+1 < n; p++ {
			w := min(swapWindow, n-1-p)
			q := -1
			if sweep == 0 || slices.Max(changed[p:p+w+1]) >= sweep {
				var err error
				if q, err = o.bestSwap(p, w, deltaD[:]); err != nil {
					return swaps, err
				}
			}
			if q >= 0 {
				changed[p], changed[q] = sweep+1, sweep+1
				d, e := o.order[p], o.order[q]
				o.movePositions(d, uint32(p), uint32(q))
				o.movePositions(e, uint32(q), uint32(p))
				o.order[p], o.order[q] = e, d
				swaps++
			}
			for _, t := range o.g.docTerms(o.order[p]) {
				o.cursor[t]++
			}
		}
		if swaps == before {
			break
		}
	}
	return swaps, nil
}

// The sweep keeps cursor[t] ("the cursors at p") at the index in tPos of t's first position
// at or after the current position p, so the index of a position in
// p..p+swapWindow is found by a short scan (index), not a search.

// bestSwap returns the position among p+1..p+w whose document, exchanged
// with p's, lowers LogGapCost the most, or -1 when none lowers it by more
// than flipEpsilon. deltas is scratch of at least w+1 entries.
// REQUIRES: the cursors at p.
func (o *orienter) bestSwap(p, w int, deltas []float64) (int, error) {
	work := o.swapDeltas(p, w, deltas)
	best, bestQ := -flipEpsilon, -1
	for k := 1; k <= w; k++ {
		if deltas[k] < best {
			best, bestQ = deltas[k], p+k
		}
	}
	return bestQ, o.tick(work)
}

// swapDeltas sets deltas[k], for 1 <= k <= w, to the change of
// LogGapCost if the documents at p and p+k traded places, and returns the
// postings read. REQUIRES: the cursors at p.
func (o *orienter) swapDeltas(p, w int, deltas []float64) int {
	dTerms := o.g.docTerms(o.order[p])
	clear(deltas[:w+1])
	for _, t := range dTerms {
		o.addRightMoves(t, o.cursor[t], w, deltas)
	}
	work := len(dTerms) * w
	for k := 1; k <= w; k++ {
		q := p + k
		eTerms := o.g.docTerms(o.order[q])
		for _, t := range eTerms {
			deltas[k] += o.leftMove(t, q, p)
		}
		work += len(eTerms)
	}
	return work
}

// index returns the index in tPos of position p in t's list, scanning
// from cursor[t]. REQUIRES: t's list holds p, at or after cursor[t].
func (o *orienter) index(t, p uint32) uint64 {
	i := o.cursor[t]
	for o.tPos[i] < p {
		i++
	}
	return i
}

// addRightMoves adds to out[k], for 1 <= k <= w, the change of t's cost
// if its posting at position a = tPos[i] moved to a+k (0 when t's list
// holds a+k: the document at a+k holds t too), walking t's list once.
func (o *orienter) addRightMoves(t uint32, i uint64, w int, out []float64) {
	logs := o.logs
	start, end := o.tOff[t], o.tOff[t+1]
	a := int64(o.tPos[i])
	pa, na := int64(-1), int64(-1)
	if i > start {
		pa = int64(o.tPos[i-1])
	}
	if i+1 < end {
		na = int64(o.tPos[i+1])
	}
	// Leaving a: the gap pa..na replaces pa..a and a..na.
	leave := -logs[a-pa]
	if na >= 0 {
		leave += logs[na-pa] - logs[na-a]
	}
	pb, j := pa, i+1 // pb: t's last position before b other than a; j: index of the next
	for k := 1; k <= w; k++ {
		b := a + int64(k)
		for j < end && int64(o.tPos[j]) < b {
			pb = int64(o.tPos[j])
			j++
		}
		if j < end && int64(o.tPos[j]) == b {
			continue
		}
		delta := leave + logs[b-pb]
		if j < end {
			nb := int64(o.tPos[j])
			delta += logs[nb-b] - logs[nb-pb]
		}
		out[k] += delta
	}
}

// leftMove returns the change of t's cost if its posting at position q
// moved to the current position p < q of the sweep, read from the
// cursor; 0 when t's list holds p.
func (o *orienter) leftMove(t uint32, q, p int) float64 {
	logs := o.logs
	start, end := o.tOff[t], o.tOff[t+1]
	c := o.cursor[t] // t's first position >= p: p itself, or the new neighbour after p
	if int(o.tPos[c]) == p {
		return 0
	}
	i := c
	for int(o.tPos[i]) < q {
		i++
	}
	a, b := int64(q), int64(p)
	pa, na := int64(-1), int64(-1)
	if i > start {
		pa = int64(o.tPos[i-1])
	}
	if i+1 < end {
		na = int64(o.tPos[i+1])
	}
	pb, nb := int64(-1), na
	if c > start {
		pb = int64(o.tPos[c-1])
	}
	if c != i {
		nb = int64(o.tPos[c])
	}
	delta := logs[b-pb] - logs[a-pa]
	if na >= 0 {
		delta += logs[na-pa] - logs[na-a]
	}
	if nb >= 0 {
		delta += logs[nb-b] - logs[nb-pb]
	}
	return delta
}

// movePositions moves doc d's postings from position a to b in the lists
// of its terms that do not hold b already, keeping each list sorted.
func (o *orienter) movePositions(d, a, b uint32) {
	ps := o.tPos
	for _, t := range o.g.docTerms(d) {
		i := o.index(t, a)
		start, end := o.tOff[t], o.tOff[t+1]
		if b > a {
			j := i + 1
			for j < end && ps[j] < b {
				j++
			}
			if j < end && ps[j] == b {
				continue
			}
			copy(ps[i:j-1], ps[i+1:j])
			ps[j-1] = b
		} else {
			j := i
			for j > start && ps[j-1] > b {
				j--
			}
			if j > start && ps[j-1] == b {
				continue
			}
			copy(ps[j+1:i+1], ps[j:i])
			ps[j] = b
		}
	}
}
