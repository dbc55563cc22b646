package bp

import (
	"context"
	"fmt"
	"slices"
)

// Builder builds a Graph doc by doc, checking ctx between bounded units
// (S03); on cancellation it discards the partial graph and returns
// ErrCancelled wrapping ctx.Err(). A Builder is not safe for concurrent use.
type Builder struct {
	// ctx is checked at every Add; context.Background for NewBuilder.
	ctx context.Context
	// numTerms bounds the term ids accepted by Add.
	numTerms uint32
	// offsets and terms are the CSR arrays built so far.
	// INVARIANT: offsets[0] == 0 and offsets[len-1] == len(terms).
	offsets []uint64
	terms   []uint32
	// err is the sticky cancellation error; once set the arrays are nil.
	err error
}

// NewBuilder returns a Builder for terms < numTerms that is never
// cancelled.
func NewBuilder(numTerms uint32) *Builder {
	return NewBuilderContext(context.Background(), numTerms)
}

// NewBuilderContext returns a Builder for terms < numTerms whose Add
// checks ctx before each document.
func NewBuilderContext(ctx context.Context, numTerms uint32) *Builder {
	if ctx == nil {
		ctx = context.Background()
	}
	return &Builder{ctx: ctx, numTerms: numTerms, offsets: []uint64{0}}
}

// Add appends the next document (id NumDocs() before the call) with the
// given terms, in any order and with repeats; it stores them sorted and
// distinct and does not keep terms. A term >= numTerms is an error that
// leaves the builder unchanged. After a cancellation every Add returns the
// same ErrCancelled error.
func (b *Builder) Add(terms []uint32) error {
	if b.err != nil {
		return b.err
	}
	if err := b.ctx.Err(); err != nil {
		b.err = cancelErr(b.ctx)
		b.offsets, b.terms = nil, nil
		return b.err
	}
	if int64(len(b.offsets)-1) >= MaxDocs {
		return fmt.Errorf("%w: more than %d documents", ErrInvalidGraph, int64(MaxDocs))
	}
	for _, t := range terms {
		if t >= b.numTerms {
			return fmt.Errorf("%w: doc %d: term %d >= NumTerms %d", ErrInvalidGraph, len(b.offsets)-1, t, b.numTerms)
		}
	}
	start := len(b.terms)
	b.terms = append(b.terms, terms...)
	if tail := b.terms[start:]; !strictlySorted(tail) {
		slices.Sort(tail)
		b.terms = b.terms[:start+len(slices.Compact(tail))]
	}
	b.offsets = append(b.offsets, uint64(len(b.terms)))
	return nil
}

// NumDocs returns the number of documents added so far (0 after a
// cancellation).
func (b *Builder) NumDocs() int {
	if len(b.offsets) == 0 {
		return 0
	}
	return len(b.offsets) - 1
}

// Err returns the cancellation error, or nil.
func (b *Builder) Err() error { return b.err }

// Graph returns the graph of the documents added so far, or nil after a
// cancellation. The graph shares the builder's arrays up to their current
// lengths; later Adds do not change it.
func (b *Builder) Graph() *Graph {
	if b.err != nil {
		return nil
	}
	return &Graph{
		NumTerms: b.numTerms,
		Offsets:  b.offsets[:len(b.offsets):len(b.offsets)],
		Terms:    b.terms[:len(b.terms):len(b.terms)],
	}
}

// MemBytes returns the bytes held by the builder's arrays.
func (b *Builder) MemBytes() int64 {
	return 8*int64(cap(b.offsets)) + 4*int64(cap(b.terms))
}

// strictlySorted reports whether ts is sorted without repeats.
func strictlySorted(ts []uint32) bool {
	for i := 1; i < len(ts); i++ {
		if ts[i-1] >= ts[i] {
			return false
		}
	}
	return true
}
