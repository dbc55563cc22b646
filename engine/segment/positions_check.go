package segment

import (
	"encoding/binary"
	"math/bits"
)

// checkPositions checks the positions of document doc of frequency freq
// at pos[off:] as AppendPositions reads them (freq varints: a position
// below 2^32, then gaps >= 1 not passing it) without keeping them, and
// returns the offset after them, or -1 on corruption (see Err). Validate
// walks a term's documents a block at a time (nextBlock) and its positions
// section with it.
//
// A document of one position of one byte takes the first line, most
// others shortPositionsEnd, eight bytes at a time; whatever
// it does not accept (a zero byte, a varint of three bytes or more, a
// short section, a hostile frequency) is checked one varint at a time by
// checkPositionVarints, which also words every error.
func (p *Postings) checkPositions(off int, doc, freq uint32) int {
	if freq == 1 && uint(off) < uint(len(p.pos)) && p.pos[off] < 0x80 {
		return off + 1 // one position of one byte: well formed, any value
	}
	if end, ok := shortPositionsEnd(p.pos, off, freq); ok {
		return end
	}
	return p.checkPositionVarints(off, doc, freq)
}

// blockPositionsEnd returns the offset after the positions of a block's
// documents of frequencies freqs at pos[off:] and true when the
// positions of all of them, read as one run of their total count, take
// shortPositionsEnd: each document's then pass checkPositions in turn,
// and the run ends where the last document's does. The run's varints are
// one or two bytes long, each document's varints too; no byte past the
// run's first is zero, so no gap is 0; and the total stays below
// maxShortFreq, each document's too, so no position overflows. Anything
// else (a zero first position past the block's first document, most
// often) returns false, and checkPositions decides document by document.
func blockPositionsEnd(pos []byte, off int, freqs []uint32) (int, bool) {
	var total uint64
	for _, f := range freqs {
		total += uint64(f)
	}
	if total >= maxShortFreq {
		return 0, false
	}
	return shortPositionsEnd(pos, off, uint32(total))
}

// checkPositionVarints is checkPositions one position varint at a time,
// with eight one-byte gaps at a time where they come.
func (p *Postings) checkPositionVarints(off int, doc, freq uint32) int {
	if uint64(freq) > uint64(len(p.pos)-off) {
		p.corrupt("positions section too short for %d positions of doc %d", freq, doc)
		return -1
	}
	var last uint64
	for i := uint32(0); i < freq; i++ {
		// Eight one-byte gaps at a time (see eightGaps); anything else,
		// a corrupt byte included, takes the one-position step below.
		for i > 0 && freq-i >= 8 && off+8 <= len(p.pos) {
			sum, ok := eightGaps(binary.LittleEndian.Uint64(p.pos[off:]))
			if !ok || last+sum > 1<<32-1 {
				break
			}
			last += sum
			off += 8
			i += 8
		}
		if i == freq {
			break
		}
		v, next, ok := positionAt(p.pos, off)
		if !ok {
			p.corrupt("bad position varint of doc %d", doc)
			return -1
		}
		off = next
		if i > 0 {
			if v == 0 {
				p.corrupt("positions of doc %d not increasing", doc)
				return -1
			}
			v += last
		}
		if v > 1<<32-1 {
			p.corrupt("position %d of doc %d overflows", v, doc)
			return -1
		}
		last = v
	}
	return off
}

// eightGaps reads eight bytes (little-endian w) as eight position gaps
// and returns their sum, with ok false unless each is a one-byte varint
// (below 0x80) and not zero: exactly the bytes on which eight steps of
// checkPositions' one-byte path would each succeed.
func eightGaps(w uint64) (sum uint64, ok bool) {
	const high, ones = 0x8080808080808080, 0x0101010101010101
	if w&high != 0 || (w-ones)&^w&high != 0 { // a long varint, or a zero byte
		return 0, false
	}
	// Pairs of bytes summed in 16-bit lanes (each at most 254), then the
	// four lanes summed in the top one (at most 1016: no carry).
	const lanes = 0x00ff00ff00ff00ff
	s := w&lanes + w>>8&lanes
	return s * 0x0001000100010001 >> 48, true
}

// maxShortFreq bounds the frequencies shortPositionsEnd takes: fewer than
// 2^18 varints of at most two bytes (each below 2^14) sum below 2^32, so
// no position can overflow.
const maxShortFreq = 1 << 18

// shortPositionsEnd returns the offset after freq position varints at
// pos[off:] and true when every one of them is one or two bytes long,
// ends inside pos, and no byte of them but the first is zero, for
// 2 <= freq < maxShortFreq. Those positions pass checkPositionVarints
// with the same end: a varint of one or two bytes is well formed, a gap
// without a zero byte is at least 1 (its last byte is not zero), and the
// sum stays below 2^32 (maxShortFreq). Anything else returns false, and
// checkPositionVarints decides, so the fast path never accepts what the
// slow one refuses.
//
// It reads eight bytes at a time: a byte below 0x80 ends a varint, two
// bytes of 0x80 or more in a row make a varint of three bytes or more,
// and the usual test for a zero byte in a word, whose false hits can only
// lie above a true zero byte, so a word with a zero byte below the end
// always falls back.
func shortPositionsEnd(pos []byte, off int, freq uint32) (int, bool) {
	const high, ones = 0x8080808080808080, 0x0101010101010101
	if freq < 2 || freq >= maxShortFreq || off < 0 || off >= len(pos) {
		return 0, false
	}
	// The first position: one or two bytes, zero allowed.
	switch {
	case pos[off] < 0x80:
		off++
	case off+1 < len(pos) && pos[off+1] < 0x80:
		off += 2
	default:
		return 0, false
	}
	left := int(freq) - 1 // varint ends still to find
	carry := uint64(0)    // 0x80 when the byte before the word continues a varint
	for off < len(pos) {
		var w uint64
		if off+8 <= len(pos) {
			w = binary.LittleEndian.Uint64(pos[off:])
		} else {
			// Past the end every byte reads 0x80: it ends no varint, so
			// a run that needs it falls back.
			var tail [8]byte
			for i := range tail {
				tail[i] = 0x80
			}
			copy(tail[:], pos[off:])
			w = binary.LittleEndian.Uint64(tail[:])
		}
		n := bits.OnesCount64(^w & high)
		used, width := uint64(1<<64-1), 8
		if n >= left {
			// The left-th varint end is the last byte of the run.
			width = int(nthEnd[endBits(w)][left-1]) + 1
			if width < 8 {
				used = 1<<(8*width) - 1
			}
		}
		cont := w & high & used
		zero := (w - ones) &^ w & high & used
		// A continuation byte after one (in the word or across its
		// start), or a zero byte: one test.
		if cont&(cont<<8|carry)|zero != 0 {
			return 0, false
		}
		if n >= left {
			return off + width, true
		}
		left -= n
		carry = cont >> 56
		off += 8
	}
	return 0, false
}

// endBits returns the varint ends of the eight bytes of w (little-endian)
// as the bits of a byte: bit i is set when byte i is below 0x80. The
// multiplication gathers the eight flags, one per byte, in the top byte.
func endBits(w uint64) uint8 {
	const high = 0x8080808080808080
	return uint8((^w & high >> 7) * 0x0102040810204080 >> 56)
}

// nthEnd[m][k] is the index of the bit k+1 places up among the set bits
// of m (k from 0), 8 when m has no more: the byte of the (k+1)-th varint
// end of a word whose ends are m (endBits).
var nthEnd = func() (t [256][8]uint8) {
	for m := range t {
		k := 0
		for i := range 8 {
			if m>>i&1 != 0 {
				t[m][k] = uint8(i)
				k++
			}
		}
		for ; k < 8; k++ {
			t[m][k] = 8
		}
	}
	return t
}()
