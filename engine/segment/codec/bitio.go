package codec

import (
	"encoding/binary"
	"math/bits"
)

// BitWriter appends values of given bit widths LSB-first to a byte slice
// (the bit codes of docs sections: skip tables, interpolative doc ids,
// gamma frequencies).
type BitWriter struct {
	buf []byte
	acc uint64 // pending bits, the oldest lowest
	n   uint   // number of pending bits (< 8 between calls)
	len int    // bits written since the last align
}

// Write appends the low width bits of v (width <= 64).
func (w *BitWriter) Write(v uint64, width uint) {
	for width > 32 {
		w.Write(v&(1<<32-1), 32)
		v >>= 32
		width -= 32
	}
	if width == 0 {
		return
	}
	w.acc |= (v & (1<<width - 1)) << w.n
	w.n += width
	w.len += int(width)
	for w.n >= 8 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc >>= 8
		w.n -= 8
	}
}

// Len returns the number of bits written since the last Align.
func (w *BitWriter) Len() int { return w.len }

// Gamma appends v >= 1 in Elias gamma code, LSB-first: bits.Len32(v)-1 zero
// bits, a one bit, then the bits of v below its highest.
func (w *BitWriter) Gamma(v uint32) {
	l := uint(bits.Len32(v)) - 1
	w.Write(1<<l, l+1)
	w.Write(uint64(v), l)
}

// Align pads the pending bits with zeros to a byte boundary.
func (w *BitWriter) Align() {
	if w.n > 0 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc, w.n = 0, 0
	}
	w.len = 0
}

// BitReader reads what a BitWriter wrote; every read is bounds-checked.
type BitReader struct {
	src []byte
	pos uint64 // bit position
}

// NewBitReader returns a BitReader at the first bit of src.
func NewBitReader(src []byte) BitReader { return BitReader{src: src} }

// Pos returns the bit position of the next read.
func (r *BitReader) Pos() uint64 { return r.pos }

// Read returns the next width bits (width <= 64); ok is false past the end.
func (r *BitReader) Read(width uint) (uint64, bool) {
	if width == 0 {
		return 0, true
	}
	if r.pos+uint64(width) > uint64(len(r.src))*8 {
		return 0, false
	}
	var v uint64
	for got := uint(0); got < width; {
		take := min(width-got, 32)
		v |= uint64(r.peek32(r.pos)&(1<<take-1)) << got
		r.pos += uint64(take)
		got += take
	}
	return v, true
}

// peek32 returns 32 bits from bit position pos (bits past the end read as
// zero).
func (r *BitReader) peek32(pos uint64) uint32 { return uint32(r.peek56(pos)) }

// peek56 returns at least 56 bits from bit position pos in the low bits
// (bits past the end read as zero).
func (r *BitReader) peek56(pos uint64) uint64 {
	i := pos >> 3
	var w uint64
	if i+8 <= uint64(len(r.src)) {
		w = binary.LittleEndian.Uint64(r.src[i:])
	} else {
		for k := uint64(0); i+k < uint64(len(r.src)) && k < 8; k++ {
			w |= uint64(r.src[i+k]) << (8 * k)
		}
	}
	return w >> (pos & 7)
}

// Gamma reads an Elias gamma code (BitWriter.gamma); ok is false past the
// end or for a code longer than 32 bits.
func (r *BitReader) Gamma() (uint32, bool) {
	limit := uint64(len(r.src)) * 8
	if r.pos >= limit {
		return 0, false
	}
	w := r.peek56(r.pos)
	z := uint(bits.TrailingZeros64(w))
	if z >= 32 || r.pos+uint64(2*z+1) > limit {
		return 0, false
	}
	if 2*z+1 <= 56 {
		r.pos += uint64(2*z + 1)
		return uint32(1<<z | (w>>(z+1))&(1<<z-1)), true
	}
	r.pos += uint64(z + 1)
	lo, ok := r.Read(z)
	return uint32(1<<z | lo), ok
}

// At reads width bits at bit position pos without moving; ok is false
// past the end.
func (r *BitReader) At(pos uint64, width uint) (uint64, bool) {
	save := r.pos
	r.pos = pos
	v, ok := r.Read(width)
	r.pos = save
	return v, ok
}

// AppendInterp appends the strictly increasing docs, all within [lo, hi],
// in binary interpolative code (Moffat and Stuiver): the middle document
// in the bits that its possible range needs, then each half within the
// range the middle leaves it. Runs of consecutive documents cost no bits.
func AppendInterp(w *BitWriter, docs []uint32, lo, hi uint32) {
	for len(docs) > 0 {
		n := uint32(len(docs))
		m := n / 2
		a, b := lo+m, hi-(n-1-m)
		v := docs[m]
		w.Write(uint64(v-a), uint(bits.Len32(b-a)))
		if m > 0 {
			AppendInterp(w, docs[:m], lo, v-1)
		}
		docs, lo = docs[m+1:], v+1
	}
}

// interpBits returns the number of bits AppendInterp writes for docs
// within [lo, hi], without writing them.
func interpBits(docs []uint32, lo, hi uint32) int {
	n := 0
	for len(docs) > 0 {
		k := uint32(len(docs))
		m := k / 2
		a, b := lo+m, hi-(k-1-m)
		v := docs[m]
		n += bits.Len32(b - a)
		if m > 0 {
			n += interpBits(docs[:m], lo, v-1)
		}
		docs, lo = docs[m+1:], v+1
	}
	return n
}

// gapsGammaBits returns the number of bits appendGapsGamma writes for docs
// within [lo, hi], without writing them.
func gapsGammaBits(docs []uint32, lo, hi uint32) int {
	n := bits.Len32(hi - lo - (uint32(len(docs)) - 1))
	for i := 1; i < len(docs); i++ {
		n += 2*bits.Len32(docs[i]-docs[i-1]) - 1
	}
	return n
}

// readInterp decodes len(out) documents written by AppendInterp for the
// range [lo, hi]; ok is false when the bits run out, the range cannot hold
// them or a value falls outside its range, so decoded documents are always
// strictly increasing and within [lo, hi].
func readInterp(r *BitReader, out []uint32, lo, hi int64) bool {
	limit := uint64(len(r.src)) * 8
	for len(out) > 0 {
		n := int64(len(out))
		if hi-lo+1 <= n {
			if hi-lo+1 < n {
				return false
			}
			for i := range out { // the range is full: no bits
				out[i] = uint32(lo + int64(i))
			}
			return true
		}
		m := n / 2
		a, b := lo+m, hi-(n-1-m)
		v := a
		if span := uint64(b - a); span != 0 {
			w := uint(bits.Len64(span)) // <= 32: doc ids are uint32
			if r.pos+uint64(w) > limit {
				return false
			}
			x := uint64(r.peek32(r.pos)) & (1<<w - 1)
			r.pos += uint64(w)
			if x > span {
				return false
			}
			v += int64(x)
		}
		out[m] = uint32(v)
		if m > 0 && !readInterp(r, out[:m], lo, v-1) {
			return false
		}
		out, lo = out[m+1:], v+1
	}
	return true
}

// appendGapsGamma appends the strictly increasing docs, all within [lo,
// hi]: the first as an offset from lo in the bits its range needs, then
// each gap (>= 1) in Elias gamma code. It suits short lists with small
// gaps, where the interpolative code's outer levels cost the most.
func appendGapsGamma(w *BitWriter, docs []uint32, lo, hi uint32) {
	n := uint32(len(docs))
	w.Write(uint64(docs[0]-lo), uint(bits.Len32(hi-lo-(n-1))))
	for i := 1; i < len(docs); i++ {
		w.Gamma(docs[i] - docs[i-1])
	}
}

// readGapsGamma decodes what appendGapsGamma wrote; ok is false when the
// bits run out or a document falls outside [lo, hi].
func readGapsGamma(r *BitReader, out []uint32, lo, hi int64) bool {
	n := int64(len(out))
	if hi-lo+1 < n {
		return false
	}
	x, ok := r.Read(uint(bits.Len64(uint64(hi - lo - (n - 1)))))
	if !ok || int64(x) > hi-lo-(n-1) {
		return false
	}
	prev := lo + int64(x)
	out[0] = uint32(prev)
	for i := 1; i < len(out); i++ {
		g, ok := r.Gamma()
		if !ok || prev+int64(g) > hi {
			return false
		}
		prev += int64(g)
		out[i] = uint32(prev)
	}
	return true
}

// AppendTailDocs appends a tail's doc ids (engine/segment/doc.go, "post"): for two or
// more, a selector bit, then the interpolative code (0) or the gamma gaps
// (1), whichever is shorter; a single doc in the interpolative code. The
// two codes' lengths are counted (interpBits, gapsGammaBits), only the
// shorter is written.
func AppendTailDocs(w *BitWriter, docs []uint32, lo, hi uint32) {
	if len(docs) >= 2 {
		if gapsGammaBits(docs, lo, hi) < interpBits(docs, lo, hi) {
			w.Write(1, 1)
			appendGapsGamma(w, docs, lo, hi)
			return
		}
		w.Write(0, 1)
	}
	AppendInterp(w, docs, lo, hi)
}

// ReadTailDocs decodes what AppendTailDocs wrote (see readInterp).
func ReadTailDocs(r *BitReader, out []uint32, lo, hi int64) bool {
	if len(out) >= 2 {
		sel, ok := r.Read(1)
		if !ok {
			return false
		}
		if sel == 1 {
			return readGapsGamma(r, out, lo, hi)
		}
	}
	return readInterp(r, out, lo, hi)
}
