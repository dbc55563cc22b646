package bp

import (
	"context"
	"fmt"
	"math"
)

// MaxDocs is the largest number of documents a Graph may hold: document ids
// and Order entries are uint32.
const MaxDocs = math.MaxUint32

// Graph is a document->term bipartite graph in CSR form: the terms of doc d
// are Terms[Offsets[d]:Offsets[d+1]], sorted, distinct.
//
// A Graph is read-only for this package: Reorder and LogGapCost never
// modify it and may read it from several goroutines.
type Graph struct {
	// NumTerms bounds the term ids: every entry of Terms is < NumTerms.
	NumTerms uint32
	// Offsets has NumDocs()+1 entries, starting at 0, non-decreasing,
	// ending at len(Terms). Empty (or nil) for a graph without documents.
	Offsets []uint64
	// Terms holds the term ids of all documents, one run per document.
	Terms []uint32
}

// NumDocs returns the number of documents, len(Offsets)-1 (0 for a nil
// graph or empty Offsets).
func (g *Graph) NumDocs() int {
	if g == nil || len(g.Offsets) == 0 {
		return 0
	}
	return len(g.Offsets) - 1
}

// NumEdges returns the number of (document, term) pairs, len(Terms).
func (g *Graph) NumEdges() int {
	if g == nil {
		return 0
	}
	return len(g.Terms)
}

// MemBytes returns the bytes held by the graph's arrays.
func (g *Graph) MemBytes() int64 {
	if g == nil {
		return 0
	}
	return 8*int64(cap(g.Offsets)) + 4*int64(cap(g.Terms))
}

// docTerms returns the terms of doc d. REQUIRES: g validated, d < NumDocs.
func (g *Graph) docTerms(d uint32) []uint32 {
	return g.Terms[g.Offsets[d]:g.Offsets[d+1]]
}

// docLen returns the number of terms of doc d. REQUIRES: as docTerms.
func (g *Graph) docLen(d uint32) int {
	return int(g.Offsets[d+1] - g.Offsets[d])
}

// Validate checks the shape of g and returns an error wrapping
// ErrInvalidGraph describing the first problem found.
func (g *Graph) Validate() error {
	return g.validate(newStopper(context.Background(), noDeadline))
}

// validate is Validate with cancellation checks between bounded units.
func (g *Graph) validate(st *stopper) error {
	if g == nil {
		return fmt.Errorf("%w: nil graph", ErrInvalidGraph)
	}
	if len(g.Offsets) == 0 {
		if len(g.Terms) != 0 {
			return fmt.Errorf("%w: %d terms but no offsets", ErrInvalidGraph, len(g.Terms))
		}
		return nil
	}
	if int64(len(g.Offsets)-1) > MaxDocs {
		return fmt.Errorf("%w: %d documents, at most %d", ErrInvalidGraph, len(g.Offsets)-1, int64(MaxDocs))
	}
	if g.Offsets[0] != 0 {
		return fmt.Errorf("%w: Offsets[0] = %d, want 0", ErrInvalidGraph, g.Offsets[0])
	}
	if last := g.Offsets[len(g.Offsets)-1]; last != uint64(len(g.Terms)) {
		return fmt.Errorf("%w: last offset %d, want len(Terms) = %d", ErrInvalidGraph, last, len(g.Terms))
	}
	work := 0
	for d := 0; d+1 < len(g.Offsets); d++ {
		lo, hi := g.Offsets[d], g.Offsets[d+1]
		if hi < lo || hi > uint64(len(g.Terms)) {
			return fmt.Errorf("%w: doc %d: offsets %d..%d out of order", ErrInvalidGraph, d, lo, hi)
		}
		if err := g.validateDoc(d, g.Terms[lo:hi]); err != nil {
			return err
		}
		if work += int(hi-lo) + 1; work >= unitWork {
			work = 0
			if err := st.cancelled(); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateDoc checks that the terms of doc d are sorted, distinct and in
// range.
func (g *Graph) validateDoc(d int, terms []uint32) error {
	for i, t := range terms {
		if t >= g.NumTerms {
			return fmt.Errorf("%w: doc %d: term %d >= NumTerms %d", ErrInvalidGraph, d, t, g.NumTerms)
		}
		if i > 0 && terms[i-1] >= t {
			return fmt.Errorf("%w: doc %d: terms not sorted and distinct (%d then %d)", ErrInvalidGraph, d, terms[i-1], t)
		}
	}
	return nil
}

// validateOrder checks that order is a permutation of 0..n-1.
func validateOrder(st *stopper, order []uint32, n int) error {
	if len(order) != n {
		return fmt.Errorf("%w: %d entries for %d documents", ErrInvalidOrder, len(order), n)
	}
	seen := make([]bool, n)
	for i, d := range order {
		if int64(d) >= int64(n) || seen[d] {
			return fmt.Errorf("%w: entry %d (doc %d) out of range or repeated", ErrInvalidOrder, i, d)
		}
		seen[d] = true
		if i%unitWork == unitWork-1 {
			if err := st.cancelled(); err != nil {
				return err
			}
		}
	}
	return nil
}
