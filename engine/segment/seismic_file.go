package segment

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment/seismic"
)

// The seis file (see doc.go): per sparse_vector field eight regions of
// fixed-width little-endian arrays, then the directory.
const (
	seisDimEntry   = 12 // firstBlock u32, nBlocks u32, flags u32
	seisBlockEntry = 20 // sumOff u32, sumLen u32, docOff u32, docLen u32, scale f32
	seisPending    = 1  // dimension flag: postings not placed (debt)
	seisRegions    = 8
	dropDim        = math.MaxUint32 // carry: a source dimension the output lacks
)

// writeSeismic writes the seis file.
func (b *Builder) writeSeismic(ctx context.Context, w *fileWriter) error {
	var fields []*seisField
	for i := range b.fields {
		if b.fields[i].sparse == nil {
			continue
		}
		sf, err := b.buildSeismic(ctx, i)
		if err != nil {
			return err
		}
		fields = append(fields, sf)
	}
	return encodeSeismic(w, b.numDocs, fields)
}

// encodeSeismic writes the seis payload of a segment of numDocs documents
// from its sparse fields' indexes (in field order) and the directory.
func encodeSeismic(w *fileWriter, numDocs uint32, fields []*seisField) error {
	type entry struct {
		ord                                 int
		numDims, nBlocks, nSum, nDocs, nFwd uint64
		pending                             uint64
		regions                             [seisRegions]uint64
	}
	var entries []entry
	for _, sf := range fields {
		i := sf.ord
		e := entry{ord: i, numDims: uint64(sf.numDims), nFwd: uint64(len(sf.fwdDims))}
		var dimTab, blockTab []byte
		var sumDims, docs []byte
		var sumVals []byte
		for d := 0; d < sf.numDims; d++ {
			var flags uint32
			if sf.pending[d] {
				flags = seisPending
				e.pending++
			}
			dimTab = binary.LittleEndian.AppendUint32(dimTab, uint32(e.nBlocks))
			dimTab = binary.LittleEndian.AppendUint32(dimTab, uint32(len(sf.blocks[d])))
			dimTab = binary.LittleEndian.AppendUint32(dimTab, flags)
			for _, blk := range sf.blocks[d] {
				blockTab = binary.LittleEndian.AppendUint32(blockTab, uint32(e.nSum))
				blockTab = binary.LittleEndian.AppendUint32(blockTab, uint32(len(blk.SumDims)))
				blockTab = binary.LittleEndian.AppendUint32(blockTab, uint32(e.nDocs))
				blockTab = binary.LittleEndian.AppendUint32(blockTab, uint32(len(blk.Docs)))
				blockTab = binary.LittleEndian.AppendUint32(blockTab, math.Float32bits(blk.Scale))
				for _, x := range blk.SumDims {
					sumDims = binary.LittleEndian.AppendUint32(sumDims, x)
				}
				sumVals = append(sumVals, blk.SumVals...)
				for _, x := range blk.Docs {
					docs = binary.LittleEndian.AppendUint32(docs, x)
				}
				e.nBlocks++
				e.nSum += uint64(len(blk.SumDims))
				e.nDocs += uint64(len(blk.Docs))
			}
		}
		if e.nBlocks > math.MaxUint32 || e.nSum > math.MaxUint32 || e.nDocs > math.MaxUint32 {
			return fmt.Errorf("segment: seismic index of field %d is too large", i)
		}
		fwdOff := make([]byte, 0, 4*len(sf.fwdOff))
		for _, x := range sf.fwdOff {
			fwdOff = binary.LittleEndian.AppendUint32(fwdOff, x)
		}
		fwdDims := make([]byte, 0, 4*len(sf.fwdDims))
		for _, x := range sf.fwdDims {
			fwdDims = binary.LittleEndian.AppendUint32(fwdDims, x)
		}
		fwdVals := make([]byte, 0, 4*len(sf.fwdVals))
		for _, x := range sf.fwdVals {
			fwdVals = binary.LittleEndian.AppendUint32(fwdVals, math.Float32bits(x))
		}
		for r, data := range [seisRegions][]byte{dimTab, blockTab, sumDims, sumVals, docs, fwdOff, fwdDims, fwdVals} {
			pad4(w)
			e.regions[r] = w.offset()
			w.write(data)
		}
		entries = append(entries, e)
	}
	dir := make([][]uint64, len(entries))
	for i, e := range entries {
		dir[i] = append([]uint64{uint64(e.ord), e.numDims, e.nBlocks, e.nSum, e.nDocs, e.nFwd, e.pending}, e.regions[:]...)
	}
	w.entryDirectory(numDocs, dir)
	return w.err
}

// SeismicIndex reads one sparse_vector field's Seismic index. Its methods
// are safe for concurrent use; they check every offset they follow and
// report a *CorruptionError instead of trusting it.
type SeismicIndex struct {
	id       segid.ID
	numDocs  uint32
	numDims  uint32
	nBlocks  uint32
	pending  uint32
	dimTab   []byte
	blockTab []byte
	sumDims  []byte
	sumVals  []byte
	docs     []byte
	fwdOff   []byte
	fwdDims  []byte
	fwdVals  []byte
	vocab    *dict
	// typed views of the hot regions (see wordView)
	sumDimsU []uint32
	docsU    []uint32
	fwdOffU  []uint32
	fwdDimsU []uint32
	fwdValsF []float32
}

// openSeismic parses the seis file's directory (the cheap check: every
// region inside the payload with the size its counts give, dimension and
// forward-entry counts agreeing with the vec file's dictionaries).
func openSeismic(id segid.ID, s *schema.Schema, payload []byte, numDocs uint32, sparse []*dict) ([]*SeismicIndex, error) {
	isSparse := func(i int) bool { return s.Fields[i].Type == schema.SparseVector }
	return fieldEntries(id, SuffixSeismic, payload, numDocs, nil, isSparse, len(s.Fields), func(d *decoder, ord int) (*SeismicIndex, error) {
		var c [6]uint64
		for k := range c {
			c[k] = d.uvarint()
		}
		var reg [seisRegions]uint64
		for k := range reg {
			reg[k] = d.uvarint()
		}
		if d.err != nil {
			return nil, nil
		}
		numDims, nBlocks, nSum, nDocs, nFwd, pending := c[0], c[1], c[2], c[3], c[4], c[5]
		v := sparse[ord]
		if v == nil || numDims != uint64(v.numTerms) || nFwd != v.sumDocFreq || pending > numDims ||
			nBlocks > math.MaxUint32 || nSum > math.MaxUint32 || nDocs > math.MaxUint32 || nFwd > math.MaxUint32 {
			return nil, corruptf(id, SuffixSeismic, "field %d: counts %v do not fit the vec file", ord, c)
		}
		sizes := [seisRegions]uint64{numDims * seisDimEntry, nBlocks * seisBlockEntry, nSum * 4, nSum, nDocs * 4,
			(uint64(numDocs) + 1) * 4, nFwd * 4, nFwd * 4}
		var regions [seisRegions][]byte
		for k := range regions {
			var ok bool
			if regions[k], ok = subslice(payload, reg[k], sizes[k]); !ok {
				return nil, corruptf(id, SuffixSeismic, "field %d: region %d outside payload", ord, k)
			}
		}
		return &SeismicIndex{id: id, numDocs: numDocs, numDims: uint32(numDims), nBlocks: uint32(nBlocks),
			pending: uint32(pending), dimTab: regions[0], blockTab: regions[1], sumDims: regions[2], sumVals: regions[3],
			docs: regions[4], fwdOff: regions[5], fwdDims: regions[6], fwdVals: regions[7], vocab: v,
			sumDimsU: u32View(regions[2]), docsU: u32View(regions[4]), fwdOffU: u32View(regions[5]),
			fwdDimsU: u32View(regions[6]), fwdValsF: f32View(regions[7])}, nil
	})
}

func (x *SeismicIndex) corrupt(format string, args ...any) error {
	return corruptf(x.id, SuffixSeismic, format, args...)
}

// NumDims returns the number of dimensions of the field in the segment.
func (x *SeismicIndex) NumDims() uint32 { return x.numDims }

// PendingDims returns the number of dimensions whose postings are not
// placed in blocks: the segment's Seismic debt.
func (x *SeismicIndex) PendingDims() uint32 { return x.pending }

// Dim returns the ordinal of a dimension, ok false when absent.
func (x *SeismicIndex) Dim(dim string) (ord uint32, ok bool, err error) {
	e, ok, err := x.vocab.lookup(dim)
	if err != nil || !ok {
		return 0, false, err
	}
	if e.ord >= x.numDims {
		return 0, false, x.corrupt("dimension %q has ordinal %d of %d", dim, e.ord, x.numDims)
	}
	return e.ord, true, nil
}

func u32at(b []byte, i uint32) uint32 { return binary.LittleEndian.Uint32(b[4*uint64(i):]) }

// pendingDim reports whether dimension ord is pending.
func (x *SeismicIndex) pendingDim(ord uint32) bool {
	return binary.LittleEndian.Uint32(x.dimTab[seisDimEntry*uint64(ord)+8:])&seisPending != 0
}

// dimBlocks returns the unchecked block range of a dimension.
func (x *SeismicIndex) dimBlocks(ord uint32) (first, n uint32) {
	e := x.dimTab[seisDimEntry*uint64(ord):]
	return binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:])
}

// Blocks returns the range of blocks of dimension ord and whether it is
// pending (its postings then must be scored from the vec file).
func (x *SeismicIndex) Blocks(ord uint32) (first, n uint32, pending bool, err error) {
	if ord >= x.numDims {
		return 0, 0, false, x.corrupt("dimension ordinal %d of %d", ord, x.numDims)
	}
	first, n = x.dimBlocks(ord)
	if uint64(first)+uint64(n) > uint64(x.nBlocks) {
		return 0, 0, false, x.corrupt("dimension %d: blocks %d+%d of %d", ord, first, n, x.nBlocks)
	}
	return first, n, x.pendingDim(ord), nil
}

// block returns block b's checked summary and doc ranges and its scale.
func (x *SeismicIndex) block(b uint32) (sumOff, sumLen, docOff, docLen uint32, scale float32, err error) {
	if b >= x.nBlocks {
		return 0, 0, 0, 0, 0, x.corrupt("block %d of %d", b, x.nBlocks)
	}
	e := x.blockTab[seisBlockEntry*uint64(b):]
	sumOff, sumLen = binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:])
	docOff, docLen = binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint32(e[12:])
	scale = math.Float32frombits(binary.LittleEndian.Uint32(e[16:]))
	if uint64(sumOff)+uint64(sumLen) > uint64(len(x.sumVals)) || uint64(docOff)+uint64(docLen) > uint64(len(x.docs))/4 {
		return 0, 0, 0, 0, 0, x.corrupt("block %d outside its regions", b)
	}
	return sumOff, sumLen, docOff, docLen, scale, nil
}

// SeismicQuery is a query vector prepared for Seismic indexes: weights by
// dimension ordinal and a 64-Ki-bit filter of the ordinals set, small
// enough for the L1 cache, that spares most lookups into the weights.
type SeismicQuery struct {
	w    []float32
	bits [1024]uint64
	set  []uint32
}

// Reset prepares q for an index of numDims dimensions, all weights zero.
func (q *SeismicQuery) Reset(numDims uint32) {
	for _, d := range q.set {
		q.w[d] = 0
		q.bits[(d&0xffff)/64] = 0
	}
	q.set = q.set[:0]
	if uint32(len(q.w)) < numDims {
		q.w = make([]float32, numDims)
	}
	q.w = q.w[:cap(q.w)]
}

// Set gives dimension ord weight w; ord must be below Reset's numDims.
func (q *SeismicQuery) Set(ord uint32, w float32) {
	q.w[ord] = w
	q.bits[(ord&0xffff)/64] |= 1 << (ord % 64)
	q.set = append(q.set, ord)
}

// weight returns the weight of d (0 when unset or out of range).
func (q *SeismicQuery) weight(d uint32) float32 {
	if q.bits[(d&0xffff)/64]&(1<<(d%64)) == 0 || d >= uint32(len(q.w)) {
		return 0
	}
	return q.w[d]
}

// SummaryScore returns the inner product of block b's summary with q.
func (x *SeismicIndex) SummaryScore(b uint32, q *SeismicQuery) (float32, error) {
	sumOff, sumLen, _, _, scale, err := x.block(b)
	if err != nil {
		return 0, err
	}
	dims := x.sumDimsU[sumOff : sumOff+sumLen]
	vals := x.sumVals[sumOff : sumOff+sumLen]
	vals = vals[:len(dims)]
	var s float32
	for k, d := range dims {
		if q.bits[(d&0xffff)/64]&(1<<(d%64)) != 0 {
			s += q.weight(d) * float32(vals[k])
		}
	}
	return s * scale, nil
}

// SummaryScores appends to dst the summary scores (see SummaryScore) of
// the n blocks from first.
func (x *SeismicIndex) SummaryScores(first, n uint32, q *SeismicQuery, dst []float32) ([]float32, error) {
	for b := first; b < first+n; b++ {
		s, err := x.SummaryScore(b, q)
		if err != nil {
			return dst, err
		}
		dst = append(dst, s)
	}
	return dst, nil
}

// BlockDocs appends block b's doc ids to dst.
func (x *SeismicIndex) BlockDocs(b uint32, dst []uint32) ([]uint32, error) {
	_, _, docOff, docLen, _, err := x.block(b)
	if err != nil {
		return dst, err
	}
	for _, doc := range x.docsU[docOff : docOff+docLen] {
		if doc >= x.numDocs {
			return dst, x.corrupt("block %d: doc %d of %d", b, doc, x.numDocs)
		}
		dst = append(dst, doc)
	}
	return dst, nil
}

// DocScore returns the exact inner product of doc's vector (from the
// forward index) with q, summed in float64.
func (x *SeismicIndex) DocScore(doc uint32, q *SeismicQuery) (float64, error) {
	if doc >= x.numDocs {
		return 0, x.corrupt("doc %d of %d", doc, x.numDocs)
	}
	s, e := x.fwdOffU[doc], x.fwdOffU[doc+1]
	if s > e || int(e) > len(x.fwdDimsU) {
		return 0, x.corrupt("doc %d: forward entries %d..%d", doc, s, e)
	}
	var sum float64
	dims, vals := x.fwdDimsU[s:e], x.fwdValsF[s:e]
	vals = vals[:len(dims)]
	for k, d := range dims {
		if q.bits[(d&0xffff)/64]&(1<<(d%64)) != 0 {
			sum += float64(q.weight(d)) * float64(vals[k])
		}
	}
	return sum, nil
}

// copyBlock returns block blk with remapped doc ids (dropped ones left
// out) and summary dimensions mapped through outOrd: an encoded run copied
// by a merge, summaries and quantization kept as they are.
func (x *SeismicIndex) copyBlock(blk uint32, outOrd []uint32, remap func(uint32) (uint32, bool)) (seismic.Block, error) {
	sumOff, sumLen, _, _, scale, err := x.block(blk)
	if err != nil {
		return seismic.Block{}, err
	}
	docs, err := x.BlockDocs(blk, nil)
	if err != nil {
		return seismic.Block{}, err
	}
	out := seismic.Block{Scale: scale}
	for _, d := range docs {
		if nd, ok := remap(d); ok {
			out.Docs = append(out.Docs, nd)
		}
	}
	slices.Sort(out.Docs)
	for k := sumOff; k < sumOff+sumLen; k++ {
		d := u32at(x.sumDims, k)
		if d >= uint32(len(outOrd)) {
			return seismic.Block{}, x.corrupt("block %d: summary dimension %d of %d", blk, d, len(outOrd))
		}
		if outOrd[d] != dropDim {
			out.SumDims = append(out.SumDims, outOrd[d])
			out.SumVals = append(out.SumVals, x.sumVals[k])
		}
	}
	return out, nil
}
