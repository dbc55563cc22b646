package search

import "math"

// BM25 parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// idf is BM25's inverse document frequency of a term held by df of n
// documents. df counts deleted documents too (postings do not know about
// deletions), so it is capped at n.
func idf(n, df uint64) float64 {
	df = min(df, n)
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// bm25 scores one term or phrase in one field: weight is idf*(k1+1) and
// lengthNorm turns a field length into k1*(1-b+b*len/avgLen).
type bm25 struct {
	// weight is idf*(k1+1), the idf summed over a phrase's terms.
	weight float64
	// base is k1*(1-b), the length-independent part of the norm.
	base float64
	// perTerm is k1*b/avgLen, the norm's factor of the field length; zero
	// for exact fields, which have no length.
	perTerm float64
}

// newBM25 returns the scorer of a term or phrase with the given summed idf
// in a field whose average length is avgLen; avgLen 0 means an exact field,
// scored without length normalization.
func newBM25(idfSum, avgLen float64) bm25 {
	s := bm25{weight: idfSum * (bm25K1 + 1)}
	if avgLen > 0 {
		s.base = bm25K1 * (1 - bm25B)
		s.perTerm = bm25K1 * bm25B / avgLen
	} else {
		s.base = bm25K1
	}
	return s
}

// score returns the contribution of tf occurrences in a field of length dl.
func (s *bm25) score(tf, dl uint32) float64 {
	f := float64(tf)
	return s.weight * f / (f + s.base + s.perTerm*float64(dl))
}

// avgFieldLength returns a tokenized field's average length over the
// views, 1 when no document has the field.
func avgFieldLength(views []SegmentView, field int) float64 {
	var total uint64
	var docs uint64
	for i := range views {
		t, d := views[i].Segment.FieldStats(field)
		total += t
		docs += uint64(d)
	}
	if docs == 0 || total == 0 {
		return 1
	}
	return float64(total) / float64(docs)
}
