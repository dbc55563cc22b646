package bp

// swapWindow is how far apart two documents may be for localSwaps to
// exchange them. On the linux-doc sections (24,650, path order) one sweep
// took the doc-id bytes after BP from 1,783,865 to 1,774,892 with a
// window of 16 and to 1,775,015 with 64 (four times the CPU); 8 with
// three sweeps gave 1,772,634.
const swapWindow = 16

// swapSweeps bounds the sweeps of localSwaps; a sweep without exchange
// ends it earlier. Linux-doc sections, window 16: one sweep 1,774,892
// doc-id bytes, three 1,770,740, five 1,770,033.
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
	swaps := 0
	for range swapSweeps {
		before := swaps
		for p := 0; p+1 < n; p++ {
			q, err := o.bestSwap(p, min(swapWindow, n-1-p), deltaD[:])
			if err != nil {
				return swaps, err
			}
			if q < 0 {
				continue
			}
			d, e := o.order[p], o.order[q]
			o.movePositions(d, uint32(p), uint32(q))
			o.movePositions(e, uint32(q), uint32(p))
			o.order[p], o.order[q] = e, d
			swaps++
		}
		if swaps == before {
			break
		}
	}
	return swaps, nil
}

// bestSwap returns the position among p+1..p+w whose document, exchanged
// with p's, lowers LogGapCost the most, or -1 when none lowers it by more
// than flipEpsilon. deltaD is scratch of at least w+1 entries.
func (o *orienter) bestSwap(p, w int, deltaD []float64) (int, error) {
	dTerms := o.g.docTerms(o.order[p])
	clear(deltaD[:w+1])
	for _, t := range dTerms {
		i := o.index(t, uint32(p))
		for k := 1; k <= w; k++ {
			deltaD[k] += o.moveDelta(t, i, p+k)
		}
	}
	best, bestQ := -flipEpsilon, -1
	work := len(dTerms) * w
	for k := 1; k <= w; k++ {
		q := p + k
		sum := deltaD[k]
		eTerms := o.g.docTerms(o.order[q])
		for _, t := range eTerms {
			sum += o.moveDelta(t, o.index(t, uint32(q)), p)
		}
		work += len(eTerms)
		if sum < best {
			best, bestQ = sum, q
		}
	}
	return bestQ, o.tick(work)
}

// index returns the index in tPos of position p in t's list.
// REQUIRES: t's list holds p.
func (o *orienter) index(t, p uint32) uint64 {
	lo, hi := o.tOff[t], o.tOff[t+1]
	for lo < hi {
		m := lo + (hi-lo)/2
		if o.tPos[m] < p {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// moveDelta returns the change of t's cost if its posting at position a =
// tPos[i] moved to position b: 0 when t's list already holds b (the other
// document of an exchange holds t too, which leaves t's list as it is).
// The posting leaves the gap between its neighbours pa and na, and splits
// the one between b's neighbours pb and nb (-1 before the first, none
// after the last). It walks the list from i to b, so it is meant for b
// near a.
func (o *orienter) moveDelta(t uint32, i uint64, b int) float64 {
	logs := o.logs
	start, end := o.tOff[t], o.tOff[t+1]
	a, bb := int64(o.tPos[i]), int64(b)
	pa, na := int64(-1), int64(-1)
	if i > start {
		pa = int64(o.tPos[i-1])
	}
	if i+1 < end {
		na = int64(o.tPos[i+1])
	}
	pb, nb := pa, na
	if bb > a {
		j := i + 1
		for j < end && int64(o.tPos[j]) < bb {
			j++
		}
		if j < end && int64(o.tPos[j]) == bb {
			return 0
		}
		if j-1 != i {
			pb = int64(o.tPos[j-1])
		}
		nb = -1
		if j < end {
			nb = int64(o.tPos[j])
		}
	} else {
		j := i // b goes before tPos[j], after tPos[j-1]
		for j > start && int64(o.tPos[j-1]) > bb {
			j--
		}
		if j > start && int64(o.tPos[j-1]) == bb {
			return 0
		}
		pb = -1
		if j > start {
			pb = int64(o.tPos[j-1])
		}
		if j != i {
			nb = int64(o.tPos[j])
		}
	}
	delta := logs[bb-pb] - logs[a-pa]
	if na >= 0 {
		delta += logs[na-pa] - logs[na-a]
	}
	if nb >= 0 {
		delta += logs[nb-bb] - logs[nb-pb]
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
