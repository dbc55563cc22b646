package ivf

import (
	"container/heap"
	"fmt"
	"math"
	"math/bits"
)

// Cand is one scored code: its Hamming distance, document ID and the
// caller's tag (a segment view number).
type Cand struct {
	Dist int
	Doc  uint32
	Tag  int32
}

// TopK keeps the K candidates of least distance (on equal distance, the
// one met first).
type TopK struct {
	k int
	h candHeap
}

// NewTopK returns an empty TopK for k candidates.
func NewTopK(k int) *TopK { return &TopK{k: max(k, 1)} }

// Bound returns the distance a candidate must beat to enter.
func (t *TopK) Bound() int {
	if len(t.h) < t.k {
		return math.MaxInt
	}
	return t.h[0].Dist
}

// Push offers c; it enters when the heap is not full or c.Dist < Bound().
func (t *TopK) Push(c Cand) {
	if len(t.h) < t.k {
		heap.Push(&t.h, c)
	} else if c.Dist < t.h[0].Dist {
		t.h[0] = c
		heap.Fix(&t.h, 0)
	}
}

// Len returns the number of candidates held.
func (t *TopK) Len() int { return len(t.h) }

// Sorted returns the candidates by increasing distance (then tag, doc).
func (t *TopK) Sorted() []Cand {
	out := append([]Cand(nil), t.h...)
	sortCands(out)
	return out
}

type candHeap []Cand

func (h candHeap) Len() int { return len(h) }
func (h candHeap) Less(i, j int) bool {
	if h[i].Dist != h[j].Dist {
		return h[i].Dist > h[j].Dist
	}
	if h[i].Tag != h[j].Tag {
		return h[i].Tag > h[j].Tag
	}
	return h[i].Doc > h[j].Doc
}
func (h candHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *candHeap) Push(x any)   { *h = append(*h, x.(Cand)) }
func (h *candHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func sortCands(c []Cand) {
	h := candHeap(c)
	// Ascending order is the reverse of the heap's "worst first" order.
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && h.Less(j-1, j); j-- {
			h.Swap(j-1, j)
		}
	}
}

// Probe returns the min(nprobe, K) clusters whose centroids are nearest
// to q, nearest first (ties by cluster number). dists is scratch space.
func (r *Run) Probe(q []uint64, nprobe int, dists []int32) ([]int, []int32) {
	m := r.Model
	if cap(dists) < m.K {
		dists = make([]int32, m.K)
	}
	dists = dists[:m.K]
	distances(q, m.Centroids, m.Words, dists)
	nprobe = max(1, min(nprobe, m.K))
	// Counting selection: distances are at most 64 × Words.
	hist := make([]int32, 64*m.Words+2)
	for _, d := range dists {
		hist[d]++
	}
	limit, taken := 0, int32(0)
	for ; limit < len(hist); limit++ {
		taken += hist[limit]
		if int(taken) >= nprobe {
			break
		}
	}
	// Every cluster nearer than limit, then those at limit until full;
	// then sorted by distance with a second counting pass.
	start := make([]int32, limit+2)
	for d := 0; d <= limit; d++ {
		start[d+1] = start[d] + hist[d]
	}
	out := make([]int, int(start[limit+1]))
	for c, d := range dists {
		if int(d) <= limit {
			out[start[d]] = c
			start[d]++
		}
	}
	return out[:nprobe], dists
}

// distances writes the Hamming distance from q to each of the codes.
func distances(q, codes []uint64, words int, out []int32) {
	if words == 4 {
		q = q[:4]
		q0, q1, q2, q3 := q[0], q[1], q[2], q[3]
		for i := range out {
			c := codes[4*i : 4*i+4 : 4*i+4]
			out[i] = int32(bits.OnesCount64(c[0]^q0) + bits.OnesCount64(c[1]^q1) +
				bits.OnesCount64(c[2]^q2) + bits.OnesCount64(c[3]^q3))
		}
		return
	}
	for i := range out {
		out[i] = int32(Hamming(q, codes[i*words:(i+1)*words]))
	}
}

// Search scans the nprobe clusters nearest to q, offering to top every
// entry whose document skip does not reject (skip is asked only for
// entries that would enter top). It returns the number of codes scanned.
// A document ID at or past numDocs is an error: the run is corrupt.
func (r *Run) Search(q []uint64, nprobe int, tag int32, numDocs uint32, skip func(doc uint32) bool, top *TopK) (int, error) {
	clusters, dist := r.Probe(q, nprobe, nil)
	w := r.Model.Words
	scanned := 0
	for _, c := range clusters {
		lo, hi := int(r.Offsets[c]), int(r.Offsets[c+1])
		if lo > hi || hi > len(r.Docs) {
			return scanned, fmt.Errorf("%w: cluster %d spans %d..%d of %d", ErrBadRun, c, lo, hi, len(r.Docs))
		}
		scanned += hi - lo
		if cap(dist) < hi-lo {
			dist = make([]int32, hi-lo)
		}
		dist = dist[:hi-lo]
		distances(q, r.Codes[lo*w:hi*w], w, dist)
		bound := top.Bound()
		for j, d32 := range dist {
			d := int(d32)
			if d >= bound {
				continue
			}
			i := lo + j
			doc := r.Docs[i]
			if doc >= numDocs {
				return scanned, fmt.Errorf("%w: doc %d out of %d documents", ErrBadRun, doc, numDocs)
			}
			if skip != nil && skip(doc) {
				continue
			}
			top.Push(Cand{Dist: d, Doc: doc, Tag: tag})
			bound = top.Bound()
		}
	}
	return scanned, nil
}
