package codec

import "math/bits"

// InterpMarker, in place of a packed block's bit width, marks a full
// block's doc ids coded by interpolation (AppendInterpBlock).
const InterpMarker = 0xFF

// AppendInterpBlock appends the BlockSize doc ids of a full block after
// doc prev (-1 for none) as: the marker byte, then a bit string of
// gamma(last - prev - (BlockSize-1)) for the block's last doc, the other
// documents in binary interpolative code within [prev+1, last-1], padded
// to a byte. BP's clusters make it shorter than the packed gaps.
func AppendInterpBlock(dst []byte, docs []uint32, prev int64) []byte {
	dst = append(dst, InterpMarker)
	w := BitWriter{buf: dst}
	last := docs[len(docs)-1]
	w.Gamma(uint32(int64(last) - prev - (BlockSize - 1)))
	AppendInterp(&w, docs[:len(docs)-1], uint32(prev+1), last-1)
	w.Align()
	return w.buf
}

// interpBlockLen returns the length in bytes of what AppendInterpBlock
// appends for docs after prev, without encoding them.
func interpBlockLen(docs []uint32, prev int64) int {
	last := docs[len(docs)-1]
	n := 2*bits.Len32(uint32(int64(last)-prev-(BlockSize-1))) - 1
	n += interpBits(docs[:len(docs)-1], uint32(prev+1), last-1)
	return 1 + (n+7)/8
}

// ReadInterpBlock decodes a block written by AppendInterpBlock at
// src[off:] into out (BlockSize doc ids) and returns the offset after it;
// ok is false when the bits run out or a doc id is not in (prev, numDocs).
func ReadInterpBlock(src []byte, off int, prev int64, numDocs uint32, out []uint32) (int, bool) {
	if off >= len(src) || src[off] != InterpMarker {
		return off, false
	}
	r := BitReader{src: src[off+1:]}
	g, ok := r.Gamma()
	if !ok {
		return off, false
	}
	last := prev + (BlockSize - 1) + int64(g)
	if last >= int64(numDocs) || !readInterp(&r, out[:len(out)-1], prev+1, last-1) {
		return off, false
	}
	out[len(out)-1] = uint32(last)
	return off + 1 + int((r.pos+7)/8), true
}
