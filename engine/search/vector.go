package search

import (
	"context"
	"fmt"

	"github.com/summadev/summa/engine/schema"
)

// searchDense scores every live document having the field's vector by its
// dot product with the query vector; the K best match.
func searchDense(ctx context.Context, s *schema.Schema, views []SegmentView, q *DenseQuery) (*topK, int, error) {
	top := newTopK(q.K)
	t := &ticker{ctx: ctx}
	exact := views
	if s != nil && s.Fields[q.Field].Binary && !q.Exact {
		var err error
		if exact, err = searchIVF(ctx, views, q, top); err != nil {
			return nil, 0, err
		}
	}
	for vi := range views {
		v := &views[vi]
		if exact == nil || exact[vi].Segment == nil {
			continue // answered by the binary IVF
		}
		n := v.Segment.NumDocs()
		for d := uint32(0); d < n; d++ {
			if err := t.tick(); err != nil {
				return nil, 0, fmt.Errorf("search: segment view %d: %w", vi, err)
			}
			if v.isDeleted(d) {
				continue
			}
			vec, ok, err := v.Segment.DenseVector(q.Field, d)
			if err != nil {
				return nil, 0, fmt.Errorf("search: segment view %d: dense vector of doc %d: %w", vi, d, err)
			}
			if ok && len(vec) != len(q.Vector) {
				return nil, 0, fmt.Errorf("search: segment view %d: dense vector of doc %d has %d dimensions, want %d", vi, d, len(vec), len(q.Vector))
			}
			if ok {
				top.offer(scored{view: vi, doc: d, score: Dot(q.Vector, vec)})
			}
		}
	}
	return top, top.len(), nil
}

// Dot returns the dot product of two vectors of equal length, summed in
// float64 so that it cannot overflow: the score of vector search (the
// benchmarks score their exact answers with it too).
func Dot(a, b []float32) float64 {
	b = b[:len(a)]
	var s float64
	for i, x := range a {
		s += float64(x) * float64(b[i])
	}
	return s
}

// searchSparse scores every live document sharing a dimension with the
// query by the sum of query weight times document weight, keeping the best
// window hits; it returns them with the number of matching documents.
func searchSparse(ctx context.Context, views []SegmentView, q *SparseQuery, window int) (*topK, int, error) {
	top := newTopK(window)
	var maxDocs uint32
	for i := range views {
		maxDocs = max(maxDocs, views[i].Segment.NumDocs())
	}
	acc := getAccumulator(maxDocs)
	defer acc.release()
	t := &ticker{ctx: ctx}
	g := gate{from: 0, to: 1, score: true}
	total := 0
	for vi := range views {
		for _, e := range q.Vector {
			if err := sparseDim(t, views[vi].Segment, q.Field, e.Dim, float64(e.Weight), g, acc); err != nil {
				return nil, 0, fmt.Errorf("search: segment view %d: %w", vi, err)
			}
		}
		total += acc.collect(vi, &views[vi], g.to, top)
		acc.reset()
	}
	return top, total, nil
}

// sparseDim adds one query dimension's products to acc.
func sparseDim(t *ticker, seg Segment, field int, dim string, weight float64, g gate, acc *accumulator) error {
	sp, err := seg.SparsePostings(field, dim)
	if err != nil {
		return fmt.Errorf("sparse postings of %q: %w", dim, err)
	}
	if sp == nil {
		return nil
	}
	for sp.Next() {
		if err := t.tick(); err != nil {
			return err
		}
		acc.match(g, sp.Doc(), weight*float64(sp.Weight()))
	}
	if err := sp.Err(); err != nil {
		return fmt.Errorf("sparse postings of %q: %w", dim, err)
	}
	return nil
}
