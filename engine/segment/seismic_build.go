package segment

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/summadev/summa/engine/segment/seismic"
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

// seisField is one sparse field's Seismic index in memory.
type seisField struct {
	ord     int
	numDims int
	pending []bool
	blocks  [][]seismic.Block // per dimension ordinal
	// forward index: doc's entries are fwdDims/fwdVals[fwdOff[doc]:fwdOff[doc+1]]
	fwdOff  []uint32
	fwdDims []uint32
	fwdVals []float32
	// lists: per dimension ordinal, its postings (doc, weight)
	lists [][]seismic.Posting
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
		blocks: make([][]seismic.Block, len(order)), lists: make([][]seismic.Posting, len(order))}
	counts := make([]uint32, b.numDocs+1)
	for ord, local := range order {
		data := sb.posts[local].data
		list := make([]seismic.Posting, 0, sb.posts[local].df)
		var doc uint32
		for off := 0; off < len(data); {
			v, k := binary.Uvarint(data[off:])
			doc += uint32(v)
			w := math.Float32frombits(binary.LittleEndian.Uint32(data[off+k:]))
			off += k + 4
			list = append(list, seismic.Posting{Doc: doc, W: w})
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
			sf.fwdDims[fill[p.Doc]] = uint32(ord)
			sf.fwdVals[fill[p.Doc]] = p.W
			fill[p.Doc]++
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
	c := sf.clusterer(b.seismic)
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
			sf.blocks[ord] = c.Place(uint32(ord), sf.lists[ord])
			continue
		}
		cost := int64(min(len(sf.lists[ord]), b.seismic.Lambda))
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
		sf.blocks[ord] = c.Place(uint32(ord), sf.lists[ord])
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
				if len(nb.Docs) > 0 {
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

// clusterer returns a seismic.Clusterer over sf's forward index with o's
// parameters.
func (sf *seisField) clusterer(o SeismicOptions) *seismic.Clusterer {
	fwd := seismic.Forward{Off: sf.fwdOff, Dims: sf.fwdDims, Vals: sf.fwdVals}
	return seismic.NewClusterer(fwd, sf.numDims, seismic.Params{Lambda: o.Lambda, CentroidFraction: o.CentroidFraction, Alpha: o.Alpha})
}
