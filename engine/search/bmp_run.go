package search

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/summadev/summa/engine/segment"
)

// The order BMP visits blocks in. Every block of every term is a
// candidate, with the sum of its terms' bounds. A frequent term's record
// also has superblocks (segment.SuperEntry: 16 blocks, 1,024 documents):
// in a view where one of the query's terms has them, the candidates are
// first the groups, each with the sum over its terms of the term's bound
// in the group (a term's superblock codes, or the largest bound of its
// blocks in the group for a term without them). A group taken from the
// heap is expanded: the blocks of its terms with superblocks are decoded
// then, and its blocks become candidates. A group's bound is at least each
// of its blocks' (bounds of text terms are not negative), so the first
// candidate below the page's k-th score still ends the search, and the
// blocks of the groups never taken are never decoded: the most frequent
// term of the large benchmark corpus has 4,342 blocks in 277 groups.

// candidate is one block, or one group of blocks (block has groupBit),
// of one view with its bound.
type candidate struct {
	ub    float64
	view  int32
	block uint32
}

// groupBit marks a candidate that is a group: its number is the rest.
const groupBit = 1 << 31

// groupBlocks is the number of blocks per group.
const groupBlocks = 1 << segment.SuperShift

// run evaluates the query with block-max pruning, keeping the best window
// hits. It returns them, the number of live matches found in the visited
// blocks, and whether every block holding a match was visited (then that
// number is exact).
func (bq *bmpQuery) run(ctx context.Context, views []SegmentView, window int) (*topK, int, bool, error) {
	top := newTopK(window)
	t := &ticker{ctx: ctx}
	sc := bmpScratches.Get().(*bmpScratch)
	defer sc.release()
	sc.layout(views)
	for vi := range views {
		if err := bq.bounds(t, views, vi, sc); err != nil {
			return nil, 0, false, err
		}
	}
	h := blockHeap(sc.cands)
	defer func() { sc.cands, bq.decoded = h[:0], len(sc.arena) }()
	h.init()
	ev := blockEval{bq: bq, sc: sc}
	found := 0
	for len(h) > 0 {
		if err := t.check(); err != nil {
			return nil, 0, false, fmt.Errorf("search: %w", err)
		}
		c := h.pop()
		if top.len() == top.k && (top.k == 0 || c.ub < top.heap[0].score) {
			return top, found, false, nil
		}
		var err error
		if c.block&groupBit != 0 {
			err = bq.expand(views, int(c.view), c.block&^groupBit, sc, &h)
		} else {
			var n int
			n, err = ev.score(views, int(c.view), c.block, top)
			found += n
		}
		if err != nil {
			return nil, 0, false, fmt.Errorf("search: segment view %d: %w", c.view, err)
		}
	}
	return top, found, true, nil
}

// bmpScratch holds a query's reusable buffers. Blocks and groups are
// numbered across views: view v's block b is viewBase[v]+b, its group g
// groupBase[v]+g.
type bmpScratch struct {
	// ub and mag are per-block bound sums and magnitudes; zero between uses.
	ub, mag []float64
	// touched lists the blocks whose ub or mag is not zero.
	touched []int
	// arena holds the decoded block entries; next and termOf are parallel
	// to it: per block, its entries form a list in increasing term order,
	// from head[block] through next (-1 ends it); termOf gives each
	// entry's term.
	arena        []segment.BlockEntry
	next, termOf []int32
	head         []int32
	viewBase     []int
	// The same per group: bound sums, magnitudes, and the superblocks of
	// the terms that have them, listed per group.
	gub, gmag             []float64
	gtouched              []int
	garena                []segment.SuperEntry
	gnext, gtermOf, ghead []int32
	groupBase             []int
	cands                 []candidate
}

var bmpScratches = sync.Pool{New: func() any { return new(bmpScratch) }}

// layout sizes sc's per-block and per-group arrays for views.
func (sc *bmpScratch) layout(views []SegmentView) {
	blocks, groups := 0, 0
	for vi := range views {
		nBlocks := (int(views[vi].Segment.NumDocs()) + 1<<segment.BlockShift - 1) >> segment.BlockShift
		sc.viewBase = append(sc.viewBase, blocks)
		sc.groupBase = append(sc.groupBase, groups)
		blocks += nBlocks
		groups += (nBlocks + groupBlocks - 1) / groupBlocks
	}
	if len(sc.ub) < blocks {
		sc.ub, sc.mag = make([]float64, blocks), make([]float64, blocks)
	}
	if len(sc.gub) < groups {
		sc.gub, sc.gmag = make([]float64, groups), make([]float64, groups)
	}
	sc.head = fillNone(sc.head, blocks)
	sc.ghead = fillNone(sc.ghead, groups)
}

// fillNone returns s resized to n elements, each -1.
func fillNone(s []int32, n int) []int32 {
	if cap(s) < n {
		s = make([]int32, n)
	}
	s = s[:n]
	for i := range s {
		s[i] = -1
	}
	return s
}

// release zeroes what sc's query touched and puts it back in the pool.
func (sc *bmpScratch) release() {
	for _, b := range sc.touched {
		sc.ub[b], sc.mag[b] = 0, 0
	}
	for _, g := range sc.gtouched {
		sc.gub[g], sc.gmag[g] = 0, 0
	}
	sc.touched, sc.gtouched = sc.touched[:0], sc.gtouched[:0]
	sc.arena, sc.next, sc.termOf, sc.head, sc.viewBase = sc.arena[:0], sc.next[:0], sc.termOf[:0], sc.head[:0], sc.viewBase[:0]
	sc.garena, sc.gnext, sc.gtermOf, sc.ghead, sc.groupBase = sc.garena[:0], sc.gnext[:0], sc.gtermOf[:0], sc.ghead[:0], sc.groupBase[:0]
	sc.cands = sc.cands[:0]
	bmpScratches.Put(sc)
}

// bounds decodes the terms' blocks (or groups) in view vi and appends the
// view's candidates with their summed bounds, widened by boundSlack, to
// sc.cands.
func (bq *bmpQuery) bounds(tk *ticker, views []SegmentView, vi int, sc *bmpScratch) error {
	nBlocks := len(sc.head) - sc.viewBase[vi]
	if vi+1 < len(views) {
		nBlocks = sc.viewBase[vi+1] - sc.viewBase[vi]
	}
	grouped := bq.groupable(vi)
	t0, g0 := len(sc.touched), len(sc.gtouched)
	// Terms in reverse order, each entry pushed on its block's list: the
	// lists come out in increasing term order, the order of additions of
	// exhaustive evaluation.
	for i := len(bq.terms) - 1; i >= 0; i-- {
		t := &bq.terms[i]
		rec := t.recs[vi]
		if rec == nil {
			continue
		}
		if err := tk.check(); err != nil {
			return fmt.Errorf("search: %w", err)
		}
		var err error
		if grouped && rec.HasSupers() {
			err = sc.addGroups(t, int32(i), vi, rec, nBlocks)
		} else {
			err = sc.addBlocks(t, int32(i), vi, rec, nBlocks, grouped)
		}
		if err != nil {
			return fmt.Errorf("search: segment view %d: %w", vi, err)
		}
	}
	if grouped {
		for _, g := range sc.gtouched[g0:] {
			sc.cands = append(sc.cands, candidate{ub: sc.gub[g] + boundSlack*sc.gmag[g], view: int32(vi), block: uint32(g-sc.groupBase[vi]) | groupBit})
		}
		return nil
	}
	for _, b := range sc.touched[t0:] {
		sc.cands = append(sc.cands, candidate{ub: sc.ub[b] + boundSlack*sc.mag[b], view: int32(vi), block: uint32(b - sc.viewBase[vi])})
	}
	return nil
}

// groupable reports whether view vi's candidates are groups: its terms
// with superblocks have groupedMinBlocks blocks or more there, and no
// bound can be negative (text queries).
func (bq *bmpQuery) groupable(vi int) bool {
	if bq.sparse {
		return false
	}
	blocks := 0
	for i := range bq.terms {
		if bq.terms[i].scorer.weight < 0 {
			return false
		}
		if rec := bq.terms[i].recs[vi]; rec != nil && rec.HasSupers() {
			blocks += rec.Blocks()
		}
	}
	return blocks >= groupedMinBlocks && blocks > 0
}

// groupedMinBlocks is the number of blocks of a view's terms with
// superblocks from which grouping spares more decoding than it costs
// (measured on both benchmark corpora: within noise from 0 to 1,024).
// Tests set it to 0 to group on small segments.
var groupedMinBlocks = 256

// addBlock adds the bound of block entry k of the arena, term i's, to its
// block b of view vi and links it into the block's list after the
// entries of lower terms.
func (sc *bmpScratch) addBlock(t *bmpTerm, i int32, vi int, rec *segment.BlockTerm, k int) float64 {
	e := &sc.arena[k]
	b := sc.viewBase[vi] + int(e.Block)
	if sc.mag[b] == 0 {
		sc.touched = append(sc.touched, b)
	}
	// Insert after the last entry of a lower term (lists are short: one
	// entry per term at most).
	prev, at := int32(-1), sc.head[b]
	for at >= 0 && sc.termOf[at] < i {
		prev, at = at, sc.next[at]
	}
	sc.next = append(sc.next, at)
	sc.termOf = append(sc.termOf, i)
	if prev < 0 {
		sc.head[b] = int32(k)
	} else {
		sc.next[prev] = int32(k)
	}
	bound := t.bound(vi, rec, e)
	sc.ub[b] += bound
	sc.mag[b] += math.Abs(bound) + math.SmallestNonzeroFloat64
	return bound
}

// addBlocks decodes term i's blocks in view vi and adds them (terms are
// added in decreasing order); with grouped, it also adds the term's
// largest bound in each group to the group's sum.
func (sc *bmpScratch) addBlocks(t *bmpTerm, i int32, vi int, rec *segment.BlockTerm, nBlocks int, grouped bool) error {
	start := len(sc.arena)
	var err error
	if sc.arena, err = rec.Entries(sc.arena); err != nil {
		return err
	}
	group, best := -1, 0.0
	ub, mag, head := sc.ub, sc.mag, sc.head[sc.viewBase[vi]:]
	for k := start; k < len(sc.arena); k++ {
		e := &sc.arena[k]
		blk := int(e.Block)
		if blk >= nBlocks {
			return fmt.Errorf("block %d of %d", blk, nBlocks)
		}
		// addBlock inlined: terms come in decreasing order here, so the
		// entry goes first in its block's list.
		b := sc.viewBase[vi] + blk
		if mag[b] == 0 {
			sc.touched = append(sc.touched, b)
		}
		sc.next = append(sc.next, head[blk])
		sc.termOf = append(sc.termOf, i)
		head[blk] = int32(k)
		bound := t.bound(vi, rec, e)
		ub[b] += bound
		mag[b] += math.Abs(bound) + math.SmallestNonzeroFloat64
		if !grouped {
			continue
		}
		if g := blk / groupBlocks; g != group {
			if group >= 0 {
				sc.addGroupBound(vi, group, best)
			}
			group, best = g, bound
		} else {
			best = max(best, bound)
		}
	}
	if group >= 0 {
		sc.addGroupBound(vi, group, best)
	}
	return nil
}

// addGroupBound adds a term's bound in group g of view vi to its sum.
func (sc *bmpScratch) addGroupBound(vi, g int, bound float64) {
	g += sc.groupBase[vi]
	if sc.gmag[g] == 0 {
		sc.gtouched = append(sc.gtouched, g)
	}
	sc.gub[g] += bound
	sc.gmag[g] += math.Abs(bound) + math.SmallestNonzeroFloat64
}

// addGroups decodes term i's superblocks in view vi and adds their bounds
// to their groups' sums, each pushed on its group's list.
func (sc *bmpScratch) addGroups(t *bmpTerm, i int32, vi int, rec *segment.BlockTerm, nBlocks int) error {
	start := len(sc.garena)
	var err error
	if sc.garena, err = rec.Supers(sc.garena); err != nil {
		return err
	}
	nGroups := (nBlocks + groupBlocks - 1) / groupBlocks
	for k := start; k < len(sc.garena); k++ {
		s := &sc.garena[k]
		if int(s.Block) >= nGroups {
			return fmt.Errorf("group %d of %d", s.Block, nGroups)
		}
		g := sc.groupBase[vi] + int(s.Block)
		sc.gnext = append(sc.gnext, sc.ghead[g])
		sc.gtermOf = append(sc.gtermOf, i)
		sc.ghead[g] = int32(k)
		sc.addGroupBound(vi, int(s.Block), t.bound(vi, rec, &s.BlockEntry))
	}
	return nil
}

// expand decodes the blocks of group g of view vi of the terms with
// superblocks, adds them, and pushes the group's blocks on h.
func (bq *bmpQuery) expand(views []SegmentView, vi int, g uint32, sc *bmpScratch, h *blockHeap) error {
	nBlocks := len(sc.head) - sc.viewBase[vi]
	if vi+1 < len(views) {
		nBlocks = sc.viewBase[vi+1] - sc.viewBase[vi]
	}
	for idx := sc.ghead[sc.groupBase[vi]+int(g)]; idx >= 0; idx = sc.gnext[idx] {
		i := sc.gtermOf[idx]
		t := &bq.terms[i]
		rec := t.recs[vi]
		start := len(sc.arena)
		var err error
		if sc.arena, err = rec.SuperBlocks(&sc.garena[idx], sc.arena); err != nil {
			return err
		}
		for k := start; k < len(sc.arena); k++ {
			if int(sc.arena[k].Block) >= nBlocks {
				return fmt.Errorf("block %d of %d", sc.arena[k].Block, nBlocks)
			}
			sc.addBlock(t, i, vi, rec, k)
		}
	}
	first := int(g) * groupBlocks
	for b := first; b < min(first+groupBlocks, nBlocks); b++ {
		if gb := sc.viewBase[vi] + b; sc.mag[gb] != 0 {
			h.push(candidate{ub: sc.ub[gb] + boundSlack*sc.mag[gb], view: int32(vi), block: uint32(b)})
		}
	}
	return nil
}

// blockHeap is a max-heap of candidates by bound.
type blockHeap []candidate

func (h blockHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *blockHeap) push(c candidate) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p].ub >= s[i].ub {
			return
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *blockHeap) pop() candidate {
	old := *h
	c := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	if last > 0 {
		h.down(0)
	}
	return c
}

func (h blockHeap) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1].ub > h[c].ub {
			c++
		}
		if h[i].ub >= h[c].ub {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
