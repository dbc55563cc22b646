package segment

import "encoding/binary"

// tailPackMin is the smallest tail (df%pforBlock documents) written as
// packed blocks rather than varints.
const tailPackMin = 16

// docsEncoder writes one term's docs section: documents in blocks of
// pforBlock, each block the doc-id gaps minus one then the frequencies
// minus one as patched bit-packed blocks (appendPFor). The last
// n = df%pforBlock documents are two such blocks of n values when n >=
// tailPackMin, else per document uvarint((gap-1)<<1 | freqIsOne) followed
// by uvarint(freq) when freqIsOne is 0. The gap of the first document is
// its doc id plus one.
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
		e.out = appendPFor(e.out, e.gaps[:])
		e.out = appendPFor(e.out, e.freqs[:])
		e.n = 0
	}
}

// finish appends the tail and returns the section.
func (e *docsEncoder) finish() []byte {
	if e.n >= tailPackMin {
		e.out = appendPFor(e.out, e.gaps[:e.n])
		e.out = appendPFor(e.out, e.freqs[:e.n])
		e.n = 0
		return e.out
	}
	for i := 0; i < e.n; i++ {
		v := uint64(e.gaps[i]) << 1
		if e.freqs[i] == 0 {
			e.out = binary.AppendUvarint(e.out, v|1)
		} else {
			e.out = binary.AppendUvarint(e.out, v)
			e.out = binary.AppendUvarint(e.out, uint64(e.freqs[i])+1)
		}
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
// 4 bytes per packed block pair, 1 per varint tail document.
func minDocsLen(df uint64) uint64 {
	tail := df % pforBlock
	if tail >= tailPackMin {
		tail = 4
	}
	return 4*(df/pforBlock) + tail
}

// docsSectionSizes splits a docs section of df documents into the bytes
// of doc-id gaps and the bytes of frequencies (each block's headers and
// exceptions included; a tail document's first varint, which carries the
// freqIsOne bit, counts as doc-id bytes); ok is false when the section
// does not parse.
func docsSectionSizes(sec []byte, df uint32) (ids, freqs uint64, ok bool) {
	off := 0
	for left := df; left >= pforBlock || left >= tailPackMin; left -= min(left, pforBlock) {
		n := int(min(left, pforBlock))
		a, ok1 := pforSize(sec, off, n)
		if !ok1 {
			return 0, 0, false
		}
		b, ok2 := pforSize(sec, off+a, n)
		if !ok2 {
			return 0, 0, false
		}
		ids, freqs, off = ids+uint64(a), freqs+uint64(b), off+a+b
	}
	for i := 0; i < int(df%pforBlock) && df%pforBlock < tailPackMin; i++ {
		v, next, ok1 := uvarintAt(sec, off)
		if !ok1 {
			return 0, 0, false
		}
		ids, off = ids+uint64(next-off), next
		if v&1 == 0 {
			if _, next, ok1 = uvarintAt(sec, off); !ok1 {
				return 0, 0, false
			}
			freqs, off = freqs+uint64(next-off), next
		}
	}
	return ids, freqs, off == len(sec)
}

// legacySectionSizes is docsSectionSizes for a version 1 docs section: a
// document's first varint counts as doc id, its frequency varint (if any)
// as frequency.
func legacySectionSizes(sec []byte, df uint32) (ids, freqs uint64, ok bool) {
	off := 0
	for i := uint32(0); i < df; i++ {
		v, next, ok1 := uvarintAt(sec, off)
		if !ok1 {
			return 0, 0, false
		}
		ids, off = ids+uint64(next-off), next
		if v&1 == 0 {
			if _, next, ok1 = uvarintAt(sec, off); !ok1 {
				return 0, 0, false
			}
			freqs, off = freqs+uint64(next-off), next
		}
	}
	return ids, freqs, off == len(sec)
}
