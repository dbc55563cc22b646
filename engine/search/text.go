package search

import (
	"context"
	"fmt"
	"sort"

	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segment"
)

// textPlan is a text query with its postings opened in every view and its
// scorers built from the collection statistics of all views.
type textPlan struct {
	// clauses in execution order: must clauses, rarest first, then should
	// clauses, then must-not clauses.
	clauses []clausePlan
	// target is the mark of the documents that match the whole query.
	target uint16
}

// clausePlan is one clause of a textPlan.
type clausePlan struct {
	// occur is how the clause takes part in matching.
	occur Occur
	// gate says which documents the clause may change.
	gate gate
	// offsets holds each term's position relative to the first.
	offsets []uint32
	// terms holds the clause's terms.
	terms []string
	// slots maps each term to its distinct term: postings rows hold one
	// iterator per distinct term.
	slots []int
	// fields holds one entry per searched field.
	fields []fieldPlan
	// cost estimates the documents the clause matches: per view and field,
	// the smallest document frequency of its terms. Zero means it matches
	// nothing.
	cost uint64
}

// fieldPlan is one field of a clausePlan.
type fieldPlan struct {
	// field is the field's ordinal.
	field int
	// scorer scores the clause's term or phrase in this field.
	scorer bm25
	// postings holds, per view, one iterator per distinct term; nil for a
	// view missing one of the terms.
	postings [][]postings
}

// planText opens the postings of every clause in every view and builds the
// scorers; live is the number of live documents of all views.
func planText(s *schema.Schema, views []SegmentView, q *TextQuery, live uint64) (*textPlan, error) {
	p := &textPlan{}
	for i := range q.Clauses {
		cp, err := planClause(s, views, &q.Clauses[i], live)
		if err != nil {
			return nil, err
		}
		p.clauses = append(p.clauses, cp)
	}
	rank := func(o Occur) int { return [...]int{Must: 0, Should: 1, MustNot: 2}[o] }
	sort.SliceStable(p.clauses, func(i, j int) bool {
		a, b := &p.clauses[i], &p.clauses[j]
		if rank(a.occur) != rank(b.occur) {
			return rank(a.occur) < rank(b.occur)
		}
		return a.occur == Must && a.cost < b.cost
	})
	p.setGates()
	return p, nil
}

// setGates chains the clauses through document marks (see gate).
func (p *textPlan) setGates() {
	var must uint16
	for i := range p.clauses {
		if p.clauses[i].occur == Must {
			p.clauses[i].gate = gate{from: must, to: must + 1, score: true}
			must++
		}
	}
	p.target = must
	if must == 0 {
		p.target = 1
	}
	for i := range p.clauses {
		c := &p.clauses[i]
		switch {
		case c.occur == MustNot:
			c.gate = gate{from: p.target, to: excluded}
		case c.occur == Should && must == 0:
			c.gate = gate{from: 0, to: 1, score: true}
		case c.occur == Should:
			c.gate = gate{from: must, to: must, score: true}
		}
	}
}

// matchesNothing reports whether the plan cannot match any document: it
// has no must or should clause, or a must clause whose terms are absent.
func (p *textPlan) matchesNothing() bool {
	if len(p.clauses) == 0 || p.clauses[0].occur == MustNot {
		return true
	}
	return p.clauses[0].occur == Must && p.clauses[0].cost == 0
}

// planClause opens a clause's postings and builds its scorers.
func planClause(s *schema.Schema, views []SegmentView, c *Clause, live uint64) (clausePlan, error) {
	uniq, slots := distinct(c.Terms)
	cp := clausePlan{occur: c.Occur, offsets: c.Offsets, slots: slots, terms: c.Terms}
	for _, f := range c.Fields {
		fp := fieldPlan{field: f, postings: make([][]postings, len(views))}
		df := make([]uint64, len(uniq))
		for vi := range views {
			row, err := openRow(views[vi].Segment, f, uniq, df)
			if err != nil {
				return cp, fmt.Errorf("search: segment view %d: %w", vi, err)
			}
			fp.postings[vi] = row
			cp.cost += rowCost(row)
		}
		var idfSum float64
		for _, u := range slots {
			idfSum += idf(live, df[u])
		}
		avgLen := 0.0
		if s.Fields[f].IsTokenized() {
			avgLen = avgFieldLength(views, f)
		}
		fp.scorer = newBM25(idfSum, avgLen)
		cp.fields = append(cp.fields, fp)
	}
	return cp, nil
}

// openRow opens the postings of terms in one segment field and adds their
// document frequencies to df; it returns nil when a term is absent.
func openRow(seg Segment, field int, terms []string, df []uint64) ([]postings, error) {
	var row []postings
	missing := false
	for u, t := range terms {
		pl, err := seg.Postings(field, t)
		if err != nil {
			return nil, fmt.Errorf("postings of %q in field %d: %w", t, field, err)
		}
		if pl == nil {
			missing, row = true, nil
			continue
		}
		df[u] += uint64(pl.DocFreq())
		if missing {
			continue
		}
		if row == nil { // allocated only for a segment that has the terms
			row = make([]postings, len(terms))
		}
		row[u] = pl
	}
	return row, nil
}

// rowCost is the smallest document frequency of a row, 0 for a nil row.
func rowCost(row []postings) uint64 {
	if row == nil {
		return 0
	}
	c := uint64(row[0].DocFreq())
	for _, pl := range row[1:] {
		c = min(c, uint64(pl.DocFreq()))
	}
	return c
}

// distinct returns the distinct terms and, per term, its index among them.
func distinct(terms []string) (uniq []string, slots []int) {
	slots = make([]int, len(terms))
	for i, t := range terms {
		slots[i] = len(uniq)
		for u, v := range uniq {
			if v == t {
				slots[i] = u
				break
			}
		}
		if slots[i] == len(uniq) {
			uniq = append(uniq, t)
		}
	}
	return uniq, slots
}

// run executes the plan on view vi, leaving matches in acc.
func (p *textPlan) run(t *ticker, vi int, seg Segment, acc *accumulator) error {
	for ci := range p.clauses {
		c := &p.clauses[ci]
		acc.moved = 0
		// A clause gated on earlier ones may only change the documents
		// they marked: it advances its postings to those alone.
		var cands []uint32
		if c.gate.from != 0 {
			if cands = acc.candidates(c.gate.from); len(cands) == 0 {
				if c.occur == Must {
					return nil
				}
				continue
			}
		}
		for fi := range c.fields {
			fp := &c.fields[fi]
			row := fp.take(vi)
			if row == nil {
				continue
			}
			var err error
			if len(c.offsets) == 1 {
				err = runTerm(t, seg, fp, row[0], c.gate, acc, cands)
			} else {
				err = runPhrase(t, seg, fp, c, row, acc, cands)
			}
			for _, pl := range row {
				pl.Release() // spent: its buffers go to the next query
			}
			if err != nil {
				return fmt.Errorf("search: segment view %d, field %d: %w", vi, fp.field, err)
			}
		}
		if c.occur == Must && acc.moved == 0 {
			return nil // no document matches every must clause
		}
	}
	return nil
}

// take returns the field's postings of view vi and forgets them: the
// caller consumes and releases them.
func (fp *fieldPlan) take(vi int) []postings {
	row := fp.postings[vi]
	fp.postings[vi] = nil
	return row
}

// runTerm matches one term's postings; with cands (sorted), only those
// documents, advancing the postings to each (skipping whole blocks).
func runTerm(t *ticker, seg Segment, fp *fieldPlan, pl postings, g gate, acc *accumulator, cands []uint32) error {
	vs := fp.viewScorer(seg)
	pl.SkipPositions() // frequencies only, decoded for the blocks that match
	for i := 0; ; {
		if err := t.tick(); err != nil {
			return err
		}
		var d uint32
		if cands != nil {
			if i == len(cands) || !pl.Advance(cands[i]) {
				break
			}
			d, i = cands[i], i+1
			if pl.Doc() != d {
				continue
			}
		} else {
			if !pl.Next() {
				break
			}
			d = pl.Doc()
		}
		if !acc.admits(g, d) {
			continue
		}
		var s float64
		if g.score {
			s = vs.score(d, pl.Freq())
		}
		acc.match(g, d, s)
	}
	return pl.Err()
}

// viewScorer scores one field plan's matches in one segment view: BM25
// with the field lengths read straight from the segment's norms column
// when the segment is a *segment.Reader.
type viewScorer struct {
	bm25
	// norms is the field's length column; direct says it is used.
	norms  segment.Norms
	direct bool
	seg    Segment
	field  int
}

// viewScorer returns fp's scorer for seg.
func (fp *fieldPlan) viewScorer(seg Segment) viewScorer {
	vs := viewScorer{bm25: fp.scorer, seg: seg, field: fp.field}
	if r, ok := seg.(*segment.Reader); ok {
		vs.norms, vs.direct = r.Norms(fp.field), true
	}
	return vs
}

// score returns the BM25 contribution of tf occurrences in doc, a doc id
// of the segment (below NumDocs).
func (vs *viewScorer) score(doc, tf uint32) float64 {
	var dl uint32
	if vs.perTerm != 0 {
		if vs.direct {
			dl = vs.norms.At(doc)
		} else {
			dl = vs.seg.FieldLength(vs.field, doc)
		}
	}
	return vs.bm25.score(tf, dl)
}

// searchText runs a text query over every view, keeping the best window
// hits; it returns them with the number of matching live documents.
func searchText(ctx context.Context, s *schema.Schema, views []SegmentView, q *TextQuery, window int) (*topK, int, error) {
	top := newTopK(window)
	p, maxDocs, err := planLive(s, views, q)
	if err != nil {
		return nil, 0, err
	}
	if p == nil {
		return top, 0, nil
	}
	t := &ticker{ctx: ctx}
	if p.conjunction() {
		total, err := p.runConjunctions(t, views, top)
		if err != nil {
			return nil, 0, err
		}
		return top, total, nil
	}
	total := 0
	acc := getAccumulator(maxDocs)
	defer acc.release()
	for vi := range views {
		if err := p.run(t, vi, views[vi].Segment, acc); err != nil {
			return nil, 0, err
		}
		total += acc.collect(vi, &views[vi], p.target, top)
		acc.reset()
	}
	return top, total, nil
}

// planLive plans q over views for searchText and countText. The plan is
// nil, with no error, when no document can match: the views hold no live
// document, or the plan matches nothing. maxDocs is the largest view's
// document count (the accumulator's size).
func planLive(s *schema.Schema, views []SegmentView, q *TextQuery) (p *textPlan, maxDocs uint32, err error) {
	live, maxDocs := viewSizes(views)
	if live == 0 {
		return nil, 0, nil
	}
	p, err = planText(s, views, q, live)
	if err != nil {
		return nil, 0, err
	}
	if p.matchesNothing() {
		return nil, 0, nil
	}
	return p, maxDocs, nil
}
