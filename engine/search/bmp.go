package search

import (
	"context"
	"fmt"

	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segment"
)

// Block-max pruning (BMP, Mallia, Suel and Tonellotto, SIGIR 2024) for
// disjunctive text queries and exact sparse vector queries (the ones
// Seismic does not take; rank decides). The segment's
// block-max file (segment.BlockTerm) cuts every postings list into blocks
// of 64 doc ids, each with a bound of the term's contribution. A query
// sums its terms' bounds per block, visits blocks best bound first, scores
// a visited block exactly from its block-partitioned postings, and stops
// at the first block whose bound is below the k-th best score so far. The
// scores are computed exactly as the exhaustive evaluator computes them
// (same scorers, same order of additions), so the top-k is the same: ids,
// scores and tie order.
//
// What it gives up is the exact count of matches: skipped blocks are never
// read. That is why it runs only when the request allows it (see
// Request.TotalHitsThreshold) and the query's match count is known to reach
// the threshold from document frequencies alone.

// blockMaxSegment is what BMP needs of a segment beyond Segment;
// *segment.Reader has it.
type blockMaxSegment interface {
	HasBlockMax() bool
	BlockMaxTerm(field int, term string) (*segment.BlockTerm, error)
	BlockMaxDim(field int, dim string) (*segment.BlockTerm, error)
}

var _ blockMaxSegment = (*segment.Reader)(nil)

// boundSlack widens every block bound relative to the summed magnitude of
// its terms, so that floating-point rounding of the exact scores can never
// lift a document above its block's bound.
const boundSlack = 1e-9

// invTF and ratio tabulate segment.InvTFBound and segment.RatioBound.
var invTF, ratio = func() (a, b [256]float64) {
	for c := range a {
		a[c], b[c] = segment.InvTFBound(uint8(c)), segment.RatioBound(uint8(c))
	}
	return a, b
}()

// bmpTerm is one scored term of a BMP query: a (clause, field) pair of a
// text query or a dimension of a sparse query.
type bmpTerm struct {
	// field is the searched field's ordinal.
	field int
	// scorer scores a text term.
	scorer bm25
	// weight is a sparse dimension's query weight.
	weight float64
	// recs holds, per view, the term's block-max record.
	recs []*segment.BlockTerm
	// mix holds, per view, how a text term's mix codes bound it (empty
	// for sparse terms).
	mix []termMix
}

// termMix is how a text term's mix codes bound its contribution in one
// view (segment/blockmax_mix.go). A block's code bounds A0/tf + B0·dl/tf
// jointly over its documents, where A0 and B0 are the field's reference
// coefficients; the query's A and B (scorer.base and scorer.perTerm)
// differ from them when the view's statistics are not the whole
// snapshot's. When A >= A0 and B >= B0 the excesses dA and dB are added
// times the block's separate bounds of 1/tf and dl/tf; otherwise the
// code's value is scaled by min(A/A0, B/B0).
type termMix struct {
	// refB is B0, 0 when the view's record has no mix codes.
	refB     float64
	additive bool
	dA, dB   float64
	scale    float64
}

// newTermMix returns the mix bound of a term scored by s in a view whose
// reference coefficients are a0 and b0 (b0 > 0).
func newTermMix(s *bm25, a0, b0 float64) termMix {
	if s.base >= a0 && s.perTerm >= b0 {
		return termMix{refB: b0, additive: true, dA: s.base - a0, dB: s.perTerm - b0}
	}
	scale := s.perTerm / b0
	if a0 > 0 {
		scale = min(scale, s.base/a0)
	}
	return termMix{refB: b0, scale: scale}
}

// bound returns an upper bound of the term's contribution to the score
// of every document of block e of view vi.
func (t *bmpTerm) bound(vi int, rec *segment.BlockTerm, e *segment.BlockEntry) float64 {
	if rec.Sparse() {
		// A document of the block without the dimension gets 0 from it, so
		// a negative product bounds only a block the dimension fills.
		var b float64
		if t.weight >= 0 {
			b = t.weight * segment.WeightBound(int8(e.Hi), rec.Scale())
		} else {
			b = t.weight * segment.WeightBound(int8(e.Lo), rec.Scale())
		}
		if e.Count < 1<<segment.BlockShift {
			b = max(b, 0)
		}
		return b
	}
	s := &t.scorer
	m := s.base*invTF[e.Hi] + s.perTerm*ratio[e.Lo]
	if mx := &t.mix[vi]; mx.refB > 0 {
		v := segment.MixBound(e.Mix, mx.refB)
		if mx.additive {
			v += mx.dA*invTF[e.Hi] + mx.dB*ratio[e.Lo]
		} else {
			v *= mx.scale
		}
		m = max(m, v)
	}
	return s.weight / (1 + m)
}

// bmpQuery is a query ready for BMP.
type bmpQuery struct {
	terms  []bmpTerm
	sparse bool
	// atLeast is a lower bound of the number of live matches, from
	// document frequencies and deletion counts.
	atLeast int
	// decoded is the number of block entries the last run decoded.
	decoded int
}

// openBMP opens the block-max records of the query's terms; ok is false
// when a view has no block maxima.
func openBMP(views []SegmentView, terms []bmpTerm, lookup func(bs blockMaxSegment, t *bmpTerm, i int) (*segment.BlockTerm, error)) (bool, error) {
	for vi := range views {
		bs, ok := views[vi].Segment.(blockMaxSegment)
		if !ok || !bs.HasBlockMax() {
			return false, nil
		}
		for i := range terms {
			t := &terms[i]
			if t.recs == nil {
				t.recs = make([]*segment.BlockTerm, len(views))
			}
			rec, err := lookup(bs, t, i)
			if err != nil {
				return false, fmt.Errorf("search: segment view %d: block maxima: %w", vi, err)
			}
			t.recs[vi] = rec
		}
	}
	return true, nil
}

// lowerBound returns, summed over views, the largest live document
// frequency a view's terms guarantee.
func lowerBound(views []SegmentView, terms []bmpTerm) int {
	total := 0
	for vi := range views {
		deleted := uint64(views[vi].Segment.NumDocs()) - views[vi].liveDocs()
		var best uint64
		for i := range terms {
			if rec := terms[i].recs[vi]; rec != nil && uint64(rec.DocFreq()) > deleted {
				best = max(best, uint64(rec.DocFreq())-deleted)
			}
		}
		total += int(best)
	}
	return total
}

// planBMPText returns the BMP form of a text query, nil when the query is
// not a disjunction of single terms or a view lacks block maxima.
func planBMPText(views []SegmentView, q *TextQuery, live uint64, tokenized func(int) bool) (*bmpQuery, error) {
	var terms []bmpTerm
	var names []string
	for i := range q.Clauses {
		c := &q.Clauses[i]
		if c.Occur != Should || c.IsPhrase() {
			return nil, nil
		}
		for _, f := range c.Fields {
			terms = append(terms, bmpTerm{field: f})
			names = append(names, c.Terms[0])
		}
	}
	if len(terms) == 0 {
		return nil, nil
	}
	ok, err := openBMP(views, terms, func(bs blockMaxSegment, t *bmpTerm, i int) (*segment.BlockTerm, error) {
		return bs.BlockMaxTerm(t.field, names[i])
	})
	if !ok || err != nil {
		return nil, err
	}
	for i := range terms {
		t := &terms[i]
		var df uint64
		for _, rec := range t.recs {
			if rec != nil {
				df += uint64(rec.DocFreq())
			}
		}
		// The same scorer planClause builds, so scores are bit-identical.
		avgLen := 0.0
		if tokenized(t.field) {
			avgLen = avgFieldLength(views, t.field)
		}
		t.scorer = newBM25(idf(live, df), avgLen)
		t.mix = make([]termMix, len(t.recs))
		for vi, rec := range t.recs {
			if rec == nil {
				continue
			}
			if a0, b0, ok := rec.MixRef(); ok {
				t.mix[vi] = newTermMix(&t.scorer, a0, b0)
			}
		}
	}
	return &bmpQuery{terms: terms, atLeast: lowerBound(views, terms)}, nil
}

// planBMPSparse returns the BMP form of a sparse query, nil when a view
// lacks block maxima.
func planBMPSparse(views []SegmentView, q *SparseQuery) (*bmpQuery, error) {
	terms := make([]bmpTerm, len(q.Vector))
	for i, e := range q.Vector {
		terms[i] = bmpTerm{field: q.Field, weight: float64(e.Weight)}
	}
	if len(terms) == 0 {
		return nil, nil
	}
	ok, err := openBMP(views, terms, func(bs blockMaxSegment, t *bmpTerm, i int) (*segment.BlockTerm, error) {
		return bs.BlockMaxDim(t.field, q.Vector[i].Dim)
	})
	if !ok || err != nil {
		return nil, err
	}
	return &bmpQuery{terms: terms, sparse: true, atLeast: lowerBound(views, terms)}, nil
}

// bmpMinPostings is the number of postings below which exhaustive
// evaluation is as fast as BMP (measured on the text benchmark: a few
// microseconds either way); such queries keep an exact total. Tests set it
// to 0 to exercise BMP on small segments.
var bmpMinPostings = 1024

// postings returns the number of postings of the query's terms.
func (bq *bmpQuery) postings() int {
	n := 0
	for i := range bq.terms {
		for _, rec := range bq.terms[i].recs {
			if rec != nil {
				n += int(rec.DocFreq())
			}
		}
	}
	return n
}

// blockEval scores whole blocks; its buffers are reused between blocks.
type blockEval struct {
	bq     *bmpQuery
	sc     *bmpScratch
	scores [1 << segment.BlockShift]float64
	docs   []uint32
	tfs    []uint32
	ws     []float32
}

// score scores block b of view vi exactly, offers its live matches to top
// and returns their number.
func (ev *blockEval) score(views []SegmentView, vi int, b uint32, top *topK) (int, error) {
	seg := views[vi].Segment
	var hit uint64
	sc := ev.sc
	for idx := sc.head[sc.viewBase[vi]+int(b)]; idx >= 0; idx = sc.next[idx] { // in increasing term order
		t := &ev.bq.terms[sc.termOf[idx]]
		e := &sc.arena[idx]
		rec := t.recs[vi]
		var err error
		if ev.bq.sparse {
			ev.docs, ev.ws, err = rec.SparseBlock(e, ev.docs[:0], ev.ws[:0])
			if err != nil {
				return 0, err
			}
			for j, d := range ev.docs {
				o := d & (1<<segment.BlockShift - 1)
				ev.scores[o] += t.weight * float64(ev.ws[j])
				hit |= 1 << o
			}
			continue
		}
		ev.docs, ev.tfs, err = rec.TextBlock(e, ev.docs[:0], ev.tfs[:0])
		if err != nil {
			return 0, err
		}
		if t.scorer.perTerm == 0 {
			for j, d := range ev.docs {
				o := d & (1<<segment.BlockShift - 1)
				ev.scores[o] += t.scorer.score(ev.tfs[j], 0)
				hit |= 1 << o
			}
			continue
		}
		if r, ok := seg.(*segment.Reader); ok {
			norms := r.Norms(t.field)
			for j, d := range ev.docs {
				o := d & (1<<segment.BlockShift - 1)
				ev.scores[o] += t.scorer.score(ev.tfs[j], norms.At(d))
				hit |= 1 << o
			}
			continue
		}
		for j, d := range ev.docs {
			o := d & (1<<segment.BlockShift - 1)
			ev.scores[o] += t.scorer.score(ev.tfs[j], seg.FieldLength(t.field, d))
			hit |= 1 << o
		}
	}
	n := 0
	base := b << segment.BlockShift
	for o := uint32(0); hit != 0; o, hit = o+1, hit>>1 {
		if hit&1 == 0 {
			continue
		}
		s := ev.scores[o]
		ev.scores[o] = 0
		if views[vi].isDeleted(base + o) {
			continue
		}
		n++
		if top.len() < top.k || s >= top.heap[0].score {
			top.offer(scored{view: vi, doc: base + o, score: s})
		}
	}
	return n, nil
}

// searchPruned runs q with block-max pruning when the request allows an
// inexact total (threshold > 0), the query is a disjunction of terms or a
// sparse query, every view has block maxima, and document frequencies prove
// at least threshold live matches (and there are at least bmpMinPostings
// postings). It returns a nil topK otherwise.
func searchPruned(ctx context.Context, s *schema.Schema, views []SegmentView, q Query, window, threshold int) (*topK, int, Relation, error) {
	if threshold <= 0 || len(views) == 0 {
		return nil, 0, EqualTo, nil
	}
	var bq *bmpQuery
	var err error
	switch q := q.(type) {
	case *TextQuery:
		var live uint64
		for i := range views {
			live += views[i].liveDocs()
		}
		if live == 0 {
			return nil, 0, EqualTo, nil
		}
		bq, err = planBMPText(views, q, live, func(f int) bool { return s.Fields[f].IsTokenized() })
	case *SparseQuery:
		bq, err = planBMPSparse(views, q)
	}
	if err != nil || bq == nil || bq.atLeast < threshold || bq.postings() < bmpMinPostings {
		return nil, 0, EqualTo, err
	}
	top, found, complete, err := bq.run(ctx, views, window)
	if err != nil {
		return nil, 0, EqualTo, err
	}
	if complete {
		return top, found, EqualTo, nil
	}
	return top, max(found, bq.atLeast), AtLeast, nil
}
