package segment

import (
	"math"
	"math/bits"
)

// The bound codes of block entries (blockmax.go): a frequency code, a
// ratio code on a log scale, and sparse weight levels.

// InvTFBound returns a lower bound of 1/tf for the documents of a block
// whose frequency code is c.
func InvTFBound(c uint8) float64 {
	if c == tfCodeSaturated || c == 0 {
		return 0
	}
	return 1 / float64(c)
}

// RatioBound returns a lower bound of field length / tf for the documents
// of a block whose ratio code is c: 0 for code 0, else 2^((c-1)/16).
func RatioBound(c uint8) float64 {
	if c == 0 {
		return 0
	}
	return math.Exp2(float64(c-1) / 16)
}

// ratioBounds tabulates RatioBound for ratioCode.
var ratioBounds = func() (t [256]float64) {
	for c := range t {
		t[c] = RatioBound(uint8(c))
	}
	return t
}()

// intRatioCodes tabulates ratioCode(dl, 1) for small dl: a frequency of 1
// is the common case.
var intRatioCodes = func() (t [4096]uint8) {
	for dl := range t {
		t[dl] = ratioCodeSearch(uint32(dl), 1)
	}
	return t
}()

// ratioCode returns the largest code whose RatioBound is at most dl/tf.
func ratioCode(dl, tf uint32) uint8 {
	if tf == 1 && dl < uint32(len(intRatioCodes)) {
		return intRatioCodes[dl]
	}
	return ratioCodeSearch(dl, tf)
}

// ratioCodeSearch is ratioCode by a binary search of the tabulated bounds,
// which increase with the code. The search starts from r's binary
// exponent e = floor(log2(dl/tf)), exact in integers: RatioBound(1+16e)
// is 2^e, so the code lies in [1+16e, 16+16e], four steps.
func ratioCodeSearch(dl, tf uint32) uint8 {
	r, lo, hi := ratioSearchRange(dl, tf)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if ratioBounds[mid] <= r {
			lo = mid
		} else {
			hi = mid
		}
	}
	return uint8(lo)
}

// ratioSearchRange returns the ratio r = dl/tf and the codes [lo, hi)
// where ratioCodeSearch searches r's code: ratioBounds[lo] <= r (without
// comparing) and the code is below hi. A single code (0 below ratio 1,
// 255 from ratio 2^16 up) is the range [c, c+1).
func ratioSearchRange(dl, tf uint32) (r float64, lo, hi int) {
	if tf == 0 || dl < tf {
		return 0, 0, 1
	}
	r = float64(dl) / float64(tf)
	e := bits.Len32(dl/tf) - 1
	lo = 1 + 16*e // ratioBounds[lo] = 2^e <= r
	if lo >= 255 {
		return r, 255, 256
	}
	return r, lo, min(lo+16, 256) // past the answer
}

// ratioCodeIs reports whether c is ratioCode(dl, tf), with at most two
// comparisons instead of ratioCodeSearch's search: the code is the last
// of ratioSearchRange's range whose bound is at most r (its first always
// counts), and the bounds increase with the code, so c is it when it lies
// in the range, its bound is at most r and the next code's in the range
// is not.
func ratioCodeIs(c uint8, dl, tf uint32) bool {
	if tf == 1 && dl < uint32(len(intRatioCodes)) {
		return intRatioCodes[dl] == c
	}
	r, lo, hi := ratioSearchRange(dl, tf)
	x := int(c)
	return x >= lo && x < hi && (x == lo || ratioBounds[x] <= r) && (x+1 == hi || !(ratioBounds[x+1] <= r))
}

// tfCode returns the frequency code of a block whose largest frequency is tf.
func tfCode(tf uint32) uint8 { return uint8(min(tf, tfCodeSaturated)) }

// WeightBound returns the weight that level l (-127..127) stands for on the
// scale of a dimension whose largest absolute weight is scale.
func WeightBound(l int8, scale float32) float64 {
	return float64(l) * float64(scale) / 127
}

// weightLevels returns the smallest level whose bound is >= hi and the
// largest level whose bound is <= lo.
func weightLevels(hi, lo, scale float32) (up, down int8) {
	if scale == 0 {
		return 0, 0
	}
	u := int(math.Ceil(float64(hi) / float64(scale) * 127))
	d := int(math.Floor(float64(lo) / float64(scale) * 127))
	u, d = min(max(u, -127), 127), min(max(d, -127), 127)
	for u < 127 && WeightBound(int8(u), scale) < float64(hi) {
		u++
	}
	for d > -127 && WeightBound(int8(d), scale) > float64(lo) {
		d--
	}
	return int8(u), int8(d)
}
