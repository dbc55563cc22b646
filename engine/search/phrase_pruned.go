package search

import (
	"context"
	"fmt"
	"math"

	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segment"
)

// searchPrunedPhrase runs a query made of one phrase clause in one field,
// as Lucene's phrase scorers skip what cannot compete. A phrase occurs in
// a document at most as often as its least frequent term, so the score at
// that frequency bounds the document's; once the top window is full, a
// document whose bound does not beat the window's worst hit cannot enter
// it: it is only checked for one occurrence of the phrase (counted, not
// scored). When the request allows an inexact total (threshold > 0), that
// goes on until threshold matches are counted, and after that such a
// document's positions are not read at all: TotalHits is exact unless a
// document was skipped, then a lower bound of at least threshold. When it
// does not (threshold 0), TotalHits stays exact. The hits
// (documents, scores, tie order) are the exhaustive ones either way. It
// returns a nil topK for any other query.
func searchPrunedPhrase(ctx context.Context, s *schema.Schema, views []SegmentView, q Query, window, threshold int) (*topK, int, Relation, error) {
	tq, ok := q.(*TextQuery)
	if threshold < 0 || (threshold == 0 && !pruneExact) || !ok || len(tq.Clauses) != 1 {
		return nil, 0, EqualTo, nil
	}
	c := &tq.Clauses[0]
	if c.Occur == MustNot || !c.IsPhrase() || len(c.Fields) != 1 {
		return nil, 0, EqualTo, nil
	}
	live, _ := viewSizes(views)
	if live == 0 {
		return nil, 0, EqualTo, nil
	}
	cp, err := planClause(s, views, c, live)
	if err != nil {
		return nil, 0, EqualTo, err
	}
	pr := prunedPhrase{t: &ticker{ctx: ctx}, top: newTopK(window), threshold: threshold, c: &cp, fp: &cp.fields[0]}
	pr.terms, _ = distinct(c.Terms)
	defer func() {
		if pr.scratch != nil {
			blockScratches.Put(pr.scratch)
		}
	}()
	for vi := range views {
		row := pr.fp.postings[vi]
		pr.fp.postings[vi] = nil // consumed
		if row == nil {
			continue
		}
		err := pr.view(vi, &views[vi], row)
		for _, pl := range row {
			pl.Release()
		}
		if err != nil {
			return nil, 0, EqualTo, fmt.Errorf("search: segment view %d, field %d: %w", vi, pr.fp.field, err)
		}
	}
	if pr.skipped {
		return pr.top, pr.matched, AtLeast, nil
	}
	return pr.top, pr.matched, EqualTo, nil
}

// prunedPhrase is the state of searchPrunedPhrase across views.
type prunedPhrase struct {
	t         *ticker
	top       *topK
	threshold int
	c         *clausePlan
	fp        *fieldPlan
	// matched counts the live documents the phrase was found in.
	matched int
	// skipped says a document was left unmatched for its bound.
	skipped bool
	// terms are the phrase's distinct terms, in the order of a row.
	terms []string
	// blocks holds, in the current view, a bound of the phrase's score per
	// block of documents (phraseBlockBounds), built the first time skipTo
	// may pass blocks over; nil until then or when not used.
	blocks []float64
	// v is the current view; blocksDone says blocks was built (or cannot
	// be) for it.
	v          *SegmentView
	blocksDone bool
	// scratch holds blocks' buffers once taken from blockScratches.
	scratch *blockScratch
}

// view matches the phrase in one segment view, where every term occurs.
func (pr *prunedPhrase) view(vi int, v *SegmentView, row []postings) error {
	vs := pr.fp.viewScorer(v.Segment)
	m := newPhraseMatcher(pr.c.offsets, len(row))
	lead := rarest(row)
	pr.v, pr.blocks = v, nil
	pr.blocksDone = pr.threshold == 0 || pr.top.k == 0 || rowCost(row) < uint64(bmpMinPostings)
	next := func(target uint32) (uint32, bool, error) {
		target, err := pr.skipTo(target)
		if err != nil {
			return 0, false, err
		}
		return nextCommon(pr.t, row, lead, target)
	}
	for d, ok, err := next(0); ok || err != nil; d, ok, err = next(d + 1) {
		if err != nil {
			return err
		}
		if v.isDeleted(d) {
			continue
		}
		competes := pr.competes(vi, d, &vs, row)
		if !competes && pr.threshold > 0 && pr.matched >= pr.threshold {
			pr.skipped = true
			continue
		}
		freq, err := m.inDoc(row, pr.c.slots, !competes)
		if err != nil {
			return err
		}
		if freq > 0 {
			pr.matched++
			if competes {
				pr.top.offer(scored{view: vi, doc: d, score: vs.score(d, freq)})
			}
		}
	}
	return rowErr(row)
}

// competes reports whether document d of view vi must be matched in full
// and scored: always until the window is full, then only when its bound
// is above the worst kept hit (documents come in view and doc id order,
// so an equal score could not displace it). One that does not compete is
// still checked for one occurrence while fewer than threshold matches are
// counted (and always when threshold is 0).
func (pr *prunedPhrase) competes(vi int, d uint32, vs *viewScorer, row []postings) bool {
	if pr.top.len() < pr.top.k || pr.top.k == 0 {
		return true
	}
	tf := row[0].Freq()
	for _, pl := range row[1:] {
		tf = min(tf, pl.Freq())
	}
	bound := vs.score(d, tf)
	return bound+bound*1e-9 > pr.top.heap[0].score
}

// phraseBlockBounds returns, per block of segment.BlockShift documents of
// v, a bound of the phrase's score (scored by fp) in any of its documents
// (see blockBounds), -Inf where a term is absent from the block; nil when
// the segment has no block maxima. A phrase occurs in a document at most
// min(tf) times, the frequency of one of its terms, so its A/f + B·dl/f is
// at least that term's, and at least the largest of the terms' block
// bounds of it: the block's bound is the smallest of the terms' bounds,
// each scored with the phrase's scorer.
func phraseBlockBounds(v *SegmentView, fp *fieldPlan, terms []string, sc *blockScratch) ([]float64, error) {
	parts := make([]blockPart, len(terms))
	for u, term := range terms {
		parts[u] = blockPart{field: fp.field, term: term, scorer: fp.scorer}
	}
	return blockBounds(v, parts, sc)
}

// skipTo returns the first document at or after target that may need
// matching: once threshold matches are counted and the window is full,
// the blocks whose bound does not beat the window's worst hit are passed
// over (a block where every term occurs sets skipped). The block bounds
// are built then, the first time: a phrase with fewer matches never pays
// for them.
func (pr *prunedPhrase) skipTo(target uint32) (uint32, error) {
	if pr.threshold == 0 || pr.matched < pr.threshold || pr.top.len() < pr.top.k {
		return target, nil
	}
	if !pr.blocksDone {
		pr.blocksDone = true
		var err error
		if pr.scratch == nil {
			pr.scratch = blockScratches.Get().(*blockScratch)
		}
		if pr.blocks, err = phraseBlockBounds(pr.v, pr.fp, pr.terms, pr.scratch); err != nil {
			return 0, err
		}
	}
	if pr.blocks == nil {
		return target, nil
	}
	worst := pr.top.heap[0].score
	b := int(target >> segment.BlockShift)
	for ; b < len(pr.blocks); b++ {
		ub := pr.blocks[b]
		if beats(ub, worst) {
			break
		}
		if !math.IsInf(ub, -1) {
			pr.skipped = true
		}
	}
	if b >= len(pr.blocks) {
		return math.MaxUint32, nil
	}
	return max(target, uint32(b)<<segment.BlockShift), nil
}

// rarest returns the index of the row's list with the fewest documents.
func rarest(row []postings) int {
	lead := 0
	for u, pl := range row {
		if pl.DocFreq() < row[lead].DocFreq() {
			lead = u
		}
	}
	return lead
}

// nextCommon returns the first document at or after target that every
// list of row holds, leapfrogging from row[lead]: every list advances to
// the largest document seen, so whole blocks are skipped. ok is false at
// the end of a list (see rowErr for its error) or on cancellation (err).
func nextCommon(t *ticker, row []postings, lead int, target uint32) (doc uint32, ok bool, err error) {
leap:
	for row[lead].Advance(target) {
		if err := t.tick(); err != nil {
			return 0, false, err
		}
		d := row[lead].Doc()
		for u, pl := range row {
			if u == lead {
				continue
			}
			if !pl.Advance(d) {
				return 0, false, nil
			}
			if pl.Doc() != d {
				target = pl.Doc()
				continue leap
			}
		}
		return d, true, nil
	}
	return 0, false, nil
}
