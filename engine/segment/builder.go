package segment

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/summadev/summa/engine/analysis"
	"github.com/summadev/summa/engine/ivf"
	"github.com/summadev/summa/engine/schema"
)

// positionGap separates the positions of consecutive values of a
// multi-valued text field, so that phrases never match across values.
const positionGap = 100

// termOverhead approximates the memory of one dictionary entry in a
// Builder besides the term's bytes (map slot, termPostings, name header).
const termOverhead = 120

// Builder accumulates documents in memory and writes them as one segment.
// It is not safe for concurrent use.
type Builder struct {
	schema  *schema.Schema
	numDocs uint32
	fields  []fieldBuilder
	store   storeBuilder
	pk      *pkBuilder
	mem     int64
	touched []uint32 // scratch: term ids touched by the document being added
	// ivfAdopted holds, per binary field, runs concatenated from rewrite
	// sources (ConcatIVFRuns); ivfCfg overrides the encoding of fresh runs.
	ivfAdopted map[int][]*ivf.Run
	ivfCfg     *ivf.Config
	// separate makes Write create one file per part instead of the
	// compound file (the layout of older segments; tests use it).
	separate bool
	seismic  SeismicOptions
	// awaitPart, when set, is called by Write before it writes each part
	// (by suffix): a merge still filling some parts makes Write wait
	// for them there, and its error fails the write.
	awaitPart func(suffix string) error
}

// fieldBuilder holds the per-kind accumulators of one field; only those the
// field needs are non-nil.
type fieldBuilder struct {
	field  *schema.Field
	index  *indexBuilder
	num    *numBuilder
	dense  *denseBuilder
	sparse *sparseBuilder
}

// indexBuilder accumulates an indexed field's terms, postings, norms,
// statistics and (for reorder fields) per-document term lists.
type indexBuilder struct {
	tokenized bool
	reorder   bool
	ids       map[string]uint32 // term -> builder-local id (insertion order)
	terms     []termPostings    // by local id
	names     []string          // by local id
	norms     []uint32          // tokenized fields: per doc field length
	totalLen  uint64
	docsWith  uint32
	fwdOffs   []uint64 // reorder fields: start of each doc's ids in fwdIDs, plus the end
	fwdIDs    []uint32 // reorder fields: local ids, per doc
	// fwdData, when a merge set it instead of fwdIDs, holds the term
	// lists as the fwd part does (term ordinals, in order, uvarint, first
	// absolute then gaps) and fwdEnds where each document's ends.
	fwdData []byte
	fwdEnds []uint64
	// bmMerged is set when a merge encoded every term's block-max record:
	// the records are back to back, in local id order, in the
	// concatenation of bmParts (one part per merged term range), term k's
	// ending at bmEnds[k]; Write then copies them instead of rebuilding.
	bmMerged bool
	bmParts  [][]byte
	bmEnds   []uint64
	// bmMix is the reference of the mix codes a merge encoded a tokenized
	// field's records with.
	bmMix mixRef
}

// NewBuilder returns an empty builder for schema s.
func NewBuilder(s *schema.Schema) *Builder {
	b := &Builder{schema: s, fields: make([]fieldBuilder, len(s.Fields))}
	b.SetSeismic(SeismicOptions{})
	for i := range s.Fields {
		f := &s.Fields[i]
		fb := &b.fields[i]
		fb.field = f
		switch {
		case f.Type == schema.DenseVector:
			fb.dense = &denseBuilder{dims: f.Dims}
		case f.Type == schema.SparseVector:
			fb.sparse = &sparseBuilder{ids: make(map[string]uint32)}
		default:
			if f.IsIndexed() {
				fb.index = &indexBuilder{tokenized: f.IsTokenized(), reorder: f.Reorder, ids: make(map[string]uint32)}
				if f.Reorder {
					fb.index.fwdOffs = []uint64{0}
				}
			}
			if f.IsNumeric() {
				fb.num = &numBuilder{counts: []uint64{0}}
			}
		}
	}
	if s.Primary() >= 0 {
		b.pk = &pkBuilder{offs: []uint64{0}}
	}
	b.store.init(s)
	return b
}

// NumDocs returns the number of documents added.
func (b *Builder) NumDocs() uint32 { return b.numDocs }

// MemBytes returns the approximate memory held by the builder.
func (b *Builder) MemBytes() int64 { return b.mem + b.store.memBytes() }

// Add appends a validated document and returns its doc id (0, 1, 2, ...).
// Values that do not match their field's type are ignored. A segment holds
// at most math.MaxUint32-1 documents; Add panics beyond.
func (b *Builder) Add(doc *schema.Document) uint32 {
	id := b.numDocs
	if id == math.MaxUint32-1 {
		panic("segment: too many documents in one segment")
	}
	var empty schema.Values
	for i := range b.fields {
		fb := &b.fields[i]
		v := &empty
		if i < len(doc.Fields) {
			v = &doc.Fields[i]
		}
		switch {
		case fb.dense != nil:
			b.mem += fb.dense.add(id, v)
		case fb.sparse != nil:
			b.mem += fb.sparse.add(id, v)
		default:
			if fb.index != nil {
				b.mem += b.addTerms(fb, id, v)
			}
			if fb.num != nil {
				b.mem += fb.num.add(fb.field, v)
			}
		}
	}
	if b.pk != nil {
		b.mem += b.pk.add(doc.PrimaryKey)
	}
	b.store.add(doc, b.schema)
	b.numDocs++
	return id
}

// addTerms indexes one field of one document and returns the memory added.
func (b *Builder) addTerms(fb *fieldBuilder, doc uint32, v *schema.Values) int64 {
	ix := fb.index
	touched := b.touched[:0]
	var length uint32
	var mem int64
	seen := doc + 1
	if ix.tokenized {
		var base uint32
		for _, text := range v.Strings {
			next := base
			analysis.Tokenize(text, func(term string, pos uint32) {
				p := base + pos
				t := ix.occurrence(term, seen, &touched, &mem)
				if t.freq == 0 {
					t.pos = binary.AppendUvarint(t.pos, uint64(p))
				} else {
					t.pos = binary.AppendUvarint(t.pos, uint64(p-t.lastPos))
				}
				t.lastPos = p
				t.freq++
				length++
				next = p + 1
			})
			base = next + positionGap
		}
		ix.norms = append(ix.norms, length)
		mem += int64(length) + 4
	} else {
		for _, term := range fb.field.ExactTerms(v) {
			ix.occurrence(term, seen, &touched, &mem).freq++
			length++
		}
	}
	for _, id := range touched {
		mem += int64(ix.terms[id].addDoc(doc))
	}
	ix.totalLen += uint64(length)
	if length > 0 {
		ix.docsWith++
	}
	if ix.reorder {
		ix.fwdIDs = append(ix.fwdIDs, touched...)
		ix.fwdOffs = append(ix.fwdOffs, uint64(len(ix.fwdIDs)))
		mem += int64(4*len(touched)) + 8
	}
	b.touched = touched
	return mem
}

// newTerm registers a term seen for the first time.
// Reserve sizes b's term tables for as many terms per field as prev holds
// (at most maxReserveTerms each), so that a builder filled like the last
// one does not grow its tables step by step.
func (b *Builder) Reserve(prev *Builder) {
	if prev == nil || len(prev.fields) != len(b.fields) {
		return
	}
	for i := range b.fields {
		ix, px := b.fields[i].index, prev.fields[i].index
		if ix == nil || px == nil || len(ix.terms) > 0 {
			continue
		}
		n := min(len(px.terms), maxReserveTerms)
		ix.ids = make(map[string]uint32, n)
		ix.terms = make([]termPostings, 0, n)
		ix.names = make([]string, 0, n)
	}
}

// maxReserveTerms bounds Reserve's tables per field.
const maxReserveTerms = 1 << 20

// occurrence returns the postings of term for one more occurrence in the
// document being added (seen is its number plus one). A term seen for the
// first time is registered (its memory added to *mem); on its first
// occurrence in the document its count restarts at 0 and its ID is
// appended to *touched.
func (ix *indexBuilder) occurrence(term string, seen uint32, touched *[]uint32, mem *int64) *termPostings {
	id, ok := ix.ids[term]
	if !ok {
		id = ix.newTerm(term)
		*mem += int64(len(term)) + termOverhead
	}
	t := &ix.terms[id]
	if t.seen != seen {
		t.seen, t.freq = seen, 0
		*touched = append(*touched, id)
	}
	return t
}

func (ix *indexBuilder) newTerm(term string) uint32 {
	id := uint32(len(ix.terms))
	key := strings.Clone(term)
	ix.ids[key] = id
	ix.terms = append(ix.terms, termPostings{})
	ix.names = append(ix.names, key)
	return id
}

// numBuilder accumulates a numeric column.
type numBuilder struct {
	counts []uint64 // cumulative value counts, starting with 0
	vals   []uint64
}

func (nb *numBuilder) add(f *schema.Field, v *schema.Values) int64 {
	n := len(nb.vals)
	switch f.Type {
	case schema.U64:
		nb.vals = append(nb.vals, v.U64...)
	case schema.I64:
		for _, x := range v.I64 {
			nb.vals = append(nb.vals, uint64(x))
		}
	case schema.F64:
		for _, x := range v.F64 {
			nb.vals = append(nb.vals, math.Float64bits(x))
		}
	}
	nb.counts = append(nb.counts, uint64(len(nb.vals)))
	return int64(8*(len(nb.vals)-n)) + 8
}

// pkBuilder accumulates the primary-key column.
type pkBuilder struct {
	offs []uint64
	data []byte
}

func (pb *pkBuilder) add(pk string) int64 {
	pb.data = append(pb.data, pk...)
	pb.offs = append(pb.offs, uint64(len(pb.data)))
	return int64(len(pk)) + 8
}
