package codec

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// BlockSize is the number of values in one bit-packed block of a docs
// section (see engine/segment/doc.go, "post").
const BlockSize = 128

// maxExceptions bounds the exceptions of one packed block.
const maxExceptions = BlockSize - 1

// ErrPFor is returned by UnpackPFor for bytes that are not a packed block.
var ErrPFor = errors.New("bad packed block")

// AppendPFor appends vals (1 to BlockSize values) as one patched
// frame-of-reference block: u8 bit width b, u8 exception count e, the low b
// bits of every value packed LSB-first into ceil(len(vals)*b/8) bytes, then
// e exceptions, each u8 index and uvarint(value >> b) (non-zero). b
// minimises the size.
func AppendPFor(dst []byte, vals []uint32) []byte {
	var hist [33]int // values by bit length
	for _, v := range vals {
		hist[bits.Len32(v)]++
	}
	n := len(vals)
	best, bestCost := 32, (n*32+7)/8
	above, extra := 0, 0 // for candidate b: values longer than b, their varint bytes
	for b := 32; b >= 0; b-- {
		if b < 32 {
			// Lower b from b+1: values of length b+1 become exceptions and
			// every exception's high part grows by one bit.
			above += hist[b+1]
			extra = 0
			for l := b + 1; l <= 32; l++ {
				extra += hist[l] * (1 + (l-b+6)/7)
			}
		}
		if above > min(maxExceptions, n-1) {
			break
		}
		if cost := (n*b+7)/8 + extra; cost < bestCost || (cost == bestCost && b < best) {
			best, bestCost = b, cost
		}
	}
	b := best
	dst = append(dst, byte(b), 0)
	nexcPos := len(dst) - 1
	dst = packBits(dst, vals, b)
	nexc := 0
	for i, v := range vals {
		if bits.Len32(v) > b {
			dst = append(dst, byte(i))
			dst = binary.AppendUvarint(dst, uint64(v>>b))
			nexc++
		}
	}
	dst[nexcPos] = byte(nexc)
	return dst
}

// packBits appends the low b bits of every value, LSB-first, the last
// byte padded with zero bits.
func packBits(dst []byte, vals []uint32, b int) []byte {
	if b == 0 {
		return dst
	}
	mask := uint64(1)<<b - 1
	var acc uint64
	n := 0
	for _, v := range vals {
		acc |= (uint64(v) & mask) << n
		n += b
		for n >= 8 {
			dst = append(dst, byte(acc))
			acc >>= 8
			n -= 8
		}
	}
	if n > 0 {
		dst = append(dst, byte(acc))
	}
	return dst
}

// UnpackPFor decodes one block of len(out) values written by AppendPFor
// from src[off:] into out and returns the offset after it. Every length is
// checked against src; an exception must name a distinct index below
// len(out) and leave a 32-bit value.
func UnpackPFor(src []byte, off int, out []uint32) (int, error) {
	if len(src)-off < 2 {
		return off, ErrPFor
	}
	b, nexc := int(src[off]), int(src[off+1])
	off += 2
	if b > 32 || nexc > maxExceptions {
		return off, ErrPFor
	}
	n := (len(out)*b + 7) / 8
	if len(src)-off < n || nexc >= len(out) {
		return off, ErrPFor
	}
	unpackBits(src[off:], out, b)
	off += n
	var seen [BlockSize / 64]uint64
	for k := 0; k < nexc; k++ {
		if off >= len(src) {
			return off, ErrPFor
		}
		i := int(src[off])
		off++
		if i >= len(out) || seen[i/64]&(1<<(i%64)) != 0 {
			return off, ErrPFor
		}
		seen[i/64] |= 1 << (i % 64)
		hi, next, ok := UvarintAt(src, off)
		if !ok || hi == 0 || b == 32 || hi>>(32-b) != 0 {
			return off, ErrPFor
		}
		off = next
		out[i] |= uint32(hi) << b
	}
	return off, nil
}

// unpackBits decodes len(out) values of b bits from the first
// ceil(len(out)*b/8) bytes of src (which must hold them); bytes past them
// may be read but do not change the result.
func unpackBits(src []byte, out []uint32, b int) {
	if b == 0 {
		clear(out)
		return
	}
	mask := uint64(1)<<b - 1
	bit, i := 0, 0
	// Fast path: one unaligned 8-byte load per value (b+7 <= 39 bits).
	for ; i < len(out) && bit>>3+8 <= len(src); i++ {
		w := binary.LittleEndian.Uint64(src[bit>>3:])
		out[i] = uint32(w >> (bit & 7) & mask)
		bit += b
	}
	for ; i < len(out); i++ {
		var w uint64
		for k, j := 0, bit>>3; k < 5 && j < len(src); k, j = k+1, j+1 {
			w |= uint64(src[j]) << (8 * k)
		}
		out[i] = uint32(w >> (bit & 7) & mask)
		bit += b
	}
}

// PForSize returns the size of the block of n values at src[off:] without
// decoding its values, or ok=false when it does not fit.
func PForSize(src []byte, off, n int) (int, bool) {
	if len(src)-off < 2 {
		return 0, false
	}
	b, nexc := int(src[off]), int(src[off+1])
	p := off + 2 + (n*b+7)/8
	if b > 32 || p > len(src) {
		return 0, false
	}
	for k := 0; k < nexc; k++ {
		var ok bool
		if _, p, ok = UvarintAt(src, p+1); !ok {
			return 0, false
		}
	}
	return p - off, true
}
