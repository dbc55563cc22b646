package segment

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
)

// Seismic returns the Seismic index of a sparse_vector field, nil for any
// other field.
func (r *Reader) Seismic(field int) *SeismicIndex {
	if !r.fieldOK(field) {
		return nil
	}
	return r.seis[field]
}

// SeismicPendingTerms returns the segment's Seismic debt: the dimensions,
// summed over its sparse_vector fields, whose postings are not placed in
// blocks (pending nomination terms).
func (r *Reader) SeismicPendingTerms() int {
	n := 0
	for _, x := range r.seis {
		if x != nil {
			n += int(x.pending)
		}
	}
	return n
}

// validateSeismic checks every sparse field's Seismic index against its
// vec postings: the forward index holds exactly the postings, in dimension
// order; blocks are contiguous, hold increasing doc ids that have their
// dimension; summaries have increasing in-range dimensions and a finite
// scale; the pending count matches the flags.
func (r *Reader) validateSeismic(ctx context.Context) error {
	for field, x := range r.seis {
		if x == nil {
			continue
		}
		if err := x.validateForward(ctx, r.sparse[field]); err != nil {
			return err
		}
		if err := x.validateBlocks(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (x *SeismicIndex) validateForward(ctx context.Context, vocab *dict) error {
	nFwd := uint32(len(x.fwdDims) / 4)
	if u32at(x.fwdOff, 0) != 0 || u32at(x.fwdOff, x.numDocs) != nFwd {
		return x.corrupt("forward offsets do not span the %d entries", nFwd)
	}
	cursor := make([]uint32, x.numDocs)
	for doc := uint32(0); doc < x.numDocs; doc++ {
		s, e := u32at(x.fwdOff, doc), u32at(x.fwdOff, doc+1)
		if s > e || e > nFwd {
			return x.corrupt("doc %d: forward entries %d..%d", doc, s, e)
		}
		cursor[doc] = s
	}
	it := &TermIterator{d: vocab}
	for it.Next() {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("segment: validate %s: %w", x.id, err)
		}
		ord := it.Ordinal()
		p := newSparsePostings(vocab, it.c.e)
		for p.Next() {
			doc := p.Doc()
			c := cursor[doc]
			if c >= u32at(x.fwdOff, doc+1) || u32at(x.fwdDims, c) != ord ||
				u32at(x.fwdVals, c) != math.Float32bits(p.Weight()) {
				return x.corrupt("doc %d: forward index disagrees with dimension %d's postings", doc, ord)
			}
			cursor[doc]++
		}
		if err := p.Err(); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	for doc, c := range cursor {
		if c != u32at(x.fwdOff, uint32(doc)+1) {
			return x.corrupt("doc %d: forward index holds entries no posting has", doc)
		}
	}
	return nil
}

func (x *SeismicIndex) validateBlocks(ctx context.Context) error {
	var nextBlock, nextSum, nextDoc, pending uint32
	for ord := uint32(0); ord < x.numDims; ord++ {
		if ord%ctxCheckEvery == ctxCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("segment: validate %s: %w", x.id, err)
			}
		}
		first, n := x.dimBlocks(ord)
		flags := binary.LittleEndian.Uint32(x.dimTab[seisDimEntry*uint64(ord)+8:])
		if flags&^seisPending != 0 || first != nextBlock || uint64(first)+uint64(n) > uint64(x.nBlocks) {
			return x.corrupt("dimension %d: flags %x, blocks %d+%d, want start %d of %d", ord, flags, first, n, nextBlock, x.nBlocks)
		}
		if flags&seisPending != 0 {
			pending++
			if n != 0 {
				return x.corrupt("pending dimension %d has %d blocks", ord, n)
			}
		}
		nextBlock += n
		for b := first; b < first+n; b++ {
			sumOff, sumLen, docOff, docLen, scale, err := x.block(b)
			if err != nil {
				return err
			}
			if sumOff != nextSum || docOff != nextDoc || docLen == 0 || math.IsNaN(float64(scale)) ||
				math.IsInf(float64(scale), 0) || scale < 0 {
				return x.corrupt("block %d: summary at %d, docs at %d+%d, scale %v", b, sumOff, docOff, docLen, scale)
			}
			nextSum += sumLen
			nextDoc += docLen
			for k := sumOff; k < sumOff+sumLen; k++ {
				d := u32at(x.sumDims, k)
				if d >= x.numDims || (k > sumOff && d <= u32at(x.sumDims, k-1)) {
					return x.corrupt("block %d: summary dimension %d out of order or range", b, d)
				}
			}
			for k := docOff; k < docOff+docLen; k++ {
				doc := u32at(x.docs, k)
				if doc >= x.numDocs || (k > docOff && doc <= u32at(x.docs, k-1)) {
					return x.corrupt("block %d: doc %d out of order or range", b, doc)
				}
				if !x.hasDim(doc, ord) {
					return x.corrupt("block %d of dimension %d holds doc %d, which lacks it", b, ord, doc)
				}
			}
		}
	}
	if nextBlock != x.nBlocks || uint64(nextSum) != uint64(len(x.sumVals)) || uint64(nextDoc) != uint64(len(x.docs)/4) || pending != x.pending {
		return x.corrupt("regions hold %d blocks, %d summary and %d doc entries, %d pending; directory says otherwise",
			nextBlock, nextSum, nextDoc, pending)
	}
	return nil
}

// hasDim reports whether doc's (validated) forward vector has dimension ord.
func (x *SeismicIndex) hasDim(doc, ord uint32) bool {
	s, e := u32at(x.fwdOff, doc), u32at(x.fwdOff, doc+1)
	k := sort.Search(int(e-s), func(i int) bool { return u32at(x.fwdDims, s+uint32(i)) >= ord })
	return k < int(e-s) && u32at(x.fwdDims, s+uint32(k)) == ord
}
