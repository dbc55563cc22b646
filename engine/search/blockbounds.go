package search

import (
	"math"
	"slices"
	"sync"

	"github.com/summadev/summa/engine/segment"
)

// Block bounds of a query that must match every one of its parts (the
// terms of a phrase): the segment's block maxima bound each part's
// contribution per block of segment.BlockShift documents, scored with the
// query's scorer, and a block where some part is absent holds no match.
// An evaluator that walks the documents in order passes over the blocks
// whose bound cannot enter the page.
//
// Conjunctions were tried the same way (counting a block's matches
// without scoring them): on "+using +only" of the large corpus it left
// 5,076 of 6,940 matches unscored and still ran 10% slower, since
// decoding both terms' block entries costs more than the scoring saved.

// blockPart is one part of such a query: a term in a field and the scorer
// its bound is computed with.
type blockPart struct {
	field  int
	term   string
	scorer bm25
}

// blockScratch holds the reusable buffers of blockBounds.
type blockScratch struct {
	bounds  []float64
	count   []uint8
	entries []segment.BlockEntry
}

var blockScratches = sync.Pool{New: func() any { return new(blockScratch) }}

// blockBounds returns, per block of v, the smallest of the parts' block
// bounds, -Inf where a part is absent from the block; nil when the segment
// has no block maxima or there are more than 255 parts. The slice is sc's
// until sc's next use.
func blockBounds(v *SegmentView, parts []blockPart, sc *blockScratch) ([]float64, error) {
	bs, ok := v.Segment.(blockMaxSegment)
	if !ok || !bs.HasBlockMax() || len(parts) > math.MaxUint8 {
		return nil, nil
	}
	nBlocks := (int(v.Segment.NumDocs()) + 1<<segment.BlockShift - 1) >> segment.BlockShift
	bounds := slices.Grow(sc.bounds[:0], nBlocks)[:nBlocks]
	count := slices.Grow(sc.count[:0], nBlocks)[:nBlocks]
	clear(count)
	sc.bounds, sc.count = bounds, count
	entries := sc.entries[:0]
	defer func() { sc.entries = entries[:0] }()
	for u := range parts {
		p := &parts[u]
		rec, err := bs.BlockMaxTerm(p.field, p.term)
		if err != nil || rec == nil {
			return nil, err
		}
		bt := bmpTerm{field: p.field, scorer: p.scorer, recs: []*segment.BlockTerm{rec}, mix: make([]termMix, 1)}
		if a0, b0, ok := rec.MixRef(); ok {
			bt.mix[0] = newTermMix(&bt.scorer, a0, b0)
		}
		if entries, err = rec.Entries(entries[:0]); err != nil {
			return nil, err
		}
		for k := range entries {
			e := &entries[k]
			if int(e.Block) >= nBlocks || int(count[e.Block]) != u {
				continue
			}
			b := bt.bound(0, rec, e)
			if u == 0 || b < bounds[e.Block] {
				bounds[e.Block] = b
			}
			count[e.Block]++
		}
	}
	for b, c := range count {
		if int(c) != len(parts) {
			bounds[b] = math.Inf(-1)
		}
	}
	return bounds, nil
}

// beats reports whether a bound ub, widened by 1e-9 of itself against
// rounding, is above score.
func beats(ub, score float64) bool { return ub+math.Abs(ub)*1e-9 > score }
