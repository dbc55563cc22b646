package segment

import (
	"encoding/binary"

	"github.com/summadev/summa/engine/segid"
)

// Postings iterates the documents of one term in increasing doc id order.
// A Postings is not safe for concurrent use; each call of Reader.Postings
// returns a new one.
//
// Encoding (see doc.go): the docs section holds the term's documents in
// blocks of pforBlock: per full block the doc-id gaps (minus one) as one
// patched bit-packed block, then the frequencies (minus one) as another;
// the last df%pforBlock documents follow as two such shorter blocks when
// they are at least tailPackMin, else per document uvarint((gap-1)<<1 |
// freqIsOne) then uvarint(freq) when freqIsOne is 0. The positions section, present for tokenized fields, holds
// per document freq uvarints: the first position, then gaps (>= 1).
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
	id      segid.ID
	err     error
	bufDocs []uint32 // decoded doc ids, allocated by the first refill
	bufFreq []uint32 // decoded frequencies, allocated by the first refill
}

func (p *Postings) init(d *dict, e termEntry) {
	// Keep the buffers of a reused iterator (merges); the rest restarts.
	docs, freqs := p.bufDocs, p.bufFreq
	*p = Postings{bufDocs: docs, bufFreq: freqs}
	p.docs = d.post[e.postOff : e.postOff+e.docsLen]
	if d.hasPos {
		p.pos = d.post[e.postOff+e.docsLen : e.postOff+e.docsLen+e.posLen]
	}
	p.df, p.numDocs, p.hasPos, p.id, p.posCur = e.df, d.numDocs, d.hasPos, d.id, -1
	p.legacy = d.legacyDocs
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
		if p.off != len(p.docs) {
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

// refill decodes the next block (or the varint tail) of the docs section
// into the buffer, turning gaps into doc ids and checking them.
func (p *Postings) refill() bool {
	left := p.df - p.dec
	if want := int(min(p.df, pforBlock)); cap(p.bufDocs) < want {
		buf := make([]uint32, 2*want)
		p.bufDocs, p.bufFreq = buf[:want:want], buf[want:]
	}
	var k int
	if p.legacy {
		if k = p.refillLegacy(int(min(left, pforBlock))); k == 0 {
			return false
		}
	} else if left >= pforBlock || left >= tailPackMin {
		k = int(min(left, pforBlock))
		off, err := unpackPFor(p.docs, p.off, p.bufDocs[:k])
		if err == nil {
			off, err = unpackPFor(p.docs, off, p.bufFreq[:k])
		}
		if err != nil {
			return p.corrupt("docs block at offset %d: %v", p.off, err)
		}
		p.off = off
	} else {
		k = int(left)
		off := p.off
		for i := 0; i < k; i++ {
			v, next, ok := uvarintAt(p.docs, off)
			if !ok || v>>1 > 1<<32-1 {
				return p.corrupt("bad doc varint at offset %d", off)
			}
			p.bufDocs[i], p.bufFreq[i], off = uint32(v>>1), 0, next
			if v&1 == 0 {
				f, next, ok := uvarintAt(p.docs, off)
				if !ok || f < 2 || f > 1<<32-1 {
					return p.corrupt("bad term frequency at offset %d", off)
				}
				p.bufFreq[i], off = uint32(f-1), next
			}
		}
		p.off = off
	}
	// refill runs once every buffered document was returned, so the last
	// decoded doc id is the current one.
	prev := int64(-1)
	if p.dec > 0 {
		prev = int64(p.doc)
	}
	for i := 0; i < k; i++ {
		doc := prev + 1 + int64(p.bufDocs[i])
		if doc >= int64(p.numDocs) {
			return p.corrupt("doc id %d out of %d documents", doc, p.numDocs)
		}
		if p.bufFreq[i] == 1<<32-1 {
			return p.corrupt("bad term frequency for doc %d", doc)
		}
		p.bufDocs[i], p.bufFreq[i] = uint32(doc), p.bufFreq[i]+1
		prev = doc
	}
	p.dec += uint32(k)
	p.bufI, p.bufN = 0, k
	return true
}

// Advance moves to the first document >= target and reports whether one
// exists. It does not move when the current document is already >= target.
func (p *Postings) Advance(target uint32) bool {
	if p.n > 0 && p.doc >= target && p.err == nil && !p.done {
		return true
	}
	for p.Next() {
		if p.doc >= target {
			return true
		}
	}
	return false
}

// Doc returns the current doc id.
func (p *Postings) Doc() uint32 { return p.doc }

// Freq returns the term's frequency in the current document.
func (p *Postings) Freq() uint32 { return p.freq }

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
		v, next, ok := uvarintAt(p.pos, off)
		if !ok {
			p.corrupt("bad position varint of doc %d", p.doc)
			return dst, p.err
		}
		off = next
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
	p.posOff = off
	return dst, nil
}

// refillLegacy decodes up to n documents of a version 1 docs section
// (per document uvarint(delta<<1 | freqIsOne), then uvarint(freq) when
// freqIsOne is 0; delta is the first doc id, then the gap >= 1) into the
// buffer as gaps minus one and frequencies minus one, like a block. It
// returns the number decoded, 0 on corruption.
func (p *Postings) refillLegacy(n int) int {
	off := p.off
	for i := 0; i < n; i++ {
		v, next, ok := uvarintAt(p.docs, off)
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
			f, next, ok := uvarintAt(p.docs, off)
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
	for ; n > 0 && off < len(p.pos); off++ {
		if p.pos[off] < 0x80 {
			n--
		}
	}
	if n > 0 {
		return p.corrupt("positions section too short to skip %d positions", p.posSkip)
	}
	p.posSkip = 0
	p.posCur = off
	return true
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
		if _, off, ok = uvarintAt(p.pos, off); !ok {
			p.corrupt("bad position varint of doc %d", p.doc)
			return nil, p.err
		}
	}
	p.posOff = off
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
// into blocks by Write (docsEncoder); positions are already final.
type termPostings struct {
	docs    []byte
	pos     []byte
	lastDoc uint32
	df      uint32
	seen    uint32 // doc id + 1 of the document being added, when touched by it
	freq    uint32 // frequency in the document being added
	lastPos uint32
	docsLen uint64 // length of the encoded docs section, set by Write
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
