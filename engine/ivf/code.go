package ivf

import "math/bits"

// QuantizerSign names the only quantizer: bit i of a code is set when
// component i of the vector is > 0. Files record it so that codes made by
// another rule are refused, never compared.
const QuantizerSign = 1

// Words returns the number of 64-bit words of the code of a dims-vector.
func Words(dims int) int { return (dims + 63) / 64 }

// Encode writes v's sign code into dst, which has Words(len(v)) words.
func Encode(dst []uint64, v []float32) {
	clear(dst)
	for i, x := range v {
		if x > 0 {
			dst[i>>6] |= 1 << (uint(i) & 63)
		}
	}
}

// EncodeAll returns the concatenated codes of vectors of dims components
// stored back to back in vals.
func EncodeAll(vals []float32, dims int) []uint64 {
	w := Words(dims)
	n := len(vals) / dims
	out := make([]uint64, n*w)
	for i := 0; i < n; i++ {
		Encode(out[i*w:(i+1)*w], vals[i*dims:(i+1)*dims])
	}
	return out
}

// Hamming returns the number of differing bits of two codes of equal length.
func Hamming(a, b []uint64) int {
	b = b[:len(a)]
	d := 0
	for i, x := range a {
		d += bits.OnesCount64(x ^ b[i])
	}
	return d
}

// hamming4 is Hamming for 4-word (256-bit) codes, the common width.
func hamming4(a, b []uint64) int {
	a, b = a[:4], b[:4]
	return bits.OnesCount64(a[0]^b[0]) + bits.OnesCount64(a[1]^b[1]) +
		bits.OnesCount64(a[2]^b[2]) + bits.OnesCount64(a[3]^b[3])
}
