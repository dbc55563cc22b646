package segment

import (
	"encoding/binary"

	"github.com/summadev/summa/engine/segid"
)

// Postings iterates the documents of one term in increasing doc id order.
// A Postings is not safe for concurrent use; each call of Reader.Postings
// returns a new one.
//
// Encoding (see doc.go): the docs section holds, per document,
// uvarint(delta<<1 | freqIsOne) and, when freqIsOne is 0, uvarint(freq);
// delta is the doc id for the first document and the gap from the previous
// doc id (>= 1) after. The positions section, present for tokenized fields,
// holds per document freq uvarints: the first position, then gaps (>= 1).
type Postings struct {
	docs    []byte
	pos     []byte
	off     int
	df      uint32
	n       uint32 // documents decoded so far
	done    bool   // Next returned false
	doc     uint32
	freq    uint32
	numDocs uint32
	hasPos  bool
	posOff  int    // offset in pos of the first position not yet consumed
	posSkip uint64 // positions of passed documents not yet skipped
	posCur  int    // offset of the current document's positions, or -1
	id      segid.ID
	err     error
}

func (p *Postings) init(d *dict, e termEntry) {
	p.docs = d.post[e.postOff : e.postOff+e.docsLen]
	if d.hasPos {
		p.pos = d.post[e.postOff+e.docsLen : e.postOff+e.docsLen+e.posLen]
	}
	p.df, p.numDocs, p.hasPos, p.id, p.posCur = e.df, d.numDocs, d.hasPos, d.id, -1
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
	if p.hasPos && p.n > 0 && p.posCur < 0 {
		p.posSkip += uint64(p.freq)
	}
	p.posCur = -1
	var v uint64
	if p.off < len(p.docs) && p.docs[p.off] < 0x80 {
		v = uint64(p.docs[p.off])
		p.off++
	} else {
		x, k := binary.Uvarint(p.docs[p.off:])
		if k <= 0 {
			return p.corrupt("bad doc varint at offset %d", p.off)
		}
		v = x
		p.off += k
	}
	delta := v >> 1
	doc := delta
	if p.n > 0 {
		if delta == 0 {
			return p.corrupt("doc ids not increasing after %d", p.doc)
		}
		doc = uint64(p.doc) + delta
	}
	if doc >= uint64(p.numDocs) {
		return p.corrupt("doc id %d out of %d documents", doc, p.numDocs)
	}
	p.doc = uint32(doc)
	if v&1 != 0 {
		p.freq = 1
	} else {
		f, off, ok := uvarintAt(p.docs, p.off)
		if !ok || f == 0 || f > 1<<32-1 {
			return p.corrupt("bad term frequency for doc %d", doc)
		}
		p.freq = uint32(f)
		p.off = off
	}
	p.n++
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
	if p.posCur < 0 {
		off := p.posOff
		if p.posSkip > uint64(len(p.pos)-off) {
			p.corrupt("positions section too short to skip %d positions", p.posSkip)
			return dst, p.err
		}
		n := p.posSkip
		for ; n > 0 && off < len(p.pos); off++ {
			if p.pos[off] < 0x80 {
				n--
			}
		}
		if n > 0 {
			p.corrupt("positions section too short to skip %d positions", p.posSkip)
			return dst, p.err
		}
		p.posSkip = 0
		p.posCur = off
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

// termPostings accumulates one term's postings in a Builder, already in
// their final encoding.
type termPostings struct {
	docs    []byte
	pos     []byte
	lastDoc uint32
	df      uint32
	seen    uint32 // doc id + 1 of the document being added, when touched by it
	freq    uint32 // frequency in the document being added
	lastPos uint32
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
