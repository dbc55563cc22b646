package segment

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment/codec"
)

// Dense presence modes.
const (
	denseNone   = 0 // no document has the vector
	denseAll    = 1 // every document has it
	denseBitmap = 2 // a bitmap of numDocs bits (uint64 LE words) says which
)

// denseBuilder accumulates a dense vector field.
type denseBuilder struct {
	dims    int
	present []uint64
	vals    []float32
	count   uint32
}

func (db *denseBuilder) add(doc uint32, v *schema.Values) int64 {
	if w := int(doc / 64); w >= len(db.present) {
		db.present = append(db.present, 0)
	}
	if db.dims == 0 || len(v.Dense) != db.dims {
		return 0
	}
	db.present[doc/64] |= 1 << (doc % 64)
	db.vals = append(db.vals, v.Dense...)
	db.count++
	return int64(4 * db.dims)
}

// sparseBuilder accumulates a sparse vector field as an inverted map.
type sparseBuilder struct {
	ids   map[string]uint32
	dims  []string
	posts []sparsePosting
}

// sparsePosting is one dimension's postings: per document uvarint(doc id
// for the first, gap after) and the weight as float32 bits LE.
type sparsePosting struct {
	data    []byte
	lastDoc uint32
	df      uint32
}

func (sb *sparseBuilder) add(doc uint32, v *schema.Values) int64 {
	var mem int64
	for _, e := range v.Sparse {
		id, ok := sb.ids[e.Dim]
		if !ok {
			id = uint32(len(sb.dims))
			key := strings.Clone(e.Dim)
			sb.ids[key] = id
			sb.dims = append(sb.dims, key)
			sb.posts = append(sb.posts, sparsePosting{})
			mem += int64(len(key)) + termOverhead
		}
		p := &sb.posts[id]
		delta := doc
		if p.df > 0 {
			if p.lastDoc == doc {
				continue // duplicate dimension in one document: keep the first
			}
			delta = doc - p.lastDoc
		}
		n := len(p.data)
		p.data = binary.AppendUvarint(p.data, uint64(delta))
		p.data = binary.LittleEndian.AppendUint32(p.data, math.Float32bits(e.Weight))
		p.lastDoc = doc
		p.df++
		mem += int64(len(p.data) - n)
	}
	return mem
}

// writeVectors writes the vec file: per dense field its presence bitmap
// (mode 2 only) and its vectors (dims float32 LE each, doc order); per
// sparse field its postings region then its dictionary (same format as the
// terms file, without positions). The directory is numDocs, nDense ×
// (ord, dims, mode, bitmapOff, count, valsOff), nSparse × (ord, dictMeta).
func (b *Builder) writeVectors(w *fileWriter) {
	type denseEntry struct{ ord, dims, mode, bitmapOff, count, valsOff uint64 }
	type sparseEntry struct {
		ord  uint64
		meta dictMeta
	}
	var dense []denseEntry
	var sparse []sparseEntry
	for i := range b.fields {
		if db := b.fields[i].dense; db != nil {
			e := denseEntry{ord: uint64(i), dims: uint64(db.dims), count: uint64(db.count)}
			switch db.count {
			case 0:
				e.mode = denseNone
			case b.numDocs:
				e.mode = denseAll
			default:
				e.mode = denseBitmap
				e.bitmapOff = w.offset()
				buf := make([]byte, 0, 8*len(db.present))
				for _, word := range db.present[:(b.numDocs+63)/64] {
					buf = binary.LittleEndian.AppendUint64(buf, word)
				}
				w.write(buf)
			}
			e.valsOff = w.offset()
			buf := make([]byte, 0, 4096)
			for _, x := range db.vals {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
				if len(buf) == cap(buf) {
					w.write(buf)
					buf = buf[:0]
				}
			}
			w.write(buf)
			dense = append(dense, e)
		}
		if sb := b.fields[i].sparse; sb != nil {
			order := make([]uint32, len(sb.dims))
			for k := range order {
				order[k] = uint32(k)
			}
			slices.SortFunc(order, func(x, y uint32) int { return strings.Compare(sb.dims[x], sb.dims[y]) })
			region := w.offset()
			for _, k := range order {
				w.write(sb.posts[k].data)
			}
			dw := newDictWriter(w, false, region)
			for _, k := range order {
				p := &sb.posts[k]
				dw.add(sb.dims[k], p.df, uint64(len(p.data)), 0)
			}
			sparse = append(sparse, sparseEntry{ord: uint64(i), meta: dw.finish()})
		}
	}
	dir := make([][]uint64, len(dense))
	for i, e := range dense {
		dir[i] = []uint64{e.ord, e.dims, e.mode, e.bitmapOff, e.count, e.valsOff}
	}
	w.entryDirectory(b.numDocs, dir)
	w.uvarint(uint64(len(sparse)))
	for _, e := range sparse {
		w.uvarint(e.ord)
		e.meta.encode(w)
	}
}

// denseCol reads one dense vector field.
type denseCol struct {
	dims   int
	mode   int
	bitmap []byte
	rank   []uint32 // mode 2: set bits before each word
	count  uint32
	vals   []byte
}

// index returns the position of doc's vector among the stored vectors.
func (c *denseCol) index(doc uint32) (uint32, bool) {
	switch c.mode {
	case denseAll:
		return doc, true
	case denseBitmap:
		word := binary.LittleEndian.Uint64(c.bitmap[8*(doc/64):])
		bit := uint64(1) << (doc % 64)
		if word&bit == 0 {
			return 0, false
		}
		return c.rank[doc/64] + uint32(bits.OnesCount64(word&(bit-1))), true
	}
	return 0, false
}

// openVectors parses the vec file's directory.
func openVectors(id segid.ID, s *schema.Schema, payload []byte, numDocs uint32) ([]*denseCol, []*dict, error) {
	dir, err := splitDirectory(payload, id, SuffixVectors)
	if err != nil {
		return nil, nil, err
	}
	dense := make([]*denseCol, len(s.Fields))
	sparse := make([]*dict, len(s.Fields))
	d := decoder{b: dir}
	if n := d.uvarint(); d.err == nil && n != uint64(numDocs) {
		return nil, nil, corruptf(id, SuffixVectors, "%d documents, segment has %d", n, numDocs)
	}
	isDense := func(i int) bool { return s.Fields[i].Type == schema.DenseVector }
	err = readFieldList(&d, id, SuffixVectors, isDense, len(s.Fields), func(d *decoder, ord int) error {
		dims, mode, bitmapOff, count, valsOff := d.uvarint(), d.uvarint(), d.uvarint(), d.uvarint(), d.uvarint()
		if d.err != nil {
			return nil
		}
		if dims != uint64(s.Fields[ord].Dims) || mode > denseBitmap || count > uint64(numDocs) {
			return corruptf(id, SuffixVectors, "field %d: dims %d mode %d count %d do not fit the schema", ord, dims, mode, count)
		}
		c := &denseCol{dims: int(dims), mode: int(mode), count: uint32(count)}
		if (mode == denseNone) != (count == 0) || (mode == denseAll && count != uint64(numDocs)) {
			return corruptf(id, SuffixVectors, "field %d: presence mode %d with %d vectors", ord, mode, count)
		}
		var ok bool
		if c.vals, ok = subslice(payload, valsOff, count*dims*4); !ok {
			return corruptf(id, SuffixVectors, "field %d: vectors outside payload", ord)
		}
		if mode == denseBitmap {
			words := (uint64(numDocs) + 63) / 64
			if c.bitmap, ok = subslice(payload, bitmapOff, words*8); !ok {
				return corruptf(id, SuffixVectors, "field %d: presence bitmap outside payload", ord)
			}
			c.rank = make([]uint32, words)
			var total uint32
			for k := range c.rank {
				c.rank[k] = total
				word := binary.LittleEndian.Uint64(c.bitmap[8*k:])
				if k == len(c.rank)-1 && numDocs%64 != 0 && word>>(numDocs%64) != 0 {
					return corruptf(id, SuffixVectors, "field %d: presence bits past the last document", ord)
				}
				total += uint32(bits.OnesCount64(word))
			}
			if total != c.count {
				return corruptf(id, SuffixVectors, "field %d: %d presence bits for %d vectors", ord, total, count)
			}
		}
		dense[ord] = c
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	isSparse := func(i int) bool { return s.Fields[i].Type == schema.SparseVector }
	err = readFieldList(&d, id, SuffixVectors, isSparse, len(s.Fields), func(d *decoder, ord int) error {
		m := decodeDictMeta(d)
		if d.err != nil {
			return nil
		}
		if m.hasPos {
			return corruptf(id, SuffixVectors, "field %d: sparse dictionary with positions", ord)
		}
		dc, err := openDict(m, payload, payload, numDocs, id, SuffixVectors, SuffixVectors)
		sparse[ord] = dc
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	d.done()
	if d.err != nil {
		return nil, nil, corruptf(id, SuffixVectors, "directory: %v", d.err)
	}
	return dense, sparse, nil
}

// SparsePostings iterates the documents having one sparse dimension, in
// increasing doc id order. It is not safe for concurrent use.
type SparsePostings struct {
	data    []byte
	off     int
	df, n   uint32
	done    bool // Next returned false
	doc     uint32
	weight  float32
	numDocs uint32
	id      segid.ID
	err     error
}

func newSparsePostings(d *dict, e termEntry) *SparsePostings {
	return &SparsePostings{data: d.post[e.postOff : e.postOff+e.docsLen], df: e.df, numDocs: d.numDocs, id: d.id}
}

func (p *SparsePostings) corrupt(format string, args ...any) bool {
	if p.err == nil {
		p.err = corruptf(p.id, SuffixVectors, format, args...)
	}
	return false
}

// DocFreq returns the number of documents having the dimension.
func (p *SparsePostings) DocFreq() uint32 { return p.df }

// Next advances to the next document.
func (p *SparsePostings) Next() bool {
	if p.err != nil {
		return false
	}
	if p.n >= p.df {
		p.done = true
		if p.off != len(p.data) {
			return p.corrupt("sparse postings have %d trailing bytes", len(p.data)-p.off)
		}
		return false
	}
	v, off, ok := codec.UvarintAt(p.data, p.off)
	if !ok || len(p.data)-off < 4 {
		return p.corrupt("truncated sparse posting")
	}
	doc := v
	if p.n > 0 {
		if v == 0 {
			return p.corrupt("sparse doc ids not increasing after %d", p.doc)
		}
		doc += uint64(p.doc)
	}
	if doc >= uint64(p.numDocs) {
		return p.corrupt("sparse doc id %d out of %d documents", doc, p.numDocs)
	}
	w := math.Float32frombits(binary.LittleEndian.Uint32(p.data[off:]))
	if math.IsNaN(float64(w)) || math.IsInf(float64(w), 0) {
		return p.corrupt("sparse weight of doc %d is not finite", doc)
	}
	p.doc, p.weight, p.off = uint32(doc), w, off+4
	p.n++
	return true
}

// Advance moves to the first document >= target and reports whether one
// exists. It does not move when the current document is already >= target.
func (p *SparsePostings) Advance(target uint32) bool {
	if p.n > 0 && p.doc >= target && p.err == nil && !p.done {
		return true
	}
	for p.Next() {
		if p.doc >= target {
			return true
		}
	}
	return false
}

// Doc returns the current doc id.
func (p *SparsePostings) Doc() uint32 { return p.doc }

// Weight returns the dimension's weight in the current document.
func (p *SparsePostings) Weight() float32 { return p.weight }

// Err returns the first corruption met.
func (p *SparsePostings) Err() error { return p.err }
