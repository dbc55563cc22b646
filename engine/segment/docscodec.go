package segment

import "math/bits"

// docsEncoder writes one term's docs section (doc.go, "post"): an optional
// skip table, then the documents in blocks of pforBlock, each block the
// doc-id gaps minus one as a patched bit-packed block (appendPFor) or, when
// a quarter shorter, the doc ids by interpolation (appendInterpBlock), then
// the frequencies minus one as a packed block, then the last n = df%pforBlock
// documents, if any, as a bit-coded tail: the doc ids within [previous
// block's last doc + 1, numDocs-1] in binary interpolative code or as
// gamma-coded gaps (appendTailDocs), then the frequencies in Elias gamma
// code, padded to a byte.
type docsEncoder struct {
	sec     []byte // the assembled section
	out     []byte // the blocks
	docs    [pforBlock]uint32
	gaps    [pforBlock]uint32
	freqs   [pforBlock]uint32
	n       int    // buffered documents
	last    int64  // last doc id of the last finished block, -1 before
	cum     uint64 // sum of the frequencies of the finished blocks
	numDocs uint32
	hasPos  bool
	lasts   []uint64 // per finished block: its last doc id
	offs    []uint64 // per finished block: the offset of the next block
	cums    []uint64 // per finished block: the frequencies up to its end
	// packedOnly keeps every full block packed (benchmarks compare).
	packedOnly bool
}

// reset starts a new section for a segment of numDocs documents, reusing
// dst's memory; hasPos says whether the field has positions (the skip
// table then records frequency sums, to skip positions).
func (e *docsEncoder) reset(dst []byte, numDocs uint32, hasPos bool) {
	e.sec, e.out, e.n, e.last, e.cum = dst[:0], e.out[:0], 0, -1, 0
	e.numDocs, e.hasPos = numDocs, hasPos
	e.lasts, e.offs, e.cums = e.lasts[:0], e.offs[:0], e.cums[:0]
}

// add appends a document; doc ids must increase, stay below numDocs, and
// freq be >= 1.
func (e *docsEncoder) add(doc, freq uint32) {
	e.docs[e.n], e.freqs[e.n] = doc, freq
	if e.n++; e.n == pforBlock {
		e.finishBlock()
	}
}

// addAll appends documents docs with frequencies freqs (add's rules; the
// slices have the same length), a block's worth at a time.
func (e *docsEncoder) addAll(docs, freqs []uint32) {
	for len(docs) > 0 {
		k := copy(e.docs[e.n:], docs)
		copy(e.freqs[e.n:], freqs[:k])
		docs, freqs = docs[k:], freqs[k:]
		if e.n += k; e.n == pforBlock {
			e.finishBlock()
		}
	}
}

// finishBlock encodes the buffered full block.
func (e *docsEncoder) finishBlock() {
	prev := e.last
	for i, d := range e.docs {
		e.gaps[i] = uint32(int64(d) - prev - 1)
		prev = int64(d)
	}
	start := len(e.out)
	e.out = appendPFor(e.out, e.gaps[:])
	// Interpolation decodes several times slower than packed gaps
	// (BenchmarkDocsDecode): it must save a quarter of the block.
	// Its length is counted first, the block written only if so.
	if !e.packedOnly && 4*interpBlockLen(e.docs[:], e.last) < 3*(len(e.out)-start) {
		e.out = appendInterpBlock(e.out[:start], e.docs[:], e.last)
	}
	for i, f := range e.freqs {
		e.cum += uint64(f)
		e.freqs[i] = f - 1
	}
	e.out = appendPFor(e.out, e.freqs[:])
	doc := e.docs[pforBlock-1]
	e.n, e.last = 0, int64(doc)
	e.lasts = append(e.lasts, uint64(doc))
	e.offs = append(e.offs, uint64(len(e.out)))
	e.cums = append(e.cums, e.cum)
}

// finish appends the tail and returns the section.
func (e *docsEncoder) finish() []byte {
	blocks := len(e.lasts)
	if e.n > 0 {
		w := bitWriter{buf: e.out}
		appendTailDocs(&w, e.docs[:e.n], uint32(e.last+1), e.numDocs-1)
		for _, f := range e.freqs[:e.n] {
			w.gamma(f)
		}
		w.align()
		e.out = w.buf
		blocks++
	}
	if blocks >= 2 {
		entries := blocks - 1
		bd := bits.Len64(e.lasts[entries-1])
		bo := bits.Len64(e.offs[entries-1])
		bc := 0
		if e.hasPos {
			bc = bits.Len64(e.cums[entries-1])
		}
		e.sec = append(e.sec, byte(bd), byte(bo), byte(bc))
		w := bitWriter{buf: e.sec}
		for _, col := range []struct {
			v []uint64
			b int
		}{{e.lasts, bd}, {e.offs, bo}, {e.cums, bc}} {
			for _, v := range col.v[:entries] {
				w.write(v, uint(col.b))
			}
		}
		w.align()
		e.sec = w.buf
	}
	e.sec = append(e.sec, e.out...)
	e.n = 0
	return e.sec
}

// skipHeader is the size of a skip table's header: the bit widths of its
// three columns.
const skipHeader = 3

// docsBlocks returns the number of blocks of a docs section of df
// documents: full blocks, plus one for a tail.
func docsBlocks(df uint64) uint64 {
	return (df + pforBlock - 1) / pforBlock
}

// skipTableLen returns the length of the skip table at the start of sec,
// a docs section of df documents (0 when it has none, below 2 blocks);
// ok is false when the table does not fit or its widths are impossible.
func skipTableLen(sec []byte, df uint64) (n int, bd, bo, bc uint, ok bool) {
	blocks := docsBlocks(df)
	if blocks < 2 {
		return 0, 0, 0, 0, true
	}
	if len(sec) < skipHeader {
		return 0, 0, 0, 0, false
	}
	bd, bo, bc = uint(sec[0]), uint(sec[1]), uint(sec[2])
	if bd > 32 || bo > 64 || bc > 64 {
		return 0, 0, 0, 0, false
	}
	tb := ((blocks-1)*uint64(bd+bo+bc) + 7) / 8
	if tb > uint64(len(sec)-skipHeader) {
		return 0, 0, 0, 0, false
	}
	return skipHeader + int(tb), bd, bo, bc, true
}

// encodeBuilderDocs re-encodes a Builder's compact docs (termPostings) as a
// docs section appended through e; a section a merge already encoded is
// copied.
func encodeBuilderDocs(e *docsEncoder, dst []byte, t *termPostings, numDocs uint32, hasPos bool) []byte {
	if t.encoded {
		return append(dst[:0], t.docs...)
	}
	e.reset(dst, numDocs, hasPos)
	var doc uint32
	for off, k := 0, uint32(0); off < len(t.docs); k++ {
		v, next, _ := uvarintAt(t.docs, off)
		off = next
		if k == 0 {
			doc = uint32(v >> 1)
		} else {
			doc += uint32(v >> 1)
		}
		freq := uint32(1)
		if v&1 == 0 {
			f, next, _ := uvarintAt(t.docs, off)
			freq, off = uint32(f), next
		}
		e.add(doc, freq)
	}
	return e.finish()
}

// minDocsLen is the smallest docs section that can hold df documents:
// 4 bytes per packed block pair, a bit per tail document (its gamma
// frequency; interpolative doc ids may take no bits).
func minDocsLen(df uint64) uint64 {
	return 4*(df/pforBlock) + (df%pforBlock+7)/8
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
	off, _, _, _, ok := skipTableLen(sec, uint64(df))
	if !ok {
		return p, false
	}
	p.Skip = uint64(off)
	prev := int64(-1) // the last doc of the blocks read
	var buf [pforBlock]uint32
	for left := df; left >= pforBlock; left -= pforBlock {
		var a int
		if off < len(sec) && sec[off] == interpMarker {
			end, ok1 := readInterpBlock(sec, off, prev, numDocs, buf[:])
			if !ok1 {
				return p, false
			}
			a, prev = end-off, int64(buf[pforBlock-1])
			p.Interp += uint64(a)
		} else {
			end, err := unpackPFor(sec, off, buf[:])
			if err != nil {
				return p, false
			}
			for _, g := range buf {
				prev += int64(g) + 1
			}
			a = end - off
			p.Packed += uint64(a)
		}
		b, ok2 := pforSize(sec, off+a, pforBlock)
		if !ok2 {
			return p, false
		}
		p.Freqs, off = p.Freqs+uint64(b), off+a+b
	}
	if n := df % pforBlock; n > 0 {
		lo := prev + 1
		r := bitReader{src: sec[off:]}
		if !readTailDocs(&r, buf[:n], lo, int64(numDocs)-1) {
			return p, false
		}
		idBytes := (r.pos + 7) / 8
		for i := uint32(0); i < n; i++ {
			if _, ok1 := r.gamma(); !ok1 {
				return p, false
			}
		}
		total := (r.pos + 7) / 8
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
		v, next, ok1 := uvarintAt(sec, off)
		if !ok1 {
			return p, false
		}
		ids, off = ids+uint64(next-off), next
		if v&1 == 0 {
			if _, next, ok1 = uvarintAt(sec, off); !ok1 {
				return p, false
			}
			freqs, off = freqs+uint64(next-off), next
		}
	}
	return DocIDParts{Legacy: ids, Freqs: freqs}, off == len(sec)
}
