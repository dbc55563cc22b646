package segment

import "github.com/summadev/summa/engine/segment/codec"

// What Postings.freqState says of the buffered block's frequencies.
const (
	// freqsDecoded: bufFreq holds them (or nothing is buffered).
	freqsDecoded uint8 = iota
	// freqsPFor: they are the PFor block at freqOff.
	freqsPFor
	// freqsTail: they are the gamma codes of the tail starting at freqOff,
	// where freqR stands.
	freqsTail
)

// SkipPositions tells the iterator that its positions will not be read
// (term queries score from frequencies alone), so that it decodes a
// block's frequencies only when Freq is called on one of its documents:
// Advance over a long list then decodes doc ids alone for the blocks it
// only passes through. Call it before the first Next or Advance;
// afterwards Positions and AppendPositions return none. A block whose
// frequencies are never decoded is not checked against its bytes (the
// next block's offset comes from the skip table); Validate reads them all.
func (p *Postings) SkipPositions() {
	if p.n > 0 || p.dec > 0 {
		return
	}
	p.hasPos, p.pos, p.lazyFreq = false, nil, true
}

// decodeFreqs decodes the pending frequencies of the buffered block and
// sets the current document's; corruption makes p fail (Err) with a
// frequency of 0.
func (p *Postings) decodeFreqs() {
	state := p.freqState
	p.freqState = freqsDecoded
	k := p.bufN
	switch state {
	case freqsPFor:
		end, err := codec.UnpackPFor(p.docs, p.freqOff, p.bufFreq[:k])
		if err != nil || end != p.off {
			p.corrupt("frequencies at offset %d: %v (end %d, next block at %d)", p.freqOff, err, end, p.off)
			p.freq, p.done = 0, true
			return
		}
		for i, f := range p.bufFreq[:k] {
			if f == 1<<32-1 {
				p.corrupt("bad term frequency for doc %d", p.bufDocs[i])
				p.freq, p.done = 0, true
				return
			}
			p.bufFreq[i] = f + 1
		}
	case freqsTail:
		r := p.freqR
		for i := 0; i < k; i++ {
			f, ok := r.Gamma()
			if !ok {
				p.corrupt("bad tail frequency at offset %d", p.freqOff)
				p.freq, p.done = 0, true
				return
			}
			p.bufFreq[i] = f
		}
		p.off = p.freqOff + int((r.Pos()+7)/8)
	}
	if p.bufI > 0 {
		p.freq = p.bufFreq[p.bufI-1]
	}
}

// gapsToDocsOnly is gapsToDocs for a block whose frequencies are left
// undecoded.
func (p *Postings) gapsToDocsOnly(prev int64, k int) bool {
	for i := 0; i < k; i++ {
		doc := prev + 1 + int64(p.bufDocs[i])
		if doc >= int64(p.numDocs) {
			return p.corrupt("doc id %d out of %d documents", doc, p.numDocs)
		}
		p.bufDocs[i] = uint32(doc)
		prev = doc
	}
	return true
}
