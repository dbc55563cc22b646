package search

import (
	"context"
	"fmt"
	"math/bits"
	"sync"

	"github.com/summadev/summa/engine/schema"
)

// A count of a union of terms (should clauses of one term each, no must
// and no must-not clause: the usual query of a few words) needs no mark
// per document, only whether some term holds it: each term's decoded runs
// set bits in a bitset of the segment's documents, and the count is the
// bitset's population, less the deleted documents set. Lucene counts
// dense disjunctions the same way, in windows of bits.

// termUnion reports whether the plan, after matchOnly, is a union of
// single terms.
func (p *textPlan) termUnion() bool {
	for i := range p.clauses {
		if c := &p.clauses[i]; c.occur != Should || len(c.offsets) != 1 {
			return false
		}
	}
	return len(p.clauses) > 0
}

// unionBits lends countUnion its bitsets (*[]uint64), zeroed between uses.
var unionBits sync.Pool

// countUnion counts the live documents of views that one of the plan's
// terms holds (termUnion).
func (p *textPlan) countUnion(t *ticker, views []SegmentView, maxDocs uint32) (int, error) {
	bp, _ := unionBits.Get().(*[]uint64)
	if bp == nil {
		bp = new([]uint64)
	}
	defer unionBits.Put(bp)
	if words := int(maxDocs+63) / 64; cap(*bp) < words {
		*bp = make([]uint64, words)
	}
	total := 0
	for vi := range views {
		if n, ok := p.docFreqCount(vi, &views[vi]); ok {
			total += n
			continue
		}
		set := (*bp)[:(views[vi].Segment.NumDocs()+63)/64]
		err := p.markUnion(t, vi, views[vi].Segment, set)
		total += countSet(set, &views[vi]) // and zeroes set, even after an error
		if err != nil {
			return 0, err
		}
	}
	return total, nil
}

// markUnion sets in set the bit of every document view vi's postings of
// the plan's terms hold, consuming them. From a segment with block maxima
// it reads the terms' block entries and doc offsets there instead
// (segment.BlockTerm.MarkDocs): bytes rather than the postings' coded
// blocks, and a block's bits set in one word.
func (p *textPlan) markUnion(t *ticker, vi int, seg Segment, set []uint64) error {
	bs, _ := seg.(blockMaxSegment)
	if bs != nil && !bs.HasBlockMax() {
		bs = nil
	}
	var err error
	for ci := range p.clauses {
		c := &p.clauses[ci]
		for fi := range c.fields {
			fp := &c.fields[fi]
			row := fp.take(vi)
			if row == nil {
				continue
			}
			if err == nil {
				if err = markTerm(t, bs, fp.field, c.terms[0], row[0], set); err != nil {
					err = fmt.Errorf("search: segment view %d, field %d: %w", vi, fp.field, err)
				}
			}
			for _, pl := range row {
				pl.Release()
			}
		}
	}
	return err
}

// markTerm sets the bit of each document of term in field, from its
// block maxima when bs has them, else from its postings pl.
func markTerm(t *ticker, bs blockMaxSegment, field int, term string, pl postings, set []uint64) error {
	if bs != nil {
		rec, err := bs.BlockMaxTerm(field, term)
		if err != nil || rec != nil {
			if err == nil {
				err = t.tick()
			}
			if err == nil {
				err = rec.MarkDocs(set)
			}
			return err
		}
	}
	return markRuns(t, pl, set)
}

// markRuns sets the bit of each of pl's documents, a decoded run at a
// time.
func markRuns(t *ticker, pl postings, set []uint64) error {
	pl.SkipPositions()
	for ok := pl.Next(); ok; ok = pl.NextRun() {
		if err := t.tick(); err != nil {
			return err
		}
		for _, d := range pl.Buffered() {
			set[d>>6] |= 1 << (d & 63)
		}
	}
	return pl.Err()
}

// countSet returns the number of documents set in set that view does not
// delete, and zeroes set.
func countSet(set []uint64, view *SegmentView) int {
	if view.Deleted != nil {
		it := view.Deleted.Iterator()
		for it.HasNext() {
			if d := it.Next(); int(d>>6) < len(set) {
				set[d>>6] &^= 1 << (d & 63)
			}
		}
	}
	n := 0
	for i, w := range set {
		n += bits.OnesCount64(w)
		set[i] = 0
	}
	return n
}

// searchPrunedCounted answers a search of a union of terms that asks for
// the exact count (TotalHitsThreshold 0): the page by block-max pruning,
// whose page is the exhaustive search's (rank-safe), and, unless the
// pruning happened to see every match, the count by countText's bitsets.
// Both together cost less than scoring every match, which the exact count
// otherwise takes. It returns a nil page when the query is not such a
// union or pruning does not apply (see searchPruned).
func searchPrunedCounted(ctx context.Context, s *schema.Schema, views []SegmentView, q Query, window int) (*topK, int, Relation, error) {
	tq, ok := q.(*TextQuery)
	if !ok {
		return nil, 0, EqualTo, nil
	}
	top, found, rel, err := searchPruned(ctx, s, views, q, window, 1)
	if top == nil || err != nil || rel == EqualTo {
		return top, found, rel, err
	}
	total, err := countText(ctx, s, views, tq)
	if err != nil {
		return nil, 0, EqualTo, err
	}
	return top, total, EqualTo, nil
}
