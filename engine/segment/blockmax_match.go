package segment

import (
	"bytes"
	"math"
)

// bmExpect walks a record comparing it with the bytes an encoder would
// append, without building them: ok turns false at the first difference
// or past the end.
type bmExpect struct {
	rec []byte
	off int
	ok  bool
}

// byte1 expects byte b.
func (x *bmExpect) byte1(b byte) {
	if x.off >= len(x.rec) || x.rec[x.off] != b {
		x.ok = false
		return
	}
	x.off++
}

// uvarint expects v as binary.AppendUvarint writes it.
func (x *bmExpect) uvarint(v uint64) {
	for v >= 0x80 {
		x.byte1(byte(v) | 0x80)
		v >>= 7
	}
	x.byte1(byte(v))
}

// ratio expects ratioCode(dl, tf), checking the record's byte is that
// code (ratioCodeIs) rather than computing it.
func (x *bmExpect) ratio(dl, tf uint32) {
	if x.off >= len(x.rec) || !ratioCodeIs(x.rec[x.off], dl, tf) {
		x.ok = false
		return
	}
	x.off++
}

// mixCode expects mix.code(v), checking the record's byte is that code
// (mixRef.codeIs) rather than computing it; mix.b is above 0.
func (x *bmExpect) mixCode(mix mixRef, v float64) {
	if x.off >= len(x.rec) || !mix.codeIs(x.rec[x.off], v) {
		x.ok = false
		return
	}
	x.off++
}

// blockData expects a block's data as encodeTextCols writes it: the low
// byte of each of its documents, then their frequencies as uvarints. It
// returns the data's length, or false at the first difference.
func (x *bmExpect) blockData(docs, freqs []uint32) (int, bool) {
	rec, start := x.rec, x.off
	if len(rec)-start < len(docs) {
		return 0, false
	}
	for k, doc := range docs {
		if rec[start+k] != byte(doc&(blockDocs-1)) {
			return 0, false
		}
	}
	off := start + len(docs)
	for _, tf := range freqs[:len(docs)] {
		if tf < 0x80 && off < len(rec) && rec[off] == byte(tf) {
			off++ // most frequencies: one byte
			continue
		}
		x.off = off
		if x.uvarint(uint64(tf)); !x.ok {
			return 0, false
		}
		off = x.off
	}
	x.off = off
	return off - start, true
}

// matchTextRecord reports whether rec is exactly the record
// bmEncoder.encodeText writes for a text or exact term's postings (docs
// and freqs, the same length) in a field of layout l whose field lengths
// are norms, byte for byte, without encoding it: Validate checks every
// term's record this way. A superblock table is compared with the one its
// entries give.
func matchTextRecord(rec []byte, l bmLayout, docs, freqs []uint32, norms normCol) bool {
	freqs = freqs[:len(docs)]
	tokenized := l.kind == bmTokenized
	mixed := tokenized && l.mix.on()
	if len(docs) == 1 {
		return matchOneRecord(rec, l, docs[0], freqs[0], norms)
	}
	h := decoder{b: rec}
	nBlocks, entriesLen := h.uvarint(), h.uvarint()
	var supers []byte
	tabled := h.err == nil && nBlocks <= uint64(len(docs)) && l.hasSupers(int(nBlocks))
	if tabled {
		supers = h.bytes(h.intv(len(rec)))
	}
	if h.err != nil || h.off != minimalHeader(nBlocks, entriesLen, tabled, len(supers)) || entriesLen > uint64(len(rec)-h.off) {
		return false
	}
	start := h.off
	entries := bmExpect{rec: rec[:start+int(entriesLen)], off: start, ok: true}
	data := bmExpect{rec: rec, off: start + int(entriesLen), ok: true}
	blocks := uint64(0)
	prev := uint32(0)
	for i := 0; i < len(docs) && entries.ok; {
		block, j, gap := nextDocBlock(docs, i, prev, blocks == 0)
		prev = block
		blocks++
		entries.uvarint(uint64(gap))
		dataLen, ok := data.blockData(docs[i:j], freqs[i:j])
		if !ok {
			return false
		}
		m := blockMinima(docs[i:j], freqs[i:j], norms, tokenized, mixed, l.mix)
		entries.byte1(tfCode(m.maxTF))
		if tokenized {
			entries.ratio(m.minDL, m.minTF)
		}
		if mixed {
			entries.mixCode(l.mix, m.minMix)
		}
		entries.byte1(byte(j - i - 1))
		entries.uvarint(uint64(dataLen))
		i = j
	}
	if !entries.ok || blocks != nBlocks || entries.off != len(entries.rec) || data.off != len(rec) {
		return false
	}
	if !tabled {
		return true
	}
	var buf [256]byte
	want, ok := appendSupers(buf[:0], rec[start:start+int(entriesLen)], int(nBlocks), l.boundBytes())
	return ok && bytes.Equal(want, supers)
}

// matchOneRecord is matchTextRecord for a term of one posting (doc, tf),
// most terms: it expects the bytes encodeOneRecord appends, one append
// after the other, the codes checked rather than computed.
func matchOneRecord(rec []byte, l bmLayout, doc, tf uint32, norms normCol) bool {
	dataLen := 1 + uvarintLen(uint64(tf))
	entriesLen := uvarintLen(uint64(doc>>BlockShift)) + 2 + uvarintLen(uint64(dataLen))
	tokenized := l.kind == bmTokenized
	if tokenized {
		entriesLen++
		if l.mix.on() {
			entriesLen++
		}
	}
	x := bmExpect{rec: rec, ok: true}
	x.byte1(1) // one block
	x.uvarint(uint64(entriesLen))
	x.uvarint(uint64(doc >> BlockShift))
	x.byte1(tfCode(tf))
	if tokenized {
		dl := norms.at(doc)
		x.ratio(dl, tf)
		if l.mix.on() {
			x.mixCode(l.mix, l.mix.value(dl, tf))
		}
	}
	x.byte1(0) // one document
	x.uvarint(uint64(dataLen))
	x.byte1(byte(doc & (blockDocs - 1)))
	x.uvarint(uint64(tf))
	return x.ok && x.off == len(rec)
}

// textMinima are what a text block's entry codes: its largest frequency,
// its smallest ratio of field length to frequency (minDL/minTF, as
// minRatio keeps it) and its smallest mix value (mixRef.value).
type textMinima struct {
	maxTF, minDL, minTF uint32
	minMix              float64
}

// blockMinima returns the minima of a block's postings as encodeTextCols
// computes them (the ratio and mix ones for a tokenized field, the mix
// one when mixed). With a valid reference (mixRef.valid: no value is NaN
// or -0, so min is order-free, and (A0 + B0·dl)/1 grows with dl) the
// postings of frequency 1 take one mix value, their smallest length's,
// instead of a division each.
func blockMinima(docs, freqs []uint32, norms normCol, tokenized, mixed bool, mix mixRef) textMinima {
	m := textMinima{minDL: math.MaxUint32, minTF: 1, minMix: math.Inf(1)}
	freqs = freqs[:len(docs)]
	switch {
	case !tokenized:
		for _, tf := range freqs {
			m.maxTF = max(m.maxTF, tf)
		}
	case !mixed:
		for k, doc := range docs {
			tf := freqs[k]
			m.maxTF = max(m.maxTF, tf)
			m.minDL, m.minTF = minRatio(m.minDL, m.minTF, norms.at(doc), tf)
		}
	case !mix.valid():
		for k, doc := range docs {
			tf, dl := freqs[k], norms.at(doc)
			m.maxTF = max(m.maxTF, tf)
			m.minDL, m.minTF = minRatio(m.minDL, m.minTF, dl, tf)
			m.minMix = min(m.minMix, mix.value(dl, tf))
		}
	default:
		minDL1, has1 := uint32(math.MaxUint32), false
		for k, doc := range docs {
			tf, dl := freqs[k], norms.at(doc)
			m.maxTF = max(m.maxTF, tf)
			m.minDL, m.minTF = minRatio(m.minDL, m.minTF, dl, tf)
			if tf == 1 {
				minDL1, has1 = min(minDL1, dl), true
			} else if v := mix.value(dl, tf); v < m.minMix {
				m.minMix = v
			}
		}
		if has1 {
			m.minMix = min(m.minMix, mix.value(minDL1, 1))
		}
	}
	return m
}

// minimalHeader returns the length of a record's header as an encoder
// writes it: uvarint(nBlocks), uvarint(entriesLen), and when tabled
// uvarint(the superblock table's length) and the table.
func minimalHeader(nBlocks, entriesLen uint64, tabled bool, superLen int) int {
	n := uvarintLen(nBlocks) + uvarintLen(entriesLen)
	if tabled {
		n += uvarintLen(uint64(superLen)) + superLen
	}
	return n
}
