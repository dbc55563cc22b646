package segment

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment/codec"
)

// bmLayout is what a field's records hold besides their entries' block
// numbers and counts: which bounds, and whether records of many blocks
// have superblock tables.
type bmLayout struct {
	kind byte
	// mix is a tokenized field's reference of its entries' mix codes
	// (format version 3); zero otherwise.
	mix mixRef
	// supers is set from format version 4 (blockmax_super.go).
	supers bool
}

// bmField is one field of an open block-max file.
type bmField struct {
	bmLayout
	numTerms uint32
	records  []byte
	table    []byte // numTerms+1 offsets into records, width bytes each (LE)
	width    int    // 4 or 8
}

// offset returns entry i of the offset table.
func (f *bmField) offset(i uint32) uint64 {
	if f.width == 4 {
		return uint64(binary.LittleEndian.Uint32(f.table[4*uint64(i):]))
	}
	return binary.LittleEndian.Uint64(f.table[8*uint64(i):])
}

// wantBlockMax reports whether field f has block maxima: every field with
// a term dictionary and every sparse vector field.
func wantBlockMax(f *schema.Field) bool {
	return hasDict(f) || (f.IsIndexed() && f.Type == schema.SparseVector)
}

// openBlockMax reads the bmax directory of a file of the given format
// version. dicts and sparse are the field's dictionaries; their term
// counts must agree.
func openBlockMax(id segid.ID, s *schema.Schema, payload []byte, version, numDocs uint32, dicts, sparse []*dict) ([]*bmField, error) {
	var body []byte // the payload before the directory
	prologue := func(d *decoder) error {
		if sh := d.uvarint(); d.err == nil && sh != BlockShift {
			return corruptf(id, SuffixBlockMax, "block shift %d, want %d", sh, BlockShift)
		}
		body = payload[:len(payload)-len(d.b)-8]
		return nil
	}
	want := func(i int) bool { return wantBlockMax(&s.Fields[i]) }
	return fieldEntries(id, SuffixBlockMax, payload, numDocs, prologue, want, len(s.Fields), func(d *decoder, ord int) (*bmField, error) {
		f := &bmField{bmLayout: bmLayout{kind: d.u8(), supers: version >= superVersion}, numTerms: d.u32v(), width: 8}
		recOff, recLen, tableOff := d.uvarint(), d.uvarint(), d.uvarint()
		if version != legacyBlockMaxVersion {
			f.width = int(d.u8())
		}
		if version >= mixBlockMaxVersion && f.kind == bmTokenized {
			f.mix = mixRef{a: d.f64(), b: d.f64()}
			if d.err == nil && !f.mix.valid() {
				return nil, corruptf(id, SuffixBlockMax, "field %d: mix reference %v, %v", ord, f.mix.a, f.mix.b)
			}
		}
		if d.err != nil {
			return nil, nil
		}
		if f.width != 4 && f.width != 8 || f.width == 4 && recLen > math.MaxUint32 {
			return nil, corruptf(id, SuffixBlockMax, "field %d: offset width %d for %d bytes of records", ord, f.width, recLen)
		}
		wantKind, dc := byte(bmExact), dicts[ord]
		switch {
		case s.Fields[ord].Type == schema.SparseVector:
			wantKind, dc = bmSparse, sparse[ord]
		case s.Fields[ord].IsTokenized():
			wantKind = bmTokenized
		}
		if f.kind != wantKind {
			return nil, corruptf(id, SuffixBlockMax, "field %d: kind %d, want %d", ord, f.kind, wantKind)
		}
		if dc == nil || dc.numTerms != f.numTerms {
			return nil, corruptf(id, SuffixBlockMax, "field %d: %d terms disagree with the dictionary", ord, f.numTerms)
		}
		var ok bool
		if f.records, ok = subslice(body, recOff, recLen); !ok {
			return nil, corruptf(id, SuffixBlockMax, "field %d: records [%d,+%d) outside payload", ord, recOff, recLen)
		}
		if f.table, ok = subslice(body, tableOff, uint64(f.width)*(uint64(f.numTerms)+1)); !ok {
			return nil, corruptf(id, SuffixBlockMax, "field %d: offset table of %d terms outside payload", ord, f.numTerms)
		}
		if end := f.offset(f.numTerms); end != recLen {
			return nil, corruptf(id, SuffixBlockMax, "field %d: offset table ends at %d, records hold %d", ord, end, recLen)
		}
		return f, nil
	})
}

// record returns the bytes of term ordinal ord's record.
func (f *bmField) record(id segid.ID, ord uint32) ([]byte, error) {
	if ord >= f.numTerms {
		return nil, corruptf(id, SuffixBlockMax, "term ordinal %d out of %d", ord, f.numTerms)
	}
	a, b := f.offset(ord), f.offset(ord+1)
	if a > b || b > uint64(len(f.records)) {
		return nil, corruptf(id, SuffixBlockMax, "term %d record spans [%d,%d) of %d bytes", ord, a, b, len(f.records))
	}
	return f.records[a:b], nil
}

// BlockTerm is one term's (or sparse dimension's) block-max record: its
// blocks with their bounds, and the block-partitioned postings that score
// a block without reading the rest of the list. It is not safe for
// concurrent use.
type BlockTerm struct {
	kind    byte
	df      uint32
	scale   float32
	nBlocks int
	entries []byte
	data    []byte
	// supers is the superblock table, nil when the record has none.
	supers  []byte
	numDocs uint32
	id      segid.ID
	// mix is the field's reference when the entries carry mix codes.
	mix mixRef
}

// BlockEntry is one block of a BlockTerm.
type BlockEntry struct {
	// Block is the block number: its documents are Block<<BlockShift and on.
	Block uint32
	// Hi is the frequency code (text) or the largest weight level (sparse).
	Hi uint8
	// Lo is the ratio code (tokenized text) or the smallest weight level
	// (sparse); 0 for exact fields.
	Lo uint8
	// Mix is the mix code of a tokenized field of format version 3
	// (blockmax_mix.go), else 0.
	Mix uint8
	// Count is the number of the term's documents in the block.
	Count int
	// off and n locate the block's postings in the record's data.
	off, n uint32
}

// DocFreq returns the number of documents holding the term.
func (t *BlockTerm) DocFreq() uint32 { return t.df }

// Sparse reports whether the record holds sparse weights.
func (t *BlockTerm) Sparse() bool { return t.kind == bmSparse }

// Scale returns the sparse dimension's largest absolute weight (see WeightBound).
func (t *BlockTerm) Scale() float32 { return t.scale }

// HasBlockMax reports whether the segment has a block-max file. Segments
// written before the file kind existed (format version 1 postings, read for
// compatibility) have none: searches evaluate them exhaustively, and a merge
// or reorder writes one for their output.
func (r *Reader) HasBlockMax() bool { return r.bmax != nil }

// BlockMaxTerm returns the block-max record of term in an indexed field, or
// nil, nil when the term is absent.
func (r *Reader) BlockMaxTerm(field int, term string) (*BlockTerm, error) {
	d, err := r.dict(field)
	if err != nil {
		return nil, err
	}
	return r.blockTerm(field, d, term)
}

// BlockMaxDim returns the block-max record of a sparse vector field's
// dimension, or nil, nil when no document has it.
func (r *Reader) BlockMaxDim(field int, dim string) (*BlockTerm, error) {
	if !r.fieldOK(field) || r.sparse[field] == nil {
		return nil, fmt.Errorf("segment: field %d is not a sparse vector field", field)
	}
	return r.blockTerm(field, r.sparse[field], dim)
}

func (r *Reader) blockTerm(field int, d *dict, term string) (*BlockTerm, error) {
	f := r.bmax[field]
	if f == nil {
		return nil, fmt.Errorf("segment: field %d has no block maxima", field)
	}
	e, ok, err := d.lookup(term)
	if err != nil || !ok {
		return nil, err
	}
	rec, err := f.record(r.id, e.ord)
	if err != nil {
		return nil, err
	}
	return parseBlockTerm(rec, f.bmLayout, e.df, r.numDocs, r.id)
}

// parseBlockTerm splits a record of a field of layout l into its
// superblocks, entries and data.
func parseBlockTerm(rec []byte, l bmLayout, df, numDocs uint32, id segid.ID) (*BlockTerm, error) {
	t := &BlockTerm{kind: l.kind, mix: l.mix, df: df, numDocs: numDocs, id: id}
	d := decoder{b: rec}
	if l.kind == bmSparse {
		t.scale = math.Float32frombits(d.u32())
		if d.err == nil && !(t.scale >= 0 && t.scale <= math.MaxFloat32) {
			return nil, corruptf(id, SuffixBlockMax, "sparse scale %v", t.scale)
		}
	}
	t.nBlocks = d.intv(len(rec))
	entriesLen := d.intv(len(rec))
	if l.hasSupers(t.nBlocks) {
		if n := d.intv(len(rec)); n > 0 {
			t.supers = d.bytes(n)
		}
	}
	t.entries = d.bytes(entriesLen)
	t.data = rec[min(d.off, len(rec)):]
	if d.err != nil {
		return nil, corruptf(id, SuffixBlockMax, "record: %v", d.err)
	}
	return t, nil
}

// Entries appends the term's blocks, in increasing block order, to dst.
// Its loop decodes an entry inline (entryAt's format): search sums the
// bounds of every block of a query's terms through it.
func (t *BlockTerm) Entries(dst []BlockEntry) ([]BlockEntry, error) {
	b := t.entries
	maxBlock := uint64(t.numDocs) >> BlockShift
	bounds := t.layout().boundBytes()
	var block, off uint64
	p := 0
	for i := 0; i < t.nBlocks; i++ {
		var gap uint64
		var next int
		ok := p < len(b) && b[p] < 0x80 // one-byte gaps inline: the usual case
		if ok {
			gap, next = uint64(b[p]), p+1
		} else {
			gap, next, ok = codec.UvarintAt(b, p)
		}
		if !ok || (i > 0 && gap == 0) || len(b)-next < bounds+1 {
			return dst, corruptf(t.id, SuffixBlockMax, "bad block entry %d", i)
		}
		block += gap
		e := BlockEntry{Block: uint32(min(block, math.MaxUint32)), Hi: b[next]}
		if bounds >= 2 {
			e.Lo = b[next+1]
		}
		if bounds == 3 {
			e.Mix = b[next+2]
		}
		e.Count = int(b[next+bounds]) + 1
		var n uint64
		next += bounds + 1
		if ok = next < len(b) && b[next] < 0x80; ok {
			n, next = uint64(b[next]), next+1
		} else {
			n, next, ok = codec.UvarintAt(b, next)
		}
		if !ok || block > maxBlock || n > uint64(len(t.data))-off {
			return dst, corruptf(t.id, SuffixBlockMax, "block entry %d (block %d) outside the segment or its data", i, block)
		}
		p = next
		e.off, e.n = uint32(off), uint32(n)
		off += n
		dst = append(dst, e)
	}
	if p != len(b) || off != uint64(len(t.data)) {
		return dst, corruptf(t.id, SuffixBlockMax, "record has trailing bytes")
	}
	return dst, nil
}

// layout returns the layout of the term's field.
func (t *BlockTerm) layout() bmLayout {
	return bmLayout{kind: t.kind, mix: t.mix, supers: t.supers != nil}
}

// blockDocsOf decodes the doc offsets of block e into docs, returning the
// data after them.
func (t *BlockTerm) blockDocsOf(e *BlockEntry, docs []uint32) ([]uint32, []byte, error) {
	b := t.data[e.off : e.off+e.n]
	if len(b) < e.Count {
		return docs, nil, corruptf(t.id, SuffixBlockMax, "block %d data too short", e.Block)
	}
	base := e.Block << BlockShift
	last := -1
	for _, o := range b[:e.Count] {
		if int(o) <= last {
			return docs, nil, corruptf(t.id, SuffixBlockMax, "block %d: document offsets not increasing", e.Block)
		}
		last = int(o)
		docs = append(docs, base+uint32(o))
	}
	if last >= blockDocs || uint64(base)+uint64(last) >= uint64(t.numDocs) {
		return docs, nil, corruptf(t.id, SuffixBlockMax, "block %d: document offset %d out of range", e.Block, last)
	}
	return docs, b[e.Count:], nil
}

// TextBlock appends the documents of text block e and their frequencies.
func (t *BlockTerm) TextBlock(e *BlockEntry, docs, tfs []uint32) ([]uint32, []uint32, error) {
	docs, b, err := t.blockDocsOf(e, docs)
	if err != nil {
		return docs, tfs, err
	}
	off := 0
	for i := 0; i < e.Count; i++ {
		if off < len(b) && b[off] < 0x80 && b[off] != 0 {
			tfs = append(tfs, uint32(b[off]))
			off++
			continue
		}
		v, next, ok := codec.UvarintAt(b, off)
		if !ok || v == 0 || v > math.MaxUint32 {
			return docs, tfs, corruptf(t.id, SuffixBlockMax, "block %d: bad frequency", e.Block)
		}
		off = next
		tfs = append(tfs, uint32(v))
	}
	if off != len(b) {
		return docs, tfs, corruptf(t.id, SuffixBlockMax, "block %d: trailing bytes", e.Block)
	}
	return docs, tfs, nil
}

// SparseBlock appends the documents of sparse block e and their weights.
func (t *BlockTerm) SparseBlock(e *BlockEntry, docs []uint32, ws []float32) ([]uint32, []float32, error) {
	docs, b, err := t.blockDocsOf(e, docs)
	if err != nil {
		return docs, ws, err
	}
	if len(b) != 4*e.Count {
		return docs, ws, corruptf(t.id, SuffixBlockMax, "block %d: %d weight bytes for %d documents", e.Block, len(b), e.Count)
	}
	for i := 0; i < e.Count; i++ {
		ws = append(ws, math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return docs, ws, nil
}

// bmChecker rebuilds block-max records from the postings Validate decodes
// anyway and compares them byte for byte with the file (text records
// without building them, matchTextRecord): field selects a
// field (nil when it has no block maxima), the caller appends the term's
// postings to ps (sparse) or docs and freqs (text), and term checks the
// record. The first disagreement is
// kept in err; the walk goes on, so that the postings' own checks are
// reported first.
type bmChecker struct {
	// ps holds a sparse dimension's postings; docs and freqs a text or
	// exact term's, as columns.
	ps          []bmPosting
	docs, freqs []uint32
	rec         []byte
	enc         bmEncoder
	norm        func(uint32) uint32
	norms       normCol
	mix         mixRef
	err         error
}

// field starts field's walk, returning its block maxima or nil.
func (c *bmChecker) field(r *Reader, field int) *bmField {
	c.ps, c.docs, c.freqs = c.ps[:0], c.docs[:0], c.freqs[:0]
	if r.bmax == nil || r.bmax[field] == nil {
		return nil
	}
	norms := r.norms[field]
	c.norms = norms
	c.norm = func(doc uint32) uint32 { return norms.at(doc) }
	c.mix = r.bmax[field].mix
	return r.bmax[field]
}

// term compares term ordinal ord's record with the one rebuilt from the
// postings, then empties the postings.
func (c *bmChecker) term(r *Reader, field int, f *bmField, ord uint32) {
	if f == nil {
		return
	}
	ps, docs, freqs := c.ps, c.docs, c.freqs
	c.ps, c.docs, c.freqs = c.ps[:0], c.docs[:0], c.freqs[:0]
	if c.err != nil {
		return
	}
	got, err := f.record(r.id, ord)
	if err != nil {
		c.err = err
		return
	}
	if a := f.offset(ord); ord == 0 && a != 0 {
		c.err = corruptf(r.id, SuffixBlockMax, "field %d: first record starts at %d", field, a)
		return
	}
	var same bool
	if f.kind == bmSparse {
		c.rec = c.enc.encode(c.rec[:0], f.kind, ps, c.norm)
		same = bytes.Equal(got, c.rec)
	} else {
		same = matchTextRecord(got, f.bmLayout, docs, freqs, c.norms)
	}
	if !same {
		c.err = corruptf(r.id, SuffixBlockMax, "field %d: block maxima of term %d disagree with its postings", field, ord)
	}
}

// Norms is a tokenized field's length column, read without the checks of
// Reader.FieldLength: the caller passes doc ids below NumDocs.
type Norms struct{ c normCol }

// At returns doc's field length.
func (n Norms) At(doc uint32) uint32 { return n.c.at(doc) }

// Norms returns a field's length column; fields without lengths read 0.
func (r *Reader) Norms(field int) Norms {
	if !r.fieldOK(field) || r.norms[field].data == nil {
		return Norms{}
	}
	return Norms{c: r.norms[field]}
}
