package segment

import "github.com/summadev/summa/engine/segment/codec"

// skipTable is the parsed header of a docs section's skip table (doc.go,
// "post"): per block but the last, the block's last doc id, the offset of
// the next block relative to the end of the table, and the sum of the
// frequencies up to the block's end (for fields with positions), in three
// bit-packed columns of widths bd, bo and bc.
type skipTable struct {
	entries    uint32 // blocks - 1; 0 without a table
	bd, bo, bc uint
	base       int // offset of the first block in the docs section
}

// parse reads the table at the start of docs, a section of df documents,
// and moves p past it; a table that does not fit makes p corrupt.
func (t *skipTable) parse(p *Postings, docs []byte, df uint32) {
	n, bd, bo, bc, ok := codec.SkipTableLen(docs, uint64(df))
	if !ok {
		p.corrupt("bad skip table for %d documents", df)
		return
	}
	if n > 0 {
		*t = skipTable{entries: uint32(codec.DocsBlocks(uint64(df)) - 1), bd: bd, bo: bo, bc: bc, base: n}
	}
	p.off = n
}

// entry returns entry i: the last doc of block i, the offset of block i+1
// in the docs section and the frequencies of blocks 0..i. The table's
// length was checked by parse, so the reads cannot fail.
func (t *skipTable) entry(docs []byte, i uint32) (last uint64, off uint64, cum uint64) {
	r := codec.NewBitReader(docs[codec.SkipHeader:t.base])
	e := uint64(t.entries)
	last, _ = r.At(uint64(i)*uint64(t.bd), t.bd)
	off, _ = r.At(e*uint64(t.bd)+uint64(i)*uint64(t.bo), t.bo)
	cum, _ = r.At(e*uint64(t.bd+t.bo)+uint64(i)*uint64(t.bc), t.bc)
	return last, off + uint64(t.base), cum
}

// lastDoc returns the last doc of block i.
func (t *skipTable) lastDoc(docs []byte, i uint32) uint64 {
	r := codec.NewBitReader(docs[codec.SkipHeader:t.base])
	v, _ := r.At(uint64(i)*uint64(t.bd), t.bd)
	return v
}

// check verifies, when p has decoded blocks 0..i in order, that entry i
// describes them: it is how Validate sees every entry.
func (t *skipTable) check(p *Postings, i uint32) bool {
	last, off, cum := t.entry(p.docs, i)
	if last != uint64(p.doc) || off != uint64(p.off) || (p.hasPos && cum != p.cumFreq) {
		return p.corrupt("skip entry %d (doc %d, offset %d, %d positions) does not match the blocks (doc %d, offset %d, %d positions)",
			i, last, off, cum, p.doc, p.off, p.cumFreq)
	}
	return true
}

// Advance moves to the first document >= target and reports whether one
// exists. It does not move when the current document is already >= target.
// Whole blocks before target are skipped through the skip table without
// being decoded.
func (p *Postings) Advance(target uint32) bool {
	if p.err != nil || p.done {
		return false
	}
	if p.n > 0 && p.doc >= target {
		return true
	}
	if p.bufI < p.bufN && p.bufDocs[p.bufN-1] >= target {
		p.scanTo(target) // inside the buffered block
		return true
	}
	if p.skip.entries > 0 && p.blk <= p.skip.entries {
		p.skipTo(target)
	}
	for p.Next() {
		if p.doc >= target {
			return true
		}
		if p.bufDocs[p.bufN-1] >= target {
			p.scanTo(target)
			return true
		}
	}
	return false
}

// Buffered returns the current document and the documents decoded after
// it, the rest of its block: docs[0] is Doc(). It is empty before the
// first document, at the end and after an error. The slice is valid until
// the iterator moves; Advance to one of its documents moves inside it.
func (p *Postings) Buffered() []uint32 {
	if p.n == 0 || p.done || p.err != nil || p.bufI == 0 || p.bufI > p.bufN {
		return nil
	}
	return p.bufDocs[p.bufI-1 : p.bufN]
}

// NextRun moves past the documents Buffered returns to the first document
// of the next decoded run and reports whether one exists, as Next from
// the last buffered document would: a walk of the term's documents a run
// at a time, for callers that take whole runs (counting a union).
func (p *Postings) NextRun() bool {
	if p.n > 0 && p.bufI < p.bufN {
		p.scanTo(p.bufDocs[p.bufN-1])
	}
	return p.Next()
}

// BufferedFreq returns the frequency of Buffered()[i] without moving.
func (p *Postings) BufferedFreq(i int) uint32 {
	if p.freqState != freqsDecoded {
		p.decodeFreqs()
	}
	return p.bufFreq[p.bufI-1+i]
}

// scanTo moves to the first buffered document >= target, which the
// caller knows is buffered (the last buffered doc is >= target), as calls
// of Next would: the positions of the documents passed are added to
// posSkip, unless read.
func (p *Postings) scanTo(target uint32) {
	i := p.bufI
	for p.bufDocs[i] < target {
		i++
	}
	if p.hasPos {
		if p.n > 0 && p.posCur < 0 {
			p.posSkip += uint64(p.freq)
		}
		for _, f := range p.bufFreq[p.bufI:i] {
			p.posSkip += uint64(f)
		}
	}
	p.posCur = -1
	p.doc, p.freq = p.bufDocs[i], p.bufFreq[i]
	p.n += uint32(i-p.bufI) + 1
	p.bufI = i + 1
}

// skipTo jumps over the undecoded blocks whose last doc is below target:
// it finds the first block j >= p.blk that may hold target and, when j >
// p.blk, moves p to the end of block j-1 as if it had been read.
func (p *Postings) skipTo(target uint32) {
	t := &p.skip
	lo, hi := p.blk, t.entries // the answer is in [lo, hi]; entries is the last block
	for lo < hi {
		mid := lo + (hi-lo)/2
		if t.lastDoc(p.docs, mid) >= uint64(target) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	j := lo
	if j <= p.blk {
		return
	}
	last, off, cum := t.entry(p.docs, j-1)
	prev := int64(-1) // the last decoded doc
	switch {
	case p.bufN > 0:
		prev = int64(p.bufDocs[p.bufN-1])
	case p.dec > 0:
		prev = int64(p.doc) // after an earlier jump
	}
	// Blocks p.blk..j-1 hold at least codec.BlockSize documents each.
	if int64(last) < prev+int64(j-p.blk)*codec.BlockSize || last >= uint64(p.numDocs) || off > uint64(len(p.docs)) || off < uint64(p.off) {
		p.corrupt("skip entry %d (doc %d, offset %d) out of range", j-1, last, off)
		return
	}
	if p.hasPos {
		if cum < p.posIdx {
			p.corrupt("skip entry %d: %d positions before %d", j-1, cum, p.posIdx)
			return
		}
		p.posSkip = cum - p.posIdx
		p.posCur = 0 // the pseudo-current document's positions are in posSkip
	}
	p.off = int(off)
	p.doc, p.cumFreq = uint32(last), cum
	p.blk, p.dec, p.n = j, j*codec.BlockSize, j*codec.BlockSize
	p.bufI, p.bufN = 0, 0
	p.freqState = freqsDecoded
}
