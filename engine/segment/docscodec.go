package segment

import "encoding/binary"

// docsEncoder writes one term's docs section: documents in blocks of
// pforBlock, each block the doc-id gaps minus one then the frequencies
// minus one as patched bit-packed blocks (appendPFor); the last
// df%pforBlock documents as uvarint gaps minus one, then uvarint
// frequencies minus one. The gap of the first document is its doc id.
type docsEncoder struct {
	out   []byte
	gaps  [pforBlock]uint32
	freqs [pforBlock]uint32
	n     int   // buffered documents
	prev  int64 // last doc id added, -1 before the first
}

// reset starts a new section, reusing dst's memory.
func (e *docsEncoder) reset(dst []byte) {
	e.out, e.n, e.prev = dst[:0], 0, -1
}

// add appends a document; doc ids must increase and freq be >= 1.
func (e *docsEncoder) add(doc, freq uint32) {
	e.gaps[e.n] = uint32(int64(doc) - e.prev - 1)
	e.freqs[e.n] = freq - 1
	e.prev = int64(doc)
	e.n++
	if e.n == pforBlock {
		e.out = appendPFor(e.out, &e.gaps)
		e.out = appendPFor(e.out, &e.freqs)
		e.n = 0
	}
}

// finish appends the varint tail and returns the section.
func (e *docsEncoder) finish() []byte {
	for i := 0; i < e.n; i++ {
		e.out = binary.AppendUvarint(e.out, uint64(e.gaps[i]))
	}
	for i := 0; i < e.n; i++ {
		e.out = binary.AppendUvarint(e.out, uint64(e.freqs[i]))
	}
	e.n = 0
	return e.out
}

// encodeBuilderDocs re-encodes a Builder's compact docs (termPostings) as a
// docs section appended through e.
func encodeBuilderDocs(e *docsEncoder, dst []byte, t *termPostings) []byte {
	e.reset(dst)
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
// 4 bytes per full block, 2 per tail document.
func minDocsLen(df uint64) uint64 {
	return 4*(df/pforBlock) + 2*(df%pforBlock)
}

// docsSectionSizes splits a docs section of df documents into the bytes
// of doc-id gaps and the bytes of frequencies (each block's headers and
// exceptions included); ok is false when the section does not parse.
func docsSectionSizes(sec []byte, df uint32) (ids, freqs uint64, ok bool) {
	off := 0
	for left := df; left >= pforBlock; left -= pforBlock {
		a, ok1 := pforSize(sec, off)
		if !ok1 {
			return 0, 0, false
		}
		b, ok2 := pforSize(sec, off+a)
		if !ok2 {
			return 0, 0, false
		}
		ids, freqs, off = ids+uint64(a), freqs+uint64(b), off+a+b
	}
	tail := int(df % pforBlock)
	for pass := 0; pass < 2; pass++ {
		start := off
		for i := 0; i < tail; i++ {
			var ok1 bool
			if _, off, ok1 = uvarintAt(sec, off); !ok1 {
				return 0, 0, false
			}
		}
		if pass == 0 {
			ids += uint64(off - start)
		} else {
			freqs += uint64(off - start)
		}
	}
	return ids, freqs, off == len(sec)
}
