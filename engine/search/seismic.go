package search

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segment"
)

// seismicSegment is implemented by segments with Seismic indexes
// (*segment.Reader); others are scanned exhaustively.
type seismicSegment interface {
	// Seismic returns a sparse_vector field's Seismic index, nil if none.
	Seismic(field int) *segment.SeismicIndex
}

// useSeismic reports whether a sparse query runs on the Seismic indexes:
// not when exact is asked, nor when a weight is not positive (a block
// summary's maximum bounds only non-negative contributions).
func useSeismic(q *SparseQuery) bool {
	if q.Exact {
		return false
	}
	for _, e := range q.Vector {
		if !(e.Weight > 0) {
			return false
		}
	}
	return true
}

// seismicScratch is the per-segment scratch of one query: the dense query
// (by dimension ordinal) and the visited-document bitset.
type seismicScratch struct {
	q       segment.SeismicQuery
	visited []uint64
	docs    []uint32
	scores  []float32
	order   []uint64
}

var seismicPool = sync.Pool{New: func() any { return new(seismicScratch) }}

// searchSeismic is the Seismic search (Bruch et al., SIGIR 2024): per
// segment the Cut largest query dimensions are visited in decreasing
// weight; a block of a dimension's list is evaluated (exact inner products
// from the forward index) only when its summary score exceeds the current
// heap minimum divided by HeapFactor, or the heap is not full. Pending
// dimensions (debt) are scored from their whole postings. The total is the
// number of hits kept, at most K.
func searchSeismic(ctx context.Context, views []SegmentView, q *SparseQuery, window int) (*topK, int, error) {
	k := q.K
	if k == 0 {
		k = window
	}
	top := newTopK(k)
	order := make([]int, len(q.Vector))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		wa, wb := q.Vector[a].Weight, q.Vector[b].Weight
		switch {
		case wa > wb:
			return -1
		case wa < wb:
			return 1
		}
		return 0
	})
	t := &ticker{ctx: ctx}
	sc := seismicPool.Get().(*seismicScratch)
	defer seismicPool.Put(sc)
	for vi := range views {
		var x *segment.SeismicIndex
		if ss, ok := views[vi].Segment.(seismicSegment); ok {
			x = ss.Seismic(q.Field)
		}
		var err error
		if x == nil {
			err = exactView(t, vi, &views[vi], q, top)
		} else {
			err = seismicView(t, vi, &views[vi], x, q, order, top, sc)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("search: segment view %d: %w", vi, err)
		}
	}
	return top, top.len(), nil
}

// exactView scores one view exhaustively into top.
func exactView(t *ticker, vi int, v *SegmentView, q *SparseQuery, top *topK) error {
	acc := getAccumulator(v.Segment.NumDocs())
	defer acc.release()
	g := gate{from: 0, to: 1, score: true}
	for _, e := range q.Vector {
		if err := sparseDim(t, v.Segment, q.Field, e.Dim, float64(e.Weight), g, acc); err != nil {
			return err
		}
	}
	acc.collect(vi, v, g.to, top)
	return nil
}

// seismicView runs the Seismic search over one segment.
func seismicView(t *ticker, vi int, v *SegmentView, x *segment.SeismicIndex, q *SparseQuery, order []int,
	top *topK, sc *seismicScratch) error {
	sc.q.Reset(x.NumDims())
	type qdim struct {
		ord uint32
		dim string
	}
	var dims []qdim
	for _, i := range order {
		e := q.Vector[i]
		ord, ok, err := x.Dim(e.Dim)
		if err != nil {
			return fmt.Errorf("seismic dimension %q: %w", e.Dim, err)
		}
		if ok {
			sc.q.Set(ord, e.Weight)
			dims = append(dims, qdim{ord, e.Dim})
		}
	}
	words := (int(v.Segment.NumDocs()) + 63) / 64
	sc.visited = slices.Grow(sc.visited[:0], words)[:words]
	clear(sc.visited)
	eval := func(doc uint32) error {
		w, bit := doc/64, uint64(1)<<(doc%64)
		if sc.visited[w]&bit != 0 {
			return nil
		}
		sc.visited[w] |= bit
		if err := t.tick(); err != nil {
			return err
		}
		if v.isDeleted(doc) {
			return nil
		}
		s, err := x.DocScore(doc, &sc.q)
		if err != nil {
			return err
		}
		top.offer(scored{view: vi, doc: doc, score: s})
		return nil
	}
	for _, d := range dims[:min(len(dims), q.Cut)] {
		first, n, pending, err := x.Blocks(d.ord)
		if err != nil {
			return err
		}
		if pending {
			if err := pendingDim(v.Segment, q.Field, d.dim, eval); err != nil {
				return err
			}
			continue
		}
		// Blocks are visited by decreasing summary score, so the heap
		// fills with good candidates first and the first block that cannot
		// beat the heap minimum / heap_factor ends the list.
		if sc.scores, err = x.SummaryScores(first, n, &sc.q, sc.scores[:0]); err != nil {
			return err
		}
		// Sort keys: the complemented score bits (scores are >= 0, so
		// their bits order like them) above the block index.
		sc.order = sc.order[:0]
		for j, r := range sc.scores {
			sc.order = append(sc.order, uint64(^math.Float32bits(max(r, 0)))<<32|uint64(j))
		}
		slices.Sort(sc.order)
		for _, key := range sc.order {
			j := uint32(key)
			if len(top.heap) == top.k && top.k > 0 && float64(sc.scores[j]) <= top.heap[0].score/q.HeapFactor {
				break
			}
			if sc.docs, err = x.BlockDocs(first+j, sc.docs[:0]); err != nil {
				return err
			}
			for _, doc := range sc.docs {
				if err := eval(doc); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// pendingDim evaluates every document of a pending dimension's postings.
func pendingDim(seg Segment, field int, dim string, eval func(uint32) error) error {
	sp, err := seg.SparsePostings(field, dim)
	if err != nil || sp == nil {
		return err
	}
	for sp.Next() {
		if err := eval(sp.Doc()); err != nil {
			return err
		}
	}
	return sp.Err()
}

// RankOnly runs req like Search but returns the page's hits without their
// stored fields (Fields nil): the ranking alone, for callers that need
// only ids and scores, such as the vector benchmarks comparing Seismic
// with the exact scan.
func RankOnly(ctx context.Context, s *schema.Schema, views []SegmentView, req Request) (Result, error) {
	req.SkipFields = true
	return Search(ctx, s, views, req)
}
