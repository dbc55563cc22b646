package segment

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/summadev/summa/internal/defaults"
)

// Seismic build parameters (Bruch, Nardini, Rulli, Venturini, SIGIR 2024).
// They were chosen with make bench-vectors (section "seismic").
const (
	// SeismicLambda is λ: the postings kept per dimension, by impact.
	SeismicLambda = 2048
	// SeismicCentroidFraction sets the blocks of a list: one k-means
	// centroid per this fraction of its kept postings.
	SeismicCentroidFraction = 0.1
	// SeismicAlpha is α: a block summary keeps its largest coordinates
	// until they hold this share of the summary's mass.
	SeismicAlpha = 0.8
	// seismicSingleBlock is the list length up to which a list is one block.
	seismicSingleBlock = 16
)

// SeismicOptions tune the Seismic index a Builder writes.
type SeismicOptions struct {
	// Budget bounds the postings this write may cluster into new blocks
	// (a dimension costs min(df, λ)); dimensions that do not fit stay
	// pending: their postings are persisted debt, scored exhaustively by
	// queries until a maintenance pass places them. 0 means no bound, a
	// negative value places nothing new.
	Budget int64
	// Lambda, CentroidFraction and Alpha override SeismicLambda,
	// SeismicCentroidFraction and SeismicAlpha when positive (tuning).
	Lambda           int
	CentroidFraction float64
	Alpha            float64
	// Carry lists source segments whose placed dimensions are copied as
	// encoded runs (blocks and summaries), their doc ids remapped, instead
	// of being clustered again: normal merges and maintenance passes.
	Carry []SeismicCarry
}

// SeismicCarry is one source of encoded runs.
type SeismicCarry struct {
	// Source is the open source segment.
	Source *Reader
	// Remap maps a source doc id to the output's; ok false drops the doc.
	Remap func(doc uint32) (out uint32, ok bool)
}

// SetSeismic sets the Seismic options of the next Write.
func (b *Builder) SetSeismic(o SeismicOptions) {
	defaults.Set(&o.Lambda, SeismicLambda)
	defaults.Set(&o.CentroidFraction, SeismicCentroidFraction)
	defaults.Set(&o.Alpha, SeismicAlpha)
	b.seismic = o
}

// seisBlock is one block of a dimension's list.
type seisBlock struct {
	docs    []uint32 // increasing
	sumDims []uint32 // increasing dimension ordinals
	sumVals []uint8  // quantized summary values
	scale   float32  // summary value = q * scale
}

// seisField is one sparse field's Seismic index in memory.
type seisField struct {
	ord     int
	numDims int
	pending []bool
	blocks  [][]seisBlock // per dimension ordinal
	// forward index: doc's entries are fwdDims/fwdVals[fwdOff[doc]:fwdOff[doc+1]]
	fwdOff  []uint32
	fwdDims []uint32
	fwdVals []float32
	// lists: per dimension ordinal, its postings (doc, weight)
	lists [][]seisPosting
}

type seisPosting struct {
	doc uint32
	w   float32
}

// buildSeismic builds the Seismic index of sparse field i.
func (b *Builder) buildSeismic(ctx context.Context, i int) (*seisField, error) {
	sb := b.fields[i].sparse
	order := make([]uint32, len(sb.dims))
	for k := range order {
		order[k] = uint32(k)
	}
	slices.SortFunc(order, func(x, y uint32) int { return strings.Compare(sb.dims[x], sb.dims[y]) })
	ordOf := make([]uint32, len(order))
	for ord, local := range order {
		ordOf[local] = uint32(ord)
	}
	sf := &seisField{ord: i, numDims: len(order), pending: make([]bool, len(order)),
		blocks: make([][]seisBlock, len(order)), lists: make([][]seisPosting, len(order))}
	counts := make([]uint32, b.numDocs+1)
	for ord, local := range order {
		data := sb.posts[local].data
		list := make([]seisPosting, 0, sb.posts[local].df)
		var doc uint32
		for off := 0; off < len(data); {
			v, k := binary.Uvarint(data[off:])
			doc += uint32(v)
			w := math.Float32frombits(binary.LittleEndian.Uint32(data[off+k:]))
			off += k + 4
			list = append(list, seisPosting{doc, w})
			counts[doc+1]++
		}
		sf.lists[ord] = list
	}
	sf.fwdOff = make([]uint32, b.numDocs+1)
	for d := uint32(1); d <= b.numDocs; d++ {
		sf.fwdOff[d] = sf.fwdOff[d-1] + counts[d]
	}
	total := sf.fwdOff[b.numDocs]
	sf.fwdDims = make([]uint32, total)
	sf.fwdVals = make([]float32, total)
	fill := append([]uint32(nil), sf.fwdOff[:b.numDocs]...)
	for ord, list := range sf.lists {
		for _, p := range list {
			sf.fwdDims[fill[p.doc]] = uint32(ord)
			sf.fwdVals[fill[p.doc]] = p.w
			fill[p.doc]++
		}
	}
	need := make([]bool, len(order))
	for k := range need {
		need[k] = true
	}
	var upgrade []bool
	var err error
	if len(b.seismic.Carry) > 0 {
		ids := make(map[string]uint32, len(order))
		for local, name := range sb.dims {
			ids[name] = ordOf[local]
		}
		if upgrade, err = sf.carry(i, b.seismic.Carry, ids, need); err != nil {
			return nil, err
		}
	}
	budget := b.seismic.Budget
	c := newClusterer(sf, b.seismic)
	for ord := range need {
		if !need[ord] {
			continue
		}
		if ord%256 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("segment: seismic: %w", err)
			}
		}
		// Dimensions are placed in dictionary order until the budget is
		// spent: the first that does not fit and every later one needing
		// placement stay pending.
		if upgrade != nil && upgrade[ord] {
			// From a segment written before seis files: placed whatever
			// the budget, once, so that an ordinary merge upgrades it.
			sf.blocks[ord] = c.place(uint32(ord), sf.lists[ord])
			continue
		}
		cost := int64(min(len(sf.lists[ord]), c.o.Lambda))
		if budget < 0 || (budget > 0 && cost > budget) {
			sf.pending[ord] = true
			sf.blocks[ord] = nil
			budget = -1
			continue
		}
		if budget > 0 {
			budget -= cost
			if budget == 0 {
				budget = -1
			}
		}
		sf.blocks[ord] = c.place(uint32(ord), sf.lists[ord])
	}
	return sf, nil
}

// carry copies the placed dimensions of every source as encoded runs,
// remapping doc ids and summary dimension ordinals. A dimension pending in
// any source, or in no source, is left in need of placement; one of a
// source without Seismic index (written before seis files) is returned in
// upgrade.
func (sf *seisField) carry(field int, carries []SeismicCarry, ids map[string]uint32, need []bool) (upgrade []bool, err error) {
	carried := make([]bool, len(need))
	forced := make([]bool, len(need))
	upgrade = make([]bool, len(need))
	for _, c := range carries {
		src := c.Source.seis[field]
		if src == nil {
			// A segment written before seis files existed: every one of
			// its dimensions needs placement.
			it := &TermIterator{d: c.Source.sparse[field]}
			for it.Next() {
				if o, ok := ids[it.Term()]; ok {
					forced[o], upgrade[o] = true, true
				}
			}
			if err := it.Err(); err != nil {
				return nil, err
			}
			continue
		}
		// A source dimension absent from the output (every doc having it
		// was dropped) maps to dropDim: its runs and summary entries go.
		outOrd := make([]uint32, src.numDims)
		it := &TermIterator{d: c.Source.sparse[field]}
		for it.Next() {
			if it.Ordinal() >= src.numDims {
				return nil, src.corrupt("dimension %q has ordinal %d of %d", it.Term(), it.Ordinal(), src.numDims)
			}
			o, ok := ids[it.Term()]
			if !ok {
				o = dropDim
			}
			outOrd[it.Ordinal()] = o
		}
		if err := it.Err(); err != nil {
			return nil, err
		}
		for so := uint32(0); so < src.numDims; so++ {
			o := outOrd[so]
			if o == dropDim {
				continue
			}
			if src.pendingDim(so) {
				forced[o] = true
				continue
			}
			first, n := src.dimBlocks(so)
			for blk := first; blk < first+n; blk++ {
				nb, err := src.copyBlock(blk, outOrd, c.Remap)
				if err != nil {
					return nil, err
				}
				if len(nb.docs) > 0 {
					sf.blocks[o] = append(sf.blocks[o], nb)
				}
			}
			carried[o] = true
		}
	}
	for o := range need {
		need[o] = forced[o] || !carried[o]
		if need[o] {
			sf.blocks[o] = nil
		}
	}
	return upgrade, nil
}

// clusterer places dimensions: top-λ postings, shallow k-means over the
// documents' vectors, block summaries.
type clusterer struct {
	sf     *seisField
	o      SeismicOptions
	inv    [][]centW // per dimension: centroids having it
	touch  []uint32
	scores []float32
	maxv   []float32 // summary scratch, per dimension
	used   []uint32
}

type centW struct {
	c uint32
	w float32
}

func newClusterer(sf *seisField, o SeismicOptions) *clusterer {
	return &clusterer{sf: sf, o: o, inv: make([][]centW, sf.numDims), maxv: make([]float32, sf.numDims)}
}

func (c *clusterer) vec(doc uint32) ([]uint32, []float32) {
	s, e := c.sf.fwdOff[doc], c.sf.fwdOff[doc+1]
	return c.sf.fwdDims[s:e], c.sf.fwdVals[s:e]
}

// place clusters one dimension's list into blocks.
func (c *clusterer) place(dim uint32, list []seisPosting) []seisBlock {
	if len(list) == 0 {
		return nil
	}
	list = slices.Clone(list)
	slices.SortStableFunc(list, func(a, b seisPosting) int {
		if a.w != b.w {
			if a.w > b.w {
				return -1
			}
			return 1
		}
		return int(a.doc) - int(b.doc)
	})
	list = list[:min(len(list), c.o.Lambda)]
	nc := 1
	if len(list) > seismicSingleBlock {
		nc = max(1, int(math.Ceil(float64(len(list))*c.o.CentroidFraction)))
	}
	groups := make([][]uint32, nc)
	if nc == 1 {
		for _, p := range list {
			groups[0] = append(groups[0], p.doc)
		}
	} else {
		rng := rand.New(rand.NewPCG(uint64(dim), uint64(len(list))))
		perm := rng.Perm(len(list))[:nc]
		for ci, pi := range perm {
			dims, vals := c.vec(list[pi].doc)
			for k, d := range dims {
				if len(c.inv[d]) == 0 {
					c.touch = append(c.touch, d)
				}
				c.inv[d] = append(c.inv[d], centW{uint32(ci), vals[k]})
			}
		}
		if cap(c.scores) < nc {
			c.scores = make([]float32, nc)
		}
		scores := c.scores[:nc]
		for _, p := range list {
			clear(scores)
			dims, vals := c.vec(p.doc)
			for k, d := range dims {
				for _, cw := range c.inv[d] {
					scores[cw.c] += vals[k] * cw.w
				}
			}
			best := 0
			for ci := 1; ci < nc; ci++ {
				if scores[ci] > scores[best] {
					best = ci
				}
			}
			groups[best] = append(groups[best], p.doc)
		}
		for _, d := range c.touch {
			c.inv[d] = c.inv[d][:0]
		}
		c.touch = c.touch[:0]
	}
	var out []seisBlock
	for _, g := range groups {
		if len(g) == 0 {
			continue
		}
		slices.Sort(g)
		out = append(out, c.summarize(dim, g))
	}
	return out
}

// summarize builds a block's summary: the coordinate-wise maximum of its
// documents' vectors, cropped to α of its mass, quantized to u8 (rounded
// up, so a kept coordinate never underestimates). The list's own
// dimension is always kept: every document of the block has it.
func (c *clusterer) summarize(dim uint32, docs []uint32) seisBlock {
	for _, doc := range docs {
		dims, vals := c.vec(doc)
		for k, d := range dims {
			v := max(vals[k], 0)
			if v == 0 {
				continue
			}
			if c.maxv[d] == 0 {
				c.used = append(c.used, d)
			}
			c.maxv[d] = max(c.maxv[d], v)
		}
	}
	used := c.used
	slices.SortFunc(used, func(a, b uint32) int {
		if c.maxv[a] != c.maxv[b] {
			if c.maxv[a] > c.maxv[b] {
				return -1
			}
			return 1
		}
		return int(a) - int(b)
	})
	var mass, top float64
	for _, d := range used {
		mass += float64(c.maxv[d])
	}
	keep := 0
	for keep < len(used) && (keep == 0 || top < c.o.Alpha*mass) {
		top += float64(c.maxv[used[keep]])
		keep++
	}
	blk := seisBlock{docs: docs}
	if keep > 0 {
		kept := slices.Clone(used[:keep])
		if c.maxv[dim] > 0 && !slices.Contains(kept, dim) {
			kept = append(kept, dim)
		}
		slices.Sort(kept)
		hi := c.maxv[used[0]]
		blk.scale = hi / 255
		blk.sumDims = kept
		blk.sumVals = make([]uint8, len(kept))
		for k, d := range kept {
			q := math.Ceil(float64(c.maxv[d]) / float64(blk.scale))
			blk.sumVals[k] = uint8(min(q, 255))
		}
	}
	for _, d := range used {
		c.maxv[d] = 0
	}
	c.used = used[:0]
	return blk
}
