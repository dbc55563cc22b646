package search

import (
	"fmt"
	"math"
)

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
	return leapfrog(t, its, view, func(d uint32, at []int32) {
		s := 0.0
		for ci, pl := range its {
			s += scorers[ci].score(d, pl.BufferedFreq(int(at[ci])))
		}
		if len(top.heap) < top.k || (top.k > 0 && s >= top.heap[0].score) {
			top.offer(scored{view: vi, doc: d, score: s})
		}
	})
}

// leapfrog finds the documents all of its hold, in increasing order,
// calls match (when set) for each one view does not delete, and returns
// their number. The lists leapfrog to a common document (nextCommon,
// its[0], the rarest, leading), which jumps over the blocks no other list
// reaches; from there the rest of the decoded runs (Postings.Buffered),
// cut at the end of the shortest, are intersected by merging sorted
// arrays: a comparison or two per document instead of an Advance call on
// every list. match gets, per list, the document's index in its run
// (Postings.BufferedFreq reads its frequency there); the iterators stay
// where the round found the common document.
func leapfrog(t *ticker, its []postings, view *SegmentView, match func(d uint32, at []int32)) (int, error) {
	live := 0
	var r round
	r.init(len(its))
	for target := uint32(0); ; {
		_, ok, err := nextCommon(t, its, 0, target)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		limit := r.intersect(its)
		for k, c := range r.cands {
			if view.isDeleted(c) {
				continue
			}
			live++
			if match != nil {
				for ci := range its {
					r.at[ci] = r.idx[ci][k]
				}
				match(c, r.at)
			}
		}
		if limit == math.MaxUint32 {
			break
		}
		target = limit + 1
	}
	return live, rowErr(its)
}

// round holds one round of leapfrog: the common documents of the lists'
// decoded runs and, per list, each one's index in its run.
type round struct {
	cands []uint32
	idx   [][]int32
	at    []int32
}

func (r *round) init(lists int) {
	r.cands = make([]uint32, 0, 128)
	r.idx = make([][]int32, lists)
	for i := range r.idx {
		r.idx[i] = make([]int32, 0, 128)
	}
	r.at = make([]int32, lists)
}

// intersect fills the round from the lists' runs, all starting at the
// same document, and returns the last document the round covers: the end
// of the shortest run.
func (r *round) intersect(its []postings) uint32 {
	limit := uint32(math.MaxUint32)
	for _, pl := range its {
		b := pl.Buffered()
		limit = min(limit, b[len(b)-1])
	}
	lead := its[0].Buffered()
	r.cands, r.idx[0] = r.cands[:0], r.idx[0][:0]
	for i, d := range lead {
		if d > limit {
			break
		}
		r.cands = append(r.cands, d)
		r.idx[0] = append(r.idx[0], int32(i))
	}
	for ci := 1; ci < len(its); ci++ {
		r.keepCommon(ci, its[ci].Buffered())
	}
	return limit
}

// keepCommon keeps the candidates (increasing) that list ci's sorted run
// b holds, in place with the earlier lists' indexes, and records their
// index in b.
func (r *round) keepCommon(ci int, b []uint32) {
	k, j := 0, 0
	r.idx[ci] = r.idx[ci][:0]
	for i, d := range r.cands {
		for j < len(b) && b[j] < d {
			j++
		}
		if j == len(b) {
			break
		}
		if b[j] == d {
			r.cands[k] = d
			for e := range ci {
				r.idx[e][k] = r.idx[e][i]
			}
			r.idx[ci] = append(r.idx[ci], int32(j))
			k++
			j++
		}
	}
	r.cands = r.cands[:k]
	for e := range ci {
		r.idx[e] = r.idx[e][:k]
	}
}
