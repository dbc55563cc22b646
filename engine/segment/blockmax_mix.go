package segment

import "math"

// The joint bound of a tokenized block (format version 3). A block's
// frequency and ratio codes bound 1/tf and dl/tf separately, each by its
// best document, so the bound they give together can belong to no
// document: the block of a frequent term nearly always holds one document
// with a high frequency and another, short one. For such terms nearly
// every block then bounds at the term's largest possible score, and a
// top-k search visits hundreds of blocks to find ten documents.
//
// The mix code bounds the two together: it is the code of the block's
// smallest (A0 + B0·dl)/tf, on the ratio codes' log scale in units of B0,
// rounded down. A0 and B0 are the field's reference BM25 coefficients,
// kept in the block-max directory: the engine's k1·(1-b) and k1·b over
// the segment's average field length, the coefficients a search of the
// segment alone uses. A search with coefficients A and B bounds A/tf +
// B·dl/tf by M + (A-A0)/maxTF + (B-B0)·minRatio when A >= A0 and B >= B0,
// and by min(A/A0, B/B0)·M otherwise, where M is the code's value; it
// takes the larger of that and the separate codes' bound.

// mixK1 and mixB are the BM25 parameters of the engine's text scoring
// (search.bm25K1 and search.bm25B), from which a field's reference
// coefficients are derived. A search with other parameters still gets
// valid bounds, only looser ones.
const (
	mixK1 = 1.2
	mixB  = 0.75
)

// mixRef is a tokenized field's reference coefficients A0 and B0; the
// zero value stands for a field without mix codes (format version 2).
type mixRef struct {
	a, b float64
}

// on reports whether the field's entries carry mix codes.
func (r mixRef) on() bool { return r.b > 0 }

// valid reports whether the coefficients are finite, A0 at least 0 and
// B0 above 0, as a reader requires of a field's: no posting's value
// (mixRef.value) is then NaN or -0.
func (r mixRef) valid() bool {
	return r.a >= 0 && r.b > 0 && r.a <= math.MaxFloat64 && r.b <= math.MaxFloat64
}

// mixRefOf returns the reference coefficients of a tokenized field whose
// documents have the given lengths (0 for documents without the field).
func mixRefOf(norms []uint32) mixRef {
	var total, docs uint64
	for _, n := range norms {
		if n > 0 {
			total += uint64(n)
			docs++
		}
	}
	avg := 1.0
	if docs > 0 {
		avg = float64(total) / float64(docs)
	}
	return mixRef{a: mixK1 * (1 - mixB), b: mixK1 * mixB / avg}
}

// fieldMix returns the reference coefficients of a tokenized field's mix
// codes: those a merge encoded its records with, else those of the
// builder's field lengths. Other fields have none.
func fieldMix(fb *fieldBuilder, kind byte) mixRef {
	if kind != bmTokenized {
		return mixRef{}
	}
	if fb.index.bmMerged {
		return fb.index.bmMix
	}
	return mixRefOf(fb.index.norms)
}

// value returns (A0 + B0·dl)/tf of one posting, 0 for a zero frequency.
func (r mixRef) value(dl, tf uint32) float64 {
	if tf == 0 {
		return 0
	}
	return (r.a + r.b*float64(dl)) / float64(tf)
}

// code returns the largest code whose bound (MixBound) is at most v: a
// binary search of the tabulated bounds (r.b·RatioBound(c) grows with c,
// and is 0 for code 0), eight steps and no logarithm, since merges and
// validation call it for every block and every one-document term.
func (r mixRef) code(v float64) uint8 {
	if !(v > 0) {
		return 0
	}
	lo, hi := 0, len(ratioBounds) // r.b·ratioBounds[lo] <= v; hi is past the answer
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if r.b*ratioBounds[mid] <= v {
			lo = mid
		} else {
			hi = mid
		}
	}
	return uint8(lo)
}

// codeIs reports whether c is r.code(v), with two comparisons instead of
// code's search, for r.b above 0. The code is the largest whose bound
// r.b·ratioBounds[c] is at most v (0 unless v is above 0), and the bounds
// never decrease with c, so c is it when its bound is at most v (code 0's
// always counts, as in code) and the next code's is not.
func (r mixRef) codeIs(c uint8, v float64) bool {
	if !(v > 0) {
		return c == 0
	}
	return (c == 0 || r.b*ratioBounds[c] <= v) && (c == 255 || !(r.b*ratioBounds[c+1] <= v))
}

// MixBound returns the lower bound of (A0 + B0·dl)/tf that mix code c
// stands for in a field whose B0 is refB: refB·RatioBound(c).
func MixBound(c uint8, refB float64) float64 { return refB * ratioBounds[c] }

// MixRef returns the reference coefficients A0 and B0 of the record's
// mix codes; ok is false when its entries have none (exact and sparse
// fields, and tokenized fields of format version 2).
func (t *BlockTerm) MixRef() (a, b float64, ok bool) {
	return t.mix.a, t.mix.b, t.mix.on()
}
