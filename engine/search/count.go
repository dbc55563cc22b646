package search

import (
	"context"
	"fmt"

	"github.com/summadev/summa/engine/schema"
)

// count answers a CountOnly request: the exact number of live documents
// that match. A text query is matched without scoring (countText); a
// vector query is ranked as usual and only its total kept.
func count(ctx context.Context, s *schema.Schema, views []SegmentView, req Request) (int, error) {
	q, err := Parse(s, req.Query)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("search: %w", err)
	}
	if tq, ok := q.(*TextQuery); ok {
		return countText(ctx, s, views, tq)
	}
	req.CountOnly, req.TotalHitsThreshold = false, 0
	_, total, _, err := rank(ctx, s, views, req, 1)
	return total, err
}

// countText counts the live documents of views that match q, as
// searchText would, without scoring them: no gate scores, so no
// frequency is decoded and no field length read; should clauses of a
// query with must clauses are left out (they change scores, not
// matches); and a view without deletions takes the count of a query of
// one term in one field from the term's document frequency.
func countText(ctx context.Context, s *schema.Schema, views []SegmentView, q *TextQuery) (int, error) {
	p, maxDocs, err := planLive(s, views, q)
	if err != nil || p == nil {
		return 0, err
	}
	p.matchOnly()
	t := &ticker{ctx: ctx}
	if p.conjunction() {
		return p.runConjunctions(t, views, nil)
	}
	if p.termUnion() {
		return p.countUnion(t, views, maxDocs)
	}
	total := 0
	acc := getAccumulator(maxDocs)
	defer acc.release()
	for vi := range views {
		if n, ok := p.docFreqCount(vi, &views[vi]); ok {
			total += n
			continue
		}
		if err := p.run(t, vi, views[vi].Segment, acc); err != nil {
			return 0, err
		}
		total += acc.count(&views[vi], p.target)
		acc.reset()
	}
	return total, nil
}

// matchOnly turns the plan into one that only matches: every gate stops
// scoring, and the should clauses of a plan with must clauses go (their
// gate moves no document; see setGates).
func (p *textPlan) matchOnly() {
	hasMust := p.clauses[0].occur == Must // must clauses come first
	kept := p.clauses[:0]
	for _, c := range p.clauses {
		if c.occur == Should && hasMust {
			c.release()
			continue
		}
		c.gate.score = false
		kept = append(kept, c)
	}
	p.clauses = kept
}

// docFreqCount returns the matches of view vi when the plan is one term
// in one field and the view has no deleted document: the term's document
// frequency. ok is false when the plan must run.
func (p *textPlan) docFreqCount(vi int, view *SegmentView) (n int, ok bool) {
	if len(p.clauses) != 1 || len(p.clauses[0].offsets) != 1 || len(p.clauses[0].fields) != 1 ||
		view.liveDocs() != uint64(view.Segment.NumDocs()) {
		return 0, false
	}
	fp := &p.clauses[0].fields[0]
	row := fp.postings[vi]
	fp.postings[vi] = nil
	if row == nil {
		return 0, true
	}
	n = int(row[0].DocFreq())
	row[0].Release()
	return n, true
}

// release returns every postings iterator the clause still holds.
func (c *clausePlan) release() {
	for fi := range c.fields {
		for vi, row := range c.fields[fi].postings {
			for _, pl := range row {
				pl.Release()
			}
			c.fields[fi].postings[vi] = nil
		}
	}
}

// count returns the number of documents of view marked target and not
// deleted (collect without the ranking).
func (acc *accumulator) count(view *SegmentView, target uint16) int {
	n := 0
	for _, d := range acc.touched {
		if acc.mark[d] == target && !view.isDeleted(d) {
			n++
		}
	}
	return n
}
