package segment

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment/codec"
)

// writePK writes the pk file: key bytes, then the offset table (numDocs+1
// entries), then the directory: numDocs, hasPK, width, offsOff, dataLen.
// Without a primary field only the directory is written (hasPK 0).
func (b *Builder) writePK(w *fileWriter) {
	var width int
	var offsOff uint64
	if b.pk != nil {
		w.write(b.pk.data)
		offsOff = w.offset()
		width = offsetWidth(uint64(len(b.pk.data)))
		writeOffsets(w, b.pk.offs, width)
	}
	w.beginDirectory()
	w.uvarint(uint64(b.numDocs))
	if b.pk == nil {
		w.u8(0)
		return
	}
	w.u8(1)
	w.uvarint(uint64(width))
	w.uvarint(offsOff)
	w.uvarint(uint64(len(b.pk.data)))
}

// pkCol is the primary-key column.
type pkCol struct {
	has  bool
	offs offsetTable
	data []byte
}

func openPK(id segid.ID, s *schema.Schema, payload []byte, numDocs uint32) (pkCol, error) {
	dir, err := splitDirectory(payload, id, SuffixPrimaryKey)
	if err != nil {
		return pkCol{}, err
	}
	d := decoder{b: dir}
	n := d.uvarint()
	has := d.u8()
	var c pkCol
	var width int
	var offsOff, dataLen uint64
	if has == 1 {
		width = d.intv(8)
		offsOff = d.uvarint()
		dataLen = d.uvarint()
	}
	d.done()
	if d.err != nil {
		return c, corruptf(id, SuffixPrimaryKey, "directory: %v", d.err)
	}
	if n != uint64(numDocs) {
		return c, corruptf(id, SuffixPrimaryKey, "%d documents, segment has %d", n, numDocs)
	}
	if has > 1 || (has == 1) != (s.Primary() >= 0) {
		return c, corruptf(id, SuffixPrimaryKey, "primary-key flag %d does not match the schema", has)
	}
	if has == 0 {
		return c, nil
	}
	c.has = true
	var ok bool
	if c.data, ok = subslice(payload, 0, dataLen); !ok || offsOff != dataLen {
		return c, corruptf(id, SuffixPrimaryKey, "key bytes outside payload")
	}
	if c.offs, ok = docOffsets(payload, offsOff, width, numDocs); !ok {
		return c, corruptf(id, SuffixPrimaryKey, "offset table outside payload")
	}
	return c, nil
}

// ---- numeric columns ----

// writeNumbers writes the num file: per numeric field its values (8 bytes
// LE each, in doc order), then, unless every document has exactly one value
// (width 0), the cumulative value-count table (numDocs+1 entries); then the
// directory: numDocs, nFields, nFields × (ord, width, offsOff, valsOff,
// numValues).
func (b *Builder) writeNumbers(w *fileWriter) {
	type entry struct{ ord, width, offsOff, valsOff, n uint64 }
	var entries []entry
	for i := range b.fields {
		nb := b.fields[i].num
		if nb == nil {
			continue
		}
		e := entry{ord: uint64(i), valsOff: w.offset(), n: uint64(len(nb.vals))}
		writeU64s(w, nb.vals)
		single := e.n == uint64(b.numDocs)
		for d := 0; single && d < int(b.numDocs); d++ {
			single = nb.counts[d+1] == uint64(d+1)
		}
		if !single {
			e.width = uint64(offsetWidth(e.n))
			e.offsOff = w.offset()
			writeOffsets(w, nb.counts, int(e.width))
		}
		entries = append(entries, e)
	}
	dir := make([][]uint64, len(entries))
	for i, e := range entries {
		dir[i] = []uint64{e.ord, e.width, e.offsOff, e.valsOff, e.n}
	}
	w.entryDirectory(b.numDocs, dir)
}

// numCol is one numeric column.
type numCol struct {
	ok     bool
	single bool // exactly one value per document
	offs   offsetTable
	vals   []byte
	n      uint64
}

// span returns the value index range of doc.
func (c *numCol) span(doc uint32) (uint64, uint64, bool) {
	if c.single {
		return uint64(doc), uint64(doc) + 1, true
	}
	return c.offs.span(int(doc), c.n)
}

func openNumbers(id segid.ID, s *schema.Schema, payload []byte, numDocs uint32) ([]numCol, error) {
	want := func(i int) bool { return s.Fields[i].IsNumeric() }
	return fieldEntries(id, SuffixNumbers, payload, numDocs, nil, want, len(s.Fields), func(d *decoder, ord int) (numCol, error) {
		width := d.intv(8)
		offsOff := d.uvarint()
		valsOff := d.uvarint()
		n := d.uvarint()
		if d.err != nil {
			return numCol{}, nil
		}
		c := numCol{ok: true, n: n, single: width == 0}
		var ok bool
		if n > uint64(len(payload))/8 {
			return numCol{}, corruptf(id, SuffixNumbers, "field %d: %d values cannot fit", ord, n)
		}
		if c.vals, ok = subslice(payload, valsOff, 8*n); !ok {
			return numCol{}, corruptf(id, SuffixNumbers, "field %d: values outside payload", ord)
		}
		if c.single {
			if n != uint64(numDocs) {
				return numCol{}, corruptf(id, SuffixNumbers, "field %d: %d single values for %d documents", ord, n, numDocs)
			}
		} else {
			var ok bool
			if c.offs, ok = docOffsets(payload, offsOff, width, numDocs); !ok {
				return numCol{}, corruptf(id, SuffixNumbers, "field %d: offset table outside payload", ord)
			}
		}
		return c, nil
	})
}

// ---- forward term lists ----

// writeForward writes the fwd file: per reorder field, per document the
// sorted distinct term ordinals (first absolute, then gaps, uvarint), then
// the byte offset table (numDocs+1 entries); then the directory: numDocs,
// nFields, nFields × (ord, width, offsOff, dataOff, dataLen, numTerms).
func (b *Builder) writeForward(ctx context.Context, w *fileWriter, sorted []sortedTerms) error {
	type entry struct{ ord, width, offsOff, dataOff, dataLen, numTerms uint64 }
	var entries []entry
	for i := range b.fields {
		ix := b.fields[i].index
		if ix == nil || !ix.reorder {
			continue
		}
		ordOf := sorted[i].ordOf
		e := entry{ord: uint64(i), dataOff: w.offset(), numTerms: uint64(len(ix.terms))}
		if ix.fwdData != nil {
			// A merge's lists, encoded with the ordinals of its terms,
			// which it added in order.
			if !sorted[i].identity || len(ix.fwdEnds) != int(b.numDocs) {
				return fmt.Errorf("segment: write forward term lists: %d merged lists for %d documents, terms in order %v",
					len(ix.fwdEnds), b.numDocs, sorted[i].identity)
			}
			w.write(ix.fwdData)
			e.dataLen = uint64(len(ix.fwdData))
			e.width = uint64(offsetWidth(e.dataLen))
			e.offsOff = w.offset()
			writeOffsets(w, append([]uint64{0}, ix.fwdEnds...), int(e.width))
			entries = append(entries, e)
			continue
		}
		offs := make([]uint64, 0, b.numDocs+1)
		offs = append(offs, 0)
		var ords []uint32
		buf := make([]byte, 0, 8192)
		var total uint64
		for d := 0; d < int(b.numDocs); d++ {
			if d%ctxCheckEvery == ctxCheckEvery-1 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("segment: write forward term lists: %w", err)
				}
			}
			ords = ords[:0]
			for _, id := range ix.fwdIDs[ix.fwdOffs[d]:ix.fwdOffs[d+1]] {
				ords = append(ords, ordOf[id])
			}
			slices.Sort(ords)
			n := len(buf)
			var prev uint32
			for k, o := range ords {
				if k == 0 {
					buf = binary.AppendUvarint(buf, uint64(o))
				} else {
					buf = binary.AppendUvarint(buf, uint64(o-prev))
				}
				prev = o
			}
			total += uint64(len(buf) - n)
			offs = append(offs, total)
			if len(buf) >= 4096 {
				w.write(buf)
				buf = buf[:0]
			}
		}
		w.write(buf)
		e.dataLen = total
		e.width = uint64(offsetWidth(total))
		e.offsOff = w.offset()
		writeOffsets(w, offs, int(e.width))
		entries = append(entries, e)
	}
	dir := make([][]uint64, len(entries))
	for i, e := range entries {
		dir[i] = []uint64{e.ord, e.width, e.offsOff, e.dataOff, e.dataLen, e.numTerms}
	}
	w.entryDirectory(b.numDocs, dir)
	return w.err
}

// fwdCol is one field's forward term lists.
type fwdCol struct {
	ok       bool
	offs     offsetTable
	data     []byte
	numTerms uint32
}

func openForward(id segid.ID, s *schema.Schema, payload []byte, numDocs uint32) ([]fwdCol, error) {
	want := func(i int) bool { return s.Fields[i].Reorder && s.Fields[i].IsIndexed() }
	return fieldEntries(id, SuffixForward, payload, numDocs, nil, want, len(s.Fields), func(d *decoder, ord int) (fwdCol, error) {
		width := d.intv(8)
		offsOff := d.uvarint()
		dataOff := d.uvarint()
		dataLen := d.uvarint()
		numTerms := d.u32v()
		if d.err != nil {
			return fwdCol{}, nil
		}
		c := fwdCol{ok: true, numTerms: numTerms}
		var ok bool
		if c.data, ok = subslice(payload, dataOff, dataLen); !ok {
			return fwdCol{}, corruptf(id, SuffixForward, "field %d: term lists outside payload", ord)
		}
		if c.offs, ok = docOffsets(payload, offsOff, width, numDocs); !ok {
			return fwdCol{}, corruptf(id, SuffixForward, "field %d: offset table outside payload", ord)
		}
		return c, nil
	})
}

// decodeForward decodes one document's ordinals, checking they increase
// and stay below numTerms.
func (c *fwdCol) decode(id segid.ID, doc uint32, dst []uint32) ([]uint32, error) {
	s, e, ok := c.offs.span(int(doc), uint64(len(c.data)))
	if !ok {
		return dst, corruptf(id, SuffixForward, "doc %d: bad term list bounds", doc)
	}
	b := c.data[s:e]
	var prev uint64
	for off, k := 0, 0; off < len(b); k++ {
		v, next, ok := codec.UvarintAt(b, off)
		if !ok || (k > 0 && v == 0) {
			return dst, corruptf(id, SuffixForward, "doc %d: bad term ordinal", doc)
		}
		if k > 0 {
			v += prev
		}
		if v >= uint64(c.numTerms) {
			return dst, corruptf(id, SuffixForward, "doc %d: ordinal %d of %d terms", doc, v, c.numTerms)
		}
		prev = v
		off = next
		dst = append(dst, uint32(v))
	}
	return dst, nil
}
