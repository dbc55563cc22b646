package codec

import "math/bits"

// DocsEncoder writes one term's docs section (engine/segment/doc.go, "post"): an optional
// skip table, then the documents in blocks of BlockSize, each block the
// doc-id gaps minus one as a patched bit-packed block (AppendPFor) or, when
// a quarter shorter, the doc ids by interpolation (AppendInterpBlock), then
// the frequencies minus one as a packed block, then the last n = df%BlockSize
// documents, if any, as a bit-coded tail: the doc ids within [previous
// block's last doc + 1, numDocs-1] in binary interpolative code or as
// gamma-coded gaps (AppendTailDocs), then the frequencies in Elias gamma
// code, padded to a byte.
type DocsEncoder struct {
	sec     []byte // the assembled section
	out     []byte // the blocks
	docs    [BlockSize]uint32
	gaps    [BlockSize]uint32
	freqs   [BlockSize]uint32
	n       int    // buffered documents
	last    int64  // last doc id of the last finished block, -1 before
	cum     uint64 // sum of the frequencies of the finished blocks
	numDocs uint32
	hasPos  bool
	lasts   []uint64 // per finished block: its last doc id
	offs    []uint64 // per finished block: the offset of the next block
	cums    []uint64 // per finished block: the frequencies up to its end
	// PackedOnly keeps every full block packed (benchmarks compare).
	PackedOnly bool
}

// Reset starts a new section for a segment of numDocs documents, reusing
// dst's memory; hasPos says whether the field has positions (the skip
// table then records frequency sums, to skip positions).
func (e *DocsEncoder) Reset(dst []byte, numDocs uint32, hasPos bool) {
	e.sec, e.out, e.n, e.last, e.cum = dst[:0], e.out[:0], 0, -1, 0
	e.numDocs, e.hasPos = numDocs, hasPos
	e.lasts, e.offs, e.cums = e.lasts[:0], e.offs[:0], e.cums[:0]
}

// Add appends a document; doc ids must increase, stay below numDocs, and
// freq be >= 1.
func (e *DocsEncoder) Add(doc, freq uint32) {
	e.docs[e.n], e.freqs[e.n] = doc, freq
	if e.n++; e.n == BlockSize {
		e.finishBlock()
	}
}

// AddAll appends documents docs with frequencies freqs (add's rules; the
// slices have the same length), a block's worth at a time.
func (e *DocsEncoder) AddAll(docs, freqs []uint32) {
	for len(docs) > 0 {
		k := copy(e.docs[e.n:], docs)
		copy(e.freqs[e.n:], freqs[:k])
		docs, freqs = docs[k:], freqs[k:]
		if e.n += k; e.n == BlockSize {
			e.finishBlock()
		}
	}
}

// finishBlock encodes the buffered full block.
func (e *DocsEncoder) finishBlock() {
	prev := e.last
	for i, d := range e.docs {
		e.gaps[i] = uint32(int64(d) - prev - 1)
		prev = int64(d)
	}
	start := len(e.out)
	e.out = AppendPFor(e.out, e.gaps[:])
	// Interpolation decodes several times slower than packed gaps
	// (BenchmarkDocsDecode): it must save a quarter of the block.
	// Its length is counted first, the block written only if so.
	if !e.PackedOnly && 4*interpBlockLen(e.docs[:], e.last) < 3*(len(e.out)-start) {
		e.out = AppendInterpBlock(e.out[:start], e.docs[:], e.last)
	}
	for i, f := range e.freqs {
		e.cum += uint64(f)
		e.freqs[i] = f - 1
	}
	e.out = AppendPFor(e.out, e.freqs[:])
	doc := e.docs[BlockSize-1]
	e.n, e.last = 0, int64(doc)
	e.lasts = append(e.lasts, uint64(doc))
	e.offs = append(e.offs, uint64(len(e.out)))
	e.cums = append(e.cums, e.cum)
}

// Finish appends the tail and returns the section.
func (e *DocsEncoder) Finish() []byte {
	blocks := len(e.lasts)
	if e.n > 0 {
		w := BitWriter{buf: e.out}
		AppendTailDocs(&w, e.docs[:e.n], uint32(e.last+1), e.numDocs-1)
		for _, f := range e.freqs[:e.n] {
			w.Gamma(f)
		}
		w.Align()
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
		w := BitWriter{buf: e.sec}
		for _, col := range []struct {
			v []uint64
			b int
		}{{e.lasts, bd}, {e.offs, bo}, {e.cums, bc}} {
			for _, v := range col.v[:entries] {
				w.Write(v, uint(col.b))
			}
		}
		w.Align()
		e.sec = w.buf
	}
	e.sec = append(e.sec, e.out...)
	e.n = 0
	return e.sec
}

// SkipHeader is the size of a skip table's header: the bit widths of its
// three columns.
const SkipHeader = 3

// DocsBlocks returns the number of blocks of a docs section of df
// documents: full blocks, plus one for a tail.
func DocsBlocks(df uint64) uint64 {
	return (df + BlockSize - 1) / BlockSize
}

// SkipTableLen returns the length of the skip table at the start of sec,
// a docs section of df documents (0 when it has none, below 2 blocks);
// ok is false when the table does not fit or its widths are impossible.
func SkipTableLen(sec []byte, df uint64) (n int, bd, bo, bc uint, ok bool) {
	blocks := DocsBlocks(df)
	if blocks < 2 {
		return 0, 0, 0, 0, true
	}
	if len(sec) < SkipHeader {
		return 0, 0, 0, 0, false
	}
	bd, bo, bc = uint(sec[0]), uint(sec[1]), uint(sec[2])
	if bd > 32 || bo > 64 || bc > 64 {
		return 0, 0, 0, 0, false
	}
	tb := ((blocks-1)*uint64(bd+bo+bc) + 7) / 8
	if tb > uint64(len(sec)-SkipHeader) {
		return 0, 0, 0, 0, false
	}
	return SkipHeader + int(tb), bd, bo, bc, true
}

// MinDocsLen is the smallest docs section that can hold df documents:
// 4 bytes per packed block pair, a bit per tail document (its gamma
// frequency; interpolative doc ids may take no bits).
func MinDocsLen(df uint64) uint64 {
	return 4*(df/BlockSize) + (df%BlockSize+7)/8
}
