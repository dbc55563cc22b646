package search

import "github.com/summadev/summa/engine/schema"

// Query is a parsed query: a *TextQuery, a *DenseQuery or a *SparseQuery.
type Query interface {
	// isQuery seals the set of query kinds.
	isQuery()
}

// Occur says how a clause takes part in matching.
type Occur uint8

// The three ways a clause can occur.
const (
	// Should clauses add to the score; with no Must clause, at least one
	// Should clause has to match.
	Should Occur = iota
	// Must clauses all have to match.
	Must
	// MustNot clauses exclude the documents they match.
	MustNot
)

// String returns the prefix that writes the occurrence in the query language.
func (o Occur) String() string {
	switch o {
	case Must:
		return "+"
	case MustNot:
		return "-"
	}
	return ""
}

// Clause is one term or phrase of a text query, searched in one or more
// fields. A clause with more than one term is a phrase: its terms must
// appear at the given relative positions.
type Clause struct {
	// Occur says whether the clause must, should or must not match.
	Occur Occur
	// Fields holds the ordinals of the searched fields, in schema order; a
	// document matches when it matches in any of them, and its score is the
	// sum over them.
	Fields []int
	// Terms holds the index terms to look up: analyzed terms for tokenized
	// fields, one canonical exact term otherwise.
	Terms []string
	// Offsets holds each term's position relative to the first term
	// (Offsets[0] == 0); used only for phrases.
	Offsets []uint32
}

// IsPhrase reports whether the clause needs its terms at consecutive
// positions.
func (c *Clause) IsPhrase() bool { return len(c.Terms) > 1 }

// TextQuery is a query of the text query language.
type TextQuery struct {
	// Clauses in query order. Clauses whose text yields no index term are
	// dropped by the parser.
	Clauses []Clause
}

// DenseQuery asks for the K documents whose dense vector has the highest
// dot product with Vector.
type DenseQuery struct {
	// Field is the dense_vector field's ordinal.
	Field int
	// Vector has exactly the field's dimension count.
	Vector []float32
	// K is the number of nearest documents that match (1..MaxK).
	K int
	// Nprobe is the number of clusters probed per encoded run of a binary
	// field (0: DefaultNprobe).
	Nprobe int
	// Exact asks for brute force over the stored vectors instead of the
	// binary IVF.
	Exact bool
}

// SparseQuery scores documents sharing a dimension with Vector by the sum
// over shared dimensions of query weight times document weight. Unless
// Exact is set (or a weight is not positive) it runs on the segments'
// Seismic indexes: an approximate top-K (see seismic.go).
type SparseQuery struct {
	// Field is the sparse_vector field's ordinal.
	Field int
	// Vector is sorted by dimension name, without duplicates.
	Vector []schema.SparseEntry
	// K is the number of nearest documents a Seismic search retrieves
	// (0: the requested page's window).
	K int
	// Cut is the number of largest query weights whose lists are visited.
	Cut int
	// HeapFactor: a block is evaluated when its summary score exceeds the
	// heap minimum divided by HeapFactor.
	HeapFactor float64
	// Exact asks for the full scan: every posting of every dimension
	// scored, TotalHits exact (the ground truth).
	Exact bool
}

func (*TextQuery) isQuery()   {}
func (*DenseQuery) isQuery()  {}
func (*SparseQuery) isQuery() {}
