package search

import "fmt"

// A query whose clauses are all must clauses of one term in one field
// (`+body:page +body:table`) is a conjunction of postings lists, which
// needs no accumulator: the rarest list leads, the others advance to its
// documents (skipping whole blocks through their skip tables) and, when
// one lands past it, the lead advances in turn, as Lucene's
// ConjunctionDISI does. Only the documents every list holds are scored,
// with the clause scores added in plan order (the accumulator's order),
// so scores, hits and totals are exactly those of the accumulator path.

// leapfrogConjunctions turns the leapfrog path on; tests turn it off to
// compare it with the accumulator path.
var leapfrogConjunctions = true

// conjunction reports whether the plan is a conjunction of at least two
// single terms, each in one field.
func (p *textPlan) conjunction() bool {
	if !leapfrogConjunctions || len(p.clauses) < 2 {
		return false
	}
	for i := range p.clauses {
		c := &p.clauses[i]
		if c.occur != Must || len(c.offsets) != 1 || len(c.fields) != 1 {
			return false
		}
	}
	return true
}

// runConjunctions runs the conjunction plan on every view (see
// runConjunction) and returns the number of live documents that match.
func (p *textPlan) runConjunctions(t *ticker, views []SegmentView, top *topK) (int, error) {
	total := 0
	for vi := range views {
		n, err := p.runConjunction(t, vi, &views[vi], top)
		if err != nil {
			return 0, fmt.Errorf("search: segment view %d: %w", vi, err)
		}
		total += n
	}
	return total, nil
}

// runConjunction matches the conjunction plan on view vi by leapfrog and
// returns the number of live documents that match. With top it scores
// each and offers it to top; without, it only counts.
func (p *textPlan) runConjunction(t *ticker, vi int, view *SegmentView, top *topK) (int, error) {
	its := make([]postings, len(p.clauses))
	var scorers []viewScorer
	if top != nil {
		scorers = make([]viewScorer, len(p.clauses))
	}
	defer func() {
		for _, pl := range its {
			if pl != nil {
				pl.Release()
			}
		}
	}()
	missing := false
	for ci := range p.clauses {
		fp := &p.clauses[ci].fields[0]
		row := fp.postings[vi]
		fp.postings[vi] = nil // consumed
		if row == nil {
			missing = true
			continue
		}
		its[ci] = row[0]
		its[ci].SkipPositions()
		if top != nil {
			scorers[ci] = fp.viewScorer(view.Segment)
		}
	}
	if missing {
		return 0, nil // a term absent from the view: nothing matches
	}
	if top == nil {
		return leapfrog(t, its, view, nil)
	}
	return leapfrog(t, its, view, func(d uint32) {
		s := 0.0
		for ci, pl := range its {
			s += scorers[ci].score(d, pl.Freq())
		}
		if len(top.heap) < top.k || (top.k > 0 && s >= top.heap[0].score) {
			top.offer(scored{view: vi, doc: d, score: s})
		}
	})
}

// leapfrog finds the documents all of its hold, in increasing order
// (nextCommon, its[0] leading), calls match (when set) for each one view
// does not delete, and returns their number.
func leapfrog(t *ticker, its []postings, view *SegmentView, match func(d uint32)) (int, error) {
	live := 0
	for d, ok, err := nextCommon(t, its, 0, 0); ok || err != nil; d, ok, err = nextCommon(t, its, 0, d+1) {
		if err != nil {
			return 0, err
		}
		if view.isDeleted(d) {
			continue
		}
		live++
		if match != nil {
			match(d)
		}
	}
	return live, rowErr(its)
}
