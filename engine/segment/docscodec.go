package segment

import "github.com/summadev/summa/engine/segment/codec"

// encodeBuilderDocs re-encodes a Builder's compact docs (termPostings) as a
// docs section appended through e; a section a merge already encoded is
// copied.
func encodeBuilderDocs(e *codec.DocsEncoder, dst []byte, t *termPostings, numDocs uint32, hasPos bool) []byte {
	if t.encoded {
		return append(dst[:0], t.docs...)
	}
	e.Reset(dst, numDocs, hasPos)
	var doc uint32
	for off, k := 0, uint32(0); off < len(t.docs); k++ {
		v, next, _ := codec.UvarintAt(t.docs, off)
		off = next
		if k == 0 {
			doc = uint32(v >> 1)
		} else {
			doc += uint32(v >> 1)
		}
		freq := uint32(1)
		if v&1 == 0 {
			f, next, _ := codec.UvarintAt(t.docs, off)
			freq, off = uint32(f), next
		}
		e.Add(doc, freq)
	}
	return e.Finish()
}

// docsSectionSizes splits a docs section of df documents of a segment of
// numDocs documents into the bytes of doc ids and the bytes of
// frequencies: the skip table, the gap blocks (headers and exceptions
// included) and the tail's interpolative bits rounded up to bytes are doc
// ids; ok is false when the section does not parse.
func docsSectionSizes(sec []byte, df, numDocs uint32) (ids, freqs uint64, ok bool) {
	p, ok := docsSectionParts(sec, df, numDocs)
	return p.IDs(), p.Freqs, ok
}

// docsSectionParts is docsSectionSizes with the doc-id bytes split by
// how they are coded (DocIDParts).
func docsSectionParts(sec []byte, df, numDocs uint32) (p DocIDParts, ok bool) {
	off, _, _, _, ok := codec.SkipTableLen(sec, uint64(df))
	if !ok {
		return p, false
	}
	p.Skip = uint64(off)
	prev := int64(-1) // the last doc of the blocks read
	var buf [codec.BlockSize]uint32
	for left := df; left >= codec.BlockSize; left -= codec.BlockSize {
		var a int
		if off < len(sec) && sec[off] == codec.InterpMarker {
			end, ok1 := codec.ReadInterpBlock(sec, off, prev, numDocs, buf[:])
			if !ok1 {
				return p, false
			}
			a, prev = end-off, int64(buf[codec.BlockSize-1])
			p.Interp += uint64(a)
		} else {
			end, err := codec.UnpackPFor(sec, off, buf[:])
			if err != nil {
				return p, false
			}
			for _, g := range buf {
				prev += int64(g) + 1
			}
			a = end - off
			p.Packed += uint64(a)
		}
		b, ok2 := codec.PForSize(sec, off+a, codec.BlockSize)
		if !ok2 {
			return p, false
		}
		p.Freqs, off = p.Freqs+uint64(b), off+a+b
	}
	if n := df % codec.BlockSize; n > 0 {
		lo := prev + 1
		r := codec.NewBitReader(sec[off:])
		if !codec.ReadTailDocs(&r, buf[:n], lo, int64(numDocs)-1) {
			return p, false
		}
		idBytes := (r.Pos() + 7) / 8
		for i := uint32(0); i < n; i++ {
			if _, ok1 := r.Gamma(); !ok1 {
				return p, false
			}
		}
		total := (r.Pos() + 7) / 8
		p.Tail, p.Freqs, off = idBytes, p.Freqs+total-idBytes, off+int(total)
	}
	return p, off == len(sec)
}

// legacySectionSizes is docsSectionSizes for a version 1 docs section: a
// document's first varint counts as doc id, its frequency varint (if any)
// as frequency.
func legacySectionSizes(sec []byte, df, numDocs uint32) (ids, freqs uint64, ok bool) {
	p, ok := legacySectionParts(sec, df, numDocs)
	return p.IDs(), p.Freqs, ok
}

// legacySectionParts is docsSectionParts for a version 1 docs section
// (its doc ids count as DocIDParts.Legacy).
func legacySectionParts(sec []byte, df, _ uint32) (p DocIDParts, ok bool) {
	var ids, freqs uint64
	off := 0
	for i := uint32(0); i < df; i++ {
		v, next, ok1 := codec.UvarintAt(sec, off)
		if !ok1 {
			return p, false
		}
		ids, off = ids+uint64(next-off), next
		if v&1 == 0 {
			if _, next, ok1 = codec.UvarintAt(sec, off); !ok1 {
				return p, false
			}
			freqs, off = freqs+uint64(next-off), next
		}
	}
	return DocIDParts{Legacy: ids, Freqs: freqs}, off == len(sec)
}
