package bp

import (
	"cmp"
	"slices"
)

// scratch is one worker's per-term state, reused partition after
// partition. INVARIANT: between partitions every deg entry is 0 and
// touched is empty.
type scratch struct {
	// deg[0][t], deg[1][t]: documents holding t in the left, right half.
	deg [2][]int32
	// gain[0][t]: cost saved per left document holding t that moves
	// right; gain[1][t]: per right document that moves left.
	gain [2][]float32
	// touched lists the terms of the current partition (deg not both 0).
	touched []uint32
}

// newScratch returns a zeroed scratch for numTerms terms.
func newScratch(numTerms uint32) *scratch {
	return &scratch{
		deg:  [2][]int32{make([]int32, numTerms), make([]int32, numTerms)},
		gain: [2][]float32{make([]float32, numTerms), make([]float32, numTerms)},
	}
}

// refine runs the swap rounds on the partition order[lo:hi] (hi-lo >= 2):
// its first n/2 documents form the left half, the rest the right half.
// It returns errDeadline or a cancellation error when stopped; the
// partition is a permutation of its documents at every point.
func (r *run) refine(s *scratch, lo, hi int) error {
	docs := r.order[lo:hi]
	n1 := len(docs) / 2
	if err := r.countDegrees(s, docs, n1); err != nil {
		s.clear()
		return err
	}
	defer s.clear()
	fresh := false // keys[lo:hi] are those of the current halves
	for round := range r.p.iterations {
		if err := r.termGains(s, n1, len(docs)-n1); err != nil {
			return err
		}
		if err := r.docKeys(s, lo, hi, n1); err != nil {
			return err
		}
		moves, err := r.selectMoves(lo, hi, n1)
		if err != nil {
			return err
		}
		if moves == 0 {
			fresh = true
			break
		}
		if err := r.swap(s, lo, hi, n1, uint64(round)); err != nil {
			return err
		}
	}
	return r.keyOrder(s, lo, hi, n1, fresh)
}

// keyOrder sorts each half of the refined partition order[lo:hi] by its
// documents' "belongs right" keys, increasing (ties keep their order),
// so that the documents that lean most to the other half sit next to the
// cut and those that lean least at the partition's ends. The halves keep
// their documents; what changes is where the next level cuts each half
// (its first half-size documents by key against the rest, a better start
// than an arbitrary split) and, below the last level, the order inside
// the leaves, which follows the keys as a one-dimensional embedding. When
// fresh is false the keys are recomputed for the final halves first.
func (r *run) keyOrder(s *scratch, lo, hi, n1 int, fresh bool) error {
	if r.plainHalves {
		return nil
	}
	if !fresh {
		if err := r.termGains(s, n1, hi-lo-n1); err != nil {
			return err
		}
		if err := r.docKeys(s, lo, hi, n1); err != nil {
			return err
		}
	}
	if err := r.stop.check(); err != nil {
		return err
	}
	keys, sel, docs, tmp := r.keys[lo:hi], r.sel[lo:hi], r.order[lo:hi], r.tmp[lo:hi]
	for i := range sel {
		sel[i] = uint32(i)
	}
	byKey := func(a, b uint32) int { return cmp.Compare(keys[a], keys[b]) }
	slices.SortStableFunc(sel[:n1], byKey)
	slices.SortStableFunc(sel[n1:], byKey)
	for i, j := range sel {
		tmp[i] = docs[j]
	}
	copy(docs, tmp)
	return nil
}

// clear restores the scratch invariant.
func (s *scratch) clear() {
	for _, t := range s.touched {
		s.deg[0][t], s.deg[1][t] = 0, 0
	}
	s.touched = s.touched[:0]
}

// countDegrees fills deg and touched for the partition docs split at n1.
func (r *run) countDegrees(s *scratch, docs []uint32, n1 int) error {
	work := 0
	for i, d := range docs {
		side := 0
		if i >= n1 {
			side = 1
		}
		terms := r.g.docTerms(d)
		for _, t := range terms {
			if s.deg[0][t] == 0 && s.deg[1][t] == 0 {
				s.touched = append(s.touched, t)
			}
			s.deg[side][t]++
		}
		if work += len(terms) + 1; work >= unitWork {
			work = 0
			if err := r.stop.check(); err != nil {
				return err
			}
		}
	}
	return nil
}

// termGains computes, for every touched term, the cost saved when one
// document holding it changes half. The cost of a term in a half of n
// documents, d of them holding it, is d*log2(n/(d+1)) = d*log2(n) - h(d)
// with h(d) = d*log2(d+1). Moving one document from the left (d1 of n1)
// to the right (d2 of n2) saves
//
//	[d1*log2(n1) - h(d1) + d2*log2(n2) - h(d2)]
//	  - [(d1-1)*log2(n1) - h(d1-1) + (d2+1)*log2(n2) - h(d2+1)]
//	= log2(n1) - log2(n2) - delta[d1] + delta[d2+1]
//
// and symmetrically to the left, so each gain is two table reads.
func (r *run) termGains(s *scratch, n1, n2 int) error {
	delta := r.delta
	tilt := r.logs[n1] - r.logs[n2] // log2(n1/n2), 0 or tiny
	for i, t := range s.touched {
		d1, d2 := s.deg[0][t], s.deg[1][t]
		if d1 > 0 {
			s.gain[0][t] = float32(tilt - delta[d1] + delta[d2+1])
		}
		if d2 > 0 {
			s.gain[1][t] = float32(-tilt - delta[d2] + delta[d1+1])
		}
		if i%unitWork == unitWork-1 {
			if err := r.stop.check(); err != nil {
				return err
			}
		}
	}
	return nil
}

// docKeys sets keys[lo+i] to the "belongs right" key of the partition's
// i-th document: the gain of moving right for a left document, minus the
// gain of moving left for a right one.
func (r *run) docKeys(s *scratch, lo, hi, n1 int) error {
	work := 0
	for i, d := range r.order[lo:hi] {
		side := 0
		if i >= n1 {
			side = 1
		}
		terms := r.g.docTerms(d)
		gain := s.gain[side]
		var sum float64
		for _, t := range terms {
			sum += float64(gain[t])
		}
		if side == 1 {
			sum = -sum
		}
		r.keys[lo+i] = sum
		if work += len(terms) + 1; work >= unitWork {
			work = 0
			if err := r.stop.check(); err != nil {
				return err
			}
		}
	}
	return nil
}

// selectMoves picks the n2 documents with the highest keys for the right
// half (ties keep documents where they are) and flags in moved[lo:hi] the
// documents that change half. Pairing the k-th best left candidate with
// the k-th best right one, this is exactly the set of pairs whose summed
// gain is positive. It returns the number of documents moving each way.
func (r *run) selectMoves(lo, hi, n1 int) (int, error) {
	n := hi - lo
	keys, sel := r.keys[lo:hi], r.sel[lo:hi]
	for i := range sel {
		sel[i] = uint32(i)
	}
	left := uint32(n1)
	before := func(a, b uint32) bool {
		if keys[a] != keys[b] {
			return keys[a] > keys[b]
		}
		if ra, rb := a >= left, b >= left; ra != rb {
			return ra // on a tie the right document stays right
		}
		return a < b
	}
	if err := selectFirst(r.stop, sel, n-n1, before); err != nil {
		return 0, err
	}
	moves := 0
	for _, i := range sel[:n-n1] {
		if i < left {
			r.moved[lo+int(i)] = true
			moves++
		}
	}
	for _, i := range sel[n-n1:] {
		if i >= left {
			r.moved[lo+int(i)] = true
		}
	}
	return moves, nil
}

// swap exchanges the flagged documents pairwise, the k-th flagged left
// position with the k-th flagged right one, keeping every other document
// in place, and updates the degrees. It clears the flags.
func (r *run) swap(s *scratch, lo, hi, n1 int, round uint64) error {
	docs, moved := r.order[lo:hi], r.moved[lo:hi]
	i, j, work := 0, n1, 0
	for {
		for i < n1 && !moved[i] {
			i++
		}
		for j < len(docs) && !moved[j] {
			j++
		}
		if i == n1 || j == len(docs) {
			break
		}
		a, b := docs[i], docs[j]
		moved[i], moved[j] = false, false
		if skipPair(a, b, round) {
			continue
		}
		for _, t := range r.g.docTerms(a) {
			s.deg[0][t]--
			s.deg[1][t]++
		}
		for _, t := range r.g.docTerms(b) {
			s.deg[1][t]--
			s.deg[0][t]++
		}
		docs[i], docs[j] = b, a
		if work += r.g.docLen(a) + r.g.docLen(b) + 2; work >= unitWork {
			work = 0
			if err := r.stop.check(); err != nil {
				clear(moved)
				return err
			}
		}
	}
	clear(moved) // flags are left only if the two counts differed
	return nil
}

// skipDenominator: one candidate pair in skipDenominator is left unswapped
// in a round. Every pair is chosen on its own gain estimate, as if the
// others did not move; when many documents look alike (two halves with the
// same mix), all pairs swap at once, the halves trade places and the next
// round swaps them back. Skipping a pseudo-random few breaks that symmetry.
const skipDenominator = 10

// skipPair decides, from the pair's documents and the round only (so the
// result does not depend on scheduling), whether to leave a pair in place.
func skipPair(a, b uint32, round uint64) bool {
	x := uint64(a)<<32 | uint64(b)
	x ^= round * 0x9e3779b97f4a7c15
	// splitmix64 finalizer
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x%skipDenominator == 0
}
