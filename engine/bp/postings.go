package bp

import (
	"context"
	"fmt"
)

// FromPostings builds the graph of numDocs documents from an inverted
// index: postings(t) returns the ids of the documents holding term t,
// sorted, distinct and < numDocs, and must return the same ids when called
// again (it is called twice per term). It transposes in two phases,
// frequency counting then CSR construction, checking ctx between bounded
// units of both (S03); on cancellation it discards the partial graph and
// returns ErrCancelled wrapping ctx.Err(). Bad postings are an error
// wrapping ErrInvalidGraph.
func FromPostings(ctx context.Context, numDocs int, numTerms uint32, postings func(t uint32) []uint32) (*Graph, error) {
	if numDocs < 0 || int64(numDocs) > MaxDocs {
		return nil, fmt.Errorf("%w: %d documents", ErrInvalidGraph, numDocs)
	}
	if postings == nil {
		return nil, fmt.Errorf("%w: nil postings", ErrInvalidGraph)
	}
	st := newStopper(ctx, noDeadline)
	offsets := make([]uint64, numDocs+1)
	// Phase 1: offsets[d+1] counts the terms of doc d.
	edges, err := scanPostings(st, numDocs, numTerms, postings, func(_ uint32, d uint32) {
		offsets[d+1]++
	})
	if err != nil {
		return nil, err
	}
	for d := 1; d <= numDocs; d++ {
		offsets[d] += offsets[d-1]
	}
	// Phase 2: fill; next[d] is where doc d's next term goes. Terms arrive
	// in increasing t, so each doc's run is sorted.
	terms := make([]uint32, edges)
	next := make([]uint64, numDocs)
	copy(next, offsets[:numDocs])
	overflow := false
	again, err := scanPostings(st, numDocs, numTerms, postings, func(t uint32, d uint32) {
		if next[d] >= offsets[d+1] {
			overflow = true
			return
		}
		terms[next[d]] = t
		next[d]++
	})
	if err != nil {
		return nil, err
	}
	if overflow || again != edges {
		return nil, fmt.Errorf("%w: postings changed between calls", ErrInvalidGraph)
	}
	return &Graph{NumTerms: numTerms, Offsets: offsets, Terms: terms}, nil
}

// scanPostings calls fn(t, d) for every posting of every term, after
// checking that each list is sorted, distinct and in range, and returns the
// number of postings.
func scanPostings(st *stopper, numDocs int, numTerms uint32, postings func(uint32) []uint32, fn func(t, d uint32)) (int, error) {
	edges, work := 0, 0
	for t := uint64(0); t < uint64(numTerms); t++ {
		list := postings(uint32(t))
		for i, d := range list {
			if int64(d) >= int64(numDocs) || (i > 0 && list[i-1] >= d) {
				return 0, fmt.Errorf("%w: term %d: posting %d out of range or not sorted and distinct", ErrInvalidGraph, t, d)
			}
		}
		for _, d := range list {
			fn(uint32(t), d)
		}
		edges += len(list)
		if work += len(list) + 1; work >= unitWork {
			work = 0
			if err := st.cancelled(); err != nil {
				return 0, err
			}
		}
	}
	return edges, nil
}
