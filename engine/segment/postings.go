package segment

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"sync"

	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment/codec"
)

// Postings iterates the documents of one term in increasing doc id order.
// A Postings is not safe for concurrent use; each call of Reader.Postings
// returns a new one.
//
// Encoding (see doc.go and codec/docs.go): the docs section holds a skip
// table when it has two blocks or more, then the term's documents in
// blocks of codec.BlockSize (doc-id gaps then frequencies, each a patched
// bit-packed block), then a bit-coded tail of df%codec.BlockSize documents
// (interpolative doc ids, gamma frequencies). The positions section,
// present for tokenized fields, holds per document freq uvarints: the
// first position, then gaps (>= 1).
type Postings struct {
	docs    []byte
	pos     []byte
	off     int
	df      uint32
	n       uint32 // documents returned so far
	dec     uint32 // documents decoded into the buffer so far
	bufI    int    // next buffered document
	bufN    int    // buffered documents
	done    bool   // Next returned false
	doc     uint32
	freq    uint32
	numDocs uint32
	hasPos  bool
	legacy  bool   // version 1 docs section (refillLegacy)
	posOff  int    // offset in pos of the first position not yet consumed
	posSkip uint64 // positions of passed documents not yet skipped
	posCur  int    // offset of the current document's positions, or -1
	posIdx  uint64 // number of positions before posOff
	skip    skipTable
	blk     uint32 // blocks decoded so far
	cumFreq uint64 // sum of the frequencies decoded so far
	id      segid.ID
	err     error
	bufDocs []uint32 // decoded doc ids, allocated by the first refill
	bufFreq []uint32 // decoded frequencies, allocated by the first refill
	// lazyFreq is set by SkipPositions: frequencies are decoded per block
	// on the first Freq call (freqState says what is pending).
	lazyFreq  bool
	freqState uint8
	freqOff   int             // offset of a pending PFor block or of a pending tail
	freqR     codec.BitReader // a pending tail's reader, at its frequencies
	// pooled is the array behind bufDocs and bufFreq when it came from
	// postingsBufs (full blocks), nil otherwise.
	pooled *[2 * codec.BlockSize]uint32
}

// postingsBufs recycles the decode buffers of iterators over a full
// block or more (see Release).
var postingsBufs = sync.Pool{New: func() any { return new([2 * codec.BlockSize]uint32) }}

// errReleased is the error of an iterator used after Release.
var errReleased = errors.New("segment: postings used after Release")

// Release hands the iterator's decode buffers back for reuse by later
// iterators (searches open many short-lived ones). The iterator is spent:
// Next and Advance return false and Err reports the misuse.
func (p *Postings) Release() {
	if p.pooled != nil {
		postingsBufs.Put(p.pooled)
	}
	p.pooled, p.bufDocs, p.bufFreq = nil, nil, nil
	p.bufI, p.bufN = 0, 0
	if p.err == nil {
		p.err = errReleased
	}
}

func (p *Postings) init(d *dict, e termEntry) {
	var pos []byte
	if d.hasPos {
		pos = d.post[e.postOff+e.docsLen : e.postOff+e.docsLen+e.posLen]
	}
	p.start(d.post[e.postOff:e.postOff+e.docsLen], pos, e.df, d.numDocs, d.hasPos, d.legacyDocs)
	p.id = d.id
}

// start sets p to iterate a docs section (and positions section when
// hasPos) of df documents; a bad skip table is reported by Err.
func (p *Postings) start(docs, pos []byte, df, numDocs uint32, hasPos, legacy bool) {
	// Keep the buffers of a reused iterator (merges); the rest restarts.
	bd, bf, pooled := p.bufDocs, p.bufFreq, p.pooled
	*p = Postings{bufDocs: bd, bufFreq: bf, pooled: pooled, docs: docs, pos: pos, df: df, numDocs: numDocs,
		hasPos: hasPos, legacy: legacy, posCur: -1}
	if !legacy {
		p.skip.parse(p, docs, df)
	}
}

func (p *Postings) corrupt(format string, args ...any) bool {
	if p.err == nil {
		p.err = corruptf(p.id, SuffixPostings, format, args...)
	}
	return false
}

// DocFreq returns the number of documents holding the term.
func (p *Postings) DocFreq() uint32 { return p.df }

// Next advances to the next document; it returns false at the end or on
// corruption (see Err).
func (p *Postings) Next() bool {
	if p.err != nil {
		return false
	}
	if p.n >= p.df {
		p.done = true
		if p.freqState == freqsDecoded && p.off != len(p.docs) {
			return p.corrupt("docs section has %d trailing bytes", len(p.docs)-p.off)
		}
		return false
	}
	if p.bufI == p.bufN && !p.refill() {
		return false
	}
	if p.hasPos && p.n > 0 && p.posCur < 0 {
		p.posSkip += uint64(p.freq)
	}
	p.posCur = -1
	p.doc, p.freq = p.bufDocs[p.bufI], p.bufFreq[p.bufI]
	p.bufI++
	p.n++
	return true
}

// nextBlock returns the documents and frequencies decoded and not yet
// returned (the rest of a block, or of the tail), consuming them as that
// many calls of Next would; ok is false at the end or on corruption (see
// Err). Positions are not tracked: a caller of nextBlock reads none (a
// merge copies a term's positions section whole). The slices are valid
// until the next call.
func (p *Postings) nextBlock() (docs, freqs []uint32, ok bool) {
	if p.err != nil {
		return nil, nil, false
	}
	if p.n >= p.df {
		p.done = true
		if p.freqState == freqsDecoded && p.off != len(p.docs) {
			return nil, nil, p.corrupt("docs section has %d trailing bytes", len(p.docs)-p.off)
		}
		return nil, nil, false
	}
	if p.bufI == p.bufN && !p.refill() {
		return nil, nil, false
	}
	if p.freqState != freqsDecoded {
		p.decodeFreqs()
	}
	docs, freqs = p.bufDocs[p.bufI:p.bufN], p.bufFreq[p.bufI:p.bufN]
	p.n += uint32(len(docs))
	p.bufI = p.bufN
	p.doc, p.freq = docs[len(docs)-1], freqs[len(freqs)-1]
	return docs, freqs, p.err == nil
}

// refill decodes the next block (or the tail) of the docs section into the
// buffer, checking the doc ids and, at a block boundary, the skip entry
// that describes it.
func (p *Postings) refill() bool {
	left := p.df - p.dec
	p.freqState = freqsDecoded
	if want := int(min(p.df, codec.BlockSize)); cap(p.bufDocs) < want {
		if want == codec.BlockSize {
			p.pooled = postingsBufs.Get().(*[2 * codec.BlockSize]uint32)
			p.bufDocs, p.bufFreq = p.pooled[:codec.BlockSize:codec.BlockSize], p.pooled[codec.BlockSize:]
		} else {
			buf := make([]uint32, 2*want)
			p.bufDocs, p.bufFreq = buf[:want:want], buf[want:]
		}
	}
	// refill runs once every buffered document was returned, so the last
	// decoded doc id is the current one.
	prev := int64(-1)
	if p.dec > 0 {
		prev = int64(p.doc)
	}
	var k int
	switch {
	case p.legacy:
		if k = p.refillLegacy(int(min(left, codec.BlockSize))); k == 0 {
			return false
		}
		if !p.gapsToDocs(prev, k) {
			return false
		}
	case left >= codec.BlockSize:
		if p.blk > 0 && !p.skip.check(p, p.blk-1) {
			return false
		}
		k = codec.BlockSize
		// A block followed by a skip entry can leave its frequencies
		// undecoded: the entry gives the next block's offset.
		lazy := p.lazyFreq && p.blk < p.skip.entries
		var off int
		var err error
		if p.off < len(p.docs) && p.docs[p.off] == codec.InterpMarker {
			if off, err = p.interpGaps(prev); err != nil {
				return p.corrupt("docs block at offset %d: %v", p.off, err)
			}
		} else {
			off, err = codec.UnpackPFor(p.docs, p.off, p.bufDocs[:k])
		}
		switch {
		case err == nil && lazy:
			_, next, _ := p.skip.entry(p.docs, p.blk)
			if next < uint64(off) || next > uint64(len(p.docs)) {
				return p.corrupt("skip entry %d: offset %d out of range", p.blk, next)
			}
			p.freqState, p.freqOff, off = freqsPFor, off, int(next)
		case err == nil:
			off, err = codec.UnpackPFor(p.docs, off, p.bufFreq[:k])
		}
		if err != nil {
			return p.corrupt("docs block at offset %d: %v", p.off, err)
		}
		p.off = off
		if lazy {
			if !p.gapsToDocsOnly(prev, k) {
				return false
			}
		} else if !p.gapsToDocs(prev, k) {
			return false
		}
	default:
		if p.blk > 0 && !p.skip.check(p, p.blk-1) {
			return false
		}
		k = int(left)
		r := codec.NewBitReader(p.docs[p.off:])
		if !codec.ReadTailDocs(&r, p.bufDocs[:k], prev+1, int64(p.numDocs)-1) {
			return p.corrupt("bad tail doc ids at offset %d", p.off)
		}
		if p.lazyFreq {
			p.freqState, p.freqOff, p.freqR = freqsTail, p.off, r
			break
		}
		for i := 0; i < k; i++ {
			f, ok := r.Gamma()
			if !ok {
				return p.corrupt("bad tail frequency at offset %d", p.off)
			}
			p.bufFreq[i] = f
			p.cumFreq += uint64(f)
		}
		p.off += int((r.Pos() + 7) / 8)
	}
	p.blk++
	p.dec += uint32(k)
	p.bufI, p.bufN = 0, k
	return true
}

// interpGaps decodes an interpolative full block (codec.ReadInterpBlock) after
// doc prev into the buffer as gaps minus one, as codec.UnpackPFor leaves them,
// and returns the offset after it.
func (p *Postings) interpGaps(prev int64) (int, error) {
	off, ok := codec.ReadInterpBlock(p.docs, p.off, prev, p.numDocs, p.bufDocs[:codec.BlockSize])
	if !ok {
		return off, codec.ErrPFor
	}
	for i, d := range p.bufDocs[:codec.BlockSize] {
		p.bufDocs[i] = uint32(int64(d) - prev - 1)
		prev = int64(d)
	}
	return off, nil
}

// gapsToDocs turns the k buffered gaps (minus one) and frequencies (minus
// one) after doc prev into doc ids and frequencies, checking them.
func (p *Postings) gapsToDocs(prev int64, k int) bool {
	for i := 0; i < k; i++ {
		doc := prev + 1 + int64(p.bufDocs[i])
		if doc >= int64(p.numDocs) {
			return p.corrupt("doc id %d out of %d documents", doc, p.numDocs)
		}
		if p.bufFreq[i] == 1<<32-1 {
			return p.corrupt("bad term frequency for doc %d", doc)
		}
		p.bufDocs[i], p.bufFreq[i] = uint32(doc), p.bufFreq[i]+1
		p.cumFreq += uint64(p.bufFreq[i])
		prev = doc
	}
	return true
}

// Doc returns the current doc id.
func (p *Postings) Doc() uint32 { return p.doc }

// Freq returns the term's frequency in the current document.
func (p *Postings) Freq() uint32 {
	if p.freqState != freqsDecoded {
		p.decodeFreqs()
	}
	return p.freq
}

// Positions returns the term's positions in the current document, or nil
// for fields without positions.
func (p *Postings) Positions() ([]uint32, error) {
	if !p.hasPos {
		return nil, p.err
	}
	return p.AppendPositions(nil)
}

// AppendPositions appends the current document's positions to dst.
func (p *Postings) AppendPositions(dst []uint32) ([]uint32, error) {
	if p.err != nil || !p.hasPos || p.n == 0 {
		return dst, p.err
	}
	if !p.seekPositions() {
		return dst, p.err
	}
	off := p.posCur
	if uint64(p.freq) > uint64(len(p.pos)-off) {
		p.corrupt("positions section too short for %d positions of doc %d", p.freq, p.doc)
		return dst, p.err
	}
	var last uint64
	for i := uint32(0); i < p.freq; i++ {
		var v uint64
		if uint(off) < uint(len(p.pos)) && p.pos[off] < 0x80 { // one byte: most gaps, read inline
			v = uint64(p.pos[off])
			off++
		} else {
			var ok bool
			if v, off, ok = longPositionAt(p.pos, off); !ok {
				p.corrupt("bad position varint of doc %d", p.doc)
				return dst, p.err
			}
		}
		if i > 0 {
			if v == 0 {
				p.corrupt("positions of doc %d not increasing", p.doc)
				return dst, p.err
			}
			v += last
		}
		if v > 1<<32-1 {
			p.corrupt("position %d of doc %d overflows", v, p.doc)
			return dst, p.err
		}
		last = v
		dst = append(dst, uint32(v))
	}
	p.consumed(off)
	return dst, nil
}

// positionAt decodes the position varint at pos[off:] and returns it and
// the offset after it, ok false when it is cut short or too long. One
// byte (most gaps) is read inline.
func positionAt(pos []byte, off int) (v uint64, next int, ok bool) {
	if uint(off) < uint(len(pos)) && pos[off] < 0x80 {
		return uint64(pos[off]), off + 1, true
	}
	return longPositionAt(pos, off)
}

// longPositionAt is positionAt past one byte.
func longPositionAt(pos []byte, off int) (v uint64, next int, ok bool) {
	if off+1 < len(pos) && pos[off+1] < 0x80 {
		return uint64(pos[off]&0x7f) | uint64(pos[off+1])<<7, off + 2, true
	}
	return codec.UvarintAt(pos, off)
}

// HasPositionIn reports whether the current document holds one of the
// positions of want (ascending). It reads the document's positions only
// until it finds one or passes the last of want, and leaves them unread:
// a later AppendPositions of the document reads them all. Phrases check
// their most frequent term this way when one occurrence is enough.
func (p *Postings) HasPositionIn(want []uint32) (bool, error) {
	if p.err != nil || !p.hasPos || p.n == 0 || len(want) == 0 {
		return false, p.err
	}
	unread := p.posCur < 0
	if !p.seekPositions() {
		return false, p.err
	}
	found, err := p.findPosition(want)
	if unread && err == nil {
		p.posCur = -1 // posOff and posIdx stay at the document's start
	}
	return found, err
}

// findPosition walks the current document's positions (posCur, already
// sought) against want, as HasPositionIn says.
func (p *Postings) findPosition(want []uint32) (bool, error) {
	off := p.posCur
	if uint64(p.freq) > uint64(len(p.pos)-off) {
		p.corrupt("positions section too short for %d positions of doc %d", p.freq, p.doc)
		return false, p.err
	}
	var pos uint64 // the first position, then each gap added (>= 1)
	w := 0
	for i := uint32(0); i < p.freq; i++ {
		gap, next, ok := positionAt(p.pos, off)
		switch {
		case !ok:
			p.corrupt("bad position varint of doc %d", p.doc)
		case i > 0 && gap == 0:
			p.corrupt("positions of doc %d not increasing", p.doc)
		case gap > 1<<32-1 || pos+gap > 1<<32-1:
			p.corrupt("position %d of doc %d overflows", pos+gap, p.doc)
		}
		if p.err != nil {
			return false, p.err
		}
		off, pos = next, pos+gap
		for uint64(want[w]) < pos {
			if w++; w == len(want) {
				return false, nil
			}
		}
		if uint64(want[w]) == pos {
			return true, nil
		}
	}
	return false, nil
}

// refillLegacy decodes up to n documents of a version 1 docs section
// (per document uvarint(delta<<1 | freqIsOne), then uvarint(freq) when
// freqIsOne is 0; delta is the first doc id, then the gap >= 1) into the
// buffer as gaps minus one and frequencies minus one, like a block. It
// returns the number decoded, 0 on corruption.
func (p *Postings) refillLegacy(n int) int {
	off := p.off
	for i := 0; i < n; i++ {
		v, next, ok := codec.UvarintAt(p.docs, off)
		if !ok || v>>1 > 1<<32-1 || (v>>1 == 0 && (i > 0 || p.dec > 0)) {
			p.corrupt("bad doc varint at offset %d", off)
			return 0
		}
		off = next
		p.bufDocs[i] = uint32(v >> 1)
		if i > 0 || p.dec > 0 {
			p.bufDocs[i]-- // a gap >= 1
		}
		p.bufFreq[i] = 0
		if v&1 == 0 {
			f, next, ok := codec.UvarintAt(p.docs, off)
			if !ok || f == 0 || f > 1<<32-1 {
				p.corrupt("bad term frequency at offset %d", off)
				return 0
			}
			p.bufFreq[i], off = uint32(f-1), next
		}
	}
	p.off = off
	return n
}

// seekPositions sets posCur to the current document's positions, skipping
// those of the documents passed since the last read.
func (p *Postings) seekPositions() bool {
	if p.posCur >= 0 {
		return true
	}
	off := p.posOff
	if p.posSkip > uint64(len(p.pos)-off) {
		return p.corrupt("positions section too short to skip %d positions", p.posSkip)
	}
	n := p.posSkip
	// Thirty-two, then eight bytes at a time while they cannot hold more
	// positions than are left to skip: a varint ends at each byte below
	// 0x80.
	const ends = 0x8080808080808080
	for n >= 32 && off+32 <= len(p.pos) {
		b := p.pos[off : off+32]
		n -= uint64(bits.OnesCount64(^binary.LittleEndian.Uint64(b)&ends) + bits.OnesCount64(^binary.LittleEndian.Uint64(b[8:])&ends) +
			bits.OnesCount64(^binary.LittleEndian.Uint64(b[16:])&ends) + bits.OnesCount64(^binary.LittleEndian.Uint64(b[24:])&ends))
		off += 32
	}
	for n >= 8 && off+8 <= len(p.pos) {
		w := binary.LittleEndian.Uint64(p.pos[off:])
		n -= uint64(bits.OnesCount64(^w & ends))
		off += 8
	}
	for ; n > 0 && off < len(p.pos); off++ {
		if p.pos[off] < 0x80 {
			n--
		}
	}
	if n > 0 {
		return p.corrupt("positions section too short to skip %d positions", p.posSkip)
	}
	p.posIdx += p.posSkip
	p.posSkip = 0
	p.posCur, p.posOff = off, off
	return true
}

// consumed records that the current document's positions end at off.
func (p *Postings) consumed(off int) {
	if p.posOff == p.posCur {
		p.posIdx += uint64(p.freq)
	}
	p.posOff = off
}

// rawPositions returns the encoded positions of the current document (a
// sub-slice of the file): merges copy them without decoding, since a
// document's positions do not depend on other documents.
func (p *Postings) rawPositions() ([]byte, error) {
	if p.err != nil || !p.hasPos || p.n == 0 {
		return nil, p.err
	}
	if !p.seekPositions() {
		return nil, p.err
	}
	off := p.posCur
	for i := uint32(0); i < p.freq; i++ {
		var ok bool
		if _, off, ok = codec.UvarintAt(p.pos, off); !ok {
			p.corrupt("bad position varint of doc %d", p.doc)
			return nil, p.err
		}
	}
	p.consumed(off)
	return p.pos[p.posCur:off], nil
}

// Err returns the first corruption met while iterating.
func (p *Postings) Err() error { return p.err }

// checkEnd reports corruption unless every byte of both sections was
// consumed; Validate calls it after reading every document's positions.
func (p *Postings) checkEnd() error {
	if p.err != nil {
		return p.err
	}
	if p.n != p.df || p.off != len(p.docs) {
		p.corrupt("postings decoded %d of %d documents", p.n, p.df)
	} else if p.hasPos && p.posOff != len(p.pos) {
		p.corrupt("positions section has %d trailing bytes", len(p.pos)-p.posOff)
	}
	return p.err
}

// termPostings accumulates one term's postings in a Builder. The docs are
// kept compact while documents arrive, per document uvarint(delta<<1 |
// freqIsOne) then uvarint(freq) when freqIsOne is 0, and are re-encoded
// into blocks by Write (codec.DocsEncoder); positions are already final.
type termPostings struct {
	docs    []byte
	pos     []byte
	lastDoc uint32
	df      uint32
	seen    uint32 // doc id + 1 of the document being added, when touched by it
	freq    uint32 // frequency in the document being added
	lastPos uint32
	docsLen uint64 // length of the encoded docs section, set by Write
	// encoded is set when docs already holds the final docs section (a
	// merge encoded it), not the Builder's compact form.
	encoded bool
}

// addDoc appends the current document's entry (positions were appended as
// they came).
func (t *termPostings) addDoc(doc uint32) int {
	delta := doc
	if t.df > 0 {
		delta = doc - t.lastDoc
	}
	n := len(t.docs)
	v := uint64(delta) << 1
	if t.freq == 1 {
		t.docs = binary.AppendUvarint(t.docs, v|1)
	} else {
		t.docs = binary.AppendUvarint(t.docs, v)
		t.docs = binary.AppendUvarint(t.docs, uint64(t.freq))
	}
	t.lastDoc = doc
	t.df++
	return len(t.docs) - n
}
