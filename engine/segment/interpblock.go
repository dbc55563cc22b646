package segment

import "math/bits"

// interpMarker, in place of a packed block's bit width, marks a full
// block's doc ids coded by interpolation (appendInterpBlock).
const interpMarker = 0xFF

// appendInterpBlock appends the pforBlock doc ids of a full block after
// doc prev (-1 for none) as: the marker byte, then a bit string of
// gamma(last - prev - (pforBlock-1)) for the block's last doc, the other
// documents in binary interpolative code within [prev+1, last-1], padded
// to a byte. BP's clusters make it shorter than the packed gaps.
func appendInterpBlock(dst []byte, docs []uint32, prev int64) []byte {
	dst = append(dst, interpMarker)
	w := bitWriter{buf: dst}
	last := docs[len(docs)-1]
	w.gamma(uint32(int64(last) - prev - (pforBlock - 1)))
	appendInterp(&w, docs[:len(docs)-1], uint32(prev+1), last-1)
	w.align()
	return w.buf
}

// interpBlockLen returns the length in bytes of what appendInterpBlock
// appends for docs after prev, without encoding them.
func interpBlockLen(docs []uint32, prev int64) int {
	last := docs[len(docs)-1]
	n := 2*bits.Len32(uint32(int64(last)-prev-(pforBlock-1))) - 1
	n += interpBits(docs[:len(docs)-1], uint32(prev+1), last-1)
	return 1 + (n+7)/8
}

// readInterpBlock decodes a block written by appendInterpBlock at
// src[off:] into out (pforBlock doc ids) and returns the offset after it;
// ok is false when the bits run out or a doc id is not in (prev, numDocs).
func readInterpBlock(src []byte, off int, prev int64, numDocs uint32, out []uint32) (int, bool) {
	if off >= len(src) || src[off] != interpMarker {
		return off, false
	}
	r := bitReader{src: src[off+1:]}
	g, ok := r.gamma()
	if !ok {
		return off, false
	}
	last := prev + (pforBlock - 1) + int64(g)
	if last >= int64(numDocs) || !readInterp(&r, out[:len(out)-1], prev+1, last-1) {
		return off, false
	}
	out[len(out)-1] = uint32(last)
	return off + 1 + int((r.pos+7)/8), true
}
