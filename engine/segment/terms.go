package segment

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment/codec"
)

// termBlockSize is the number of terms per dictionary block.
const termBlockSize = 32

// maxBlockSize bounds a block size read from disk.
const maxBlockSize = 4096

// blockIndexEntry is the size of one block index entry: the block's offset
// in the field's block bytes and its first term's postings offset in the
// field's postings region, both uint64 LE.
const blockIndexEntry = 16

// dictMeta is a dictionary's directory entry.
type dictMeta struct {
	numTerms   uint32
	blockSize  uint32
	hasPos     bool
	blocksOff  uint64 // payload offset of the blocks
	blocksLen  uint64
	indexOff   uint64 // payload offset of the block index
	postOff    uint64 // payload offset of the postings region (post or vec file)
	postLen    uint64
	sumDocFreq uint64
}

func (m *dictMeta) encode(w *fileWriter) {
	w.uvarint(uint64(m.numTerms))
	w.uvarint(uint64(m.blockSize))
	if m.hasPos {
		w.u8(1)
	} else {
		w.u8(0)
	}
	w.uvarints(m.blocksOff, m.blocksLen, m.indexOff, m.postOff, m.postLen, m.sumDocFreq)
}

func decodeDictMeta(d *decoder) dictMeta {
	var m dictMeta
	m.numTerms = d.u32v()
	m.blockSize = d.u32v()
	switch d.u8() {
	case 0:
	case 1:
		m.hasPos = true
	default:
		d.fail("bad positions flag")
	}
	m.blocksOff = d.uvarint()
	m.blocksLen = d.uvarint()
	m.indexOff = d.uvarint()
	m.postOff = d.uvarint()
	m.postLen = d.uvarint()
	m.sumDocFreq = d.uvarint()
	return m
}

// dictWriter streams one field's dictionary blocks into a file and keeps
// the block index in memory until finish.
type dictWriter struct {
	w       *fileWriter
	meta    dictMeta
	index   []byte
	prev    []byte
	postOff uint64 // relative to the postings region
	scratch []byte
}

func newDictWriter(w *fileWriter, hasPos bool, postOff uint64) *dictWriter {
	return &dictWriter{w: w, meta: dictMeta{
		blockSize: termBlockSize, hasPos: hasPos, blocksOff: w.offset(), postOff: postOff,
	}}
}

// add appends the next term (in strictly increasing order) with its
// document frequency and the lengths of its postings sections.
func (d *dictWriter) add(term string, df uint32, docsLen, posLen uint64) {
	shared := 0
	if d.meta.numTerms%termBlockSize == 0 {
		d.index = binary.LittleEndian.AppendUint64(d.index, d.w.offset()-d.meta.blocksOff)
		d.index = binary.LittleEndian.AppendUint64(d.index, d.postOff)
	} else {
		for shared < len(d.prev) && shared < len(term) && d.prev[shared] == term[shared] {
			shared++
		}
	}
	b := d.scratch[:0]
	b = binary.AppendUvarint(b, uint64(shared))
	b = binary.AppendUvarint(b, uint64(len(term)-shared))
	b = append(b, term[shared:]...)
	b = binary.AppendUvarint(b, uint64(df))
	b = binary.AppendUvarint(b, docsLen)
	if d.meta.hasPos {
		b = binary.AppendUvarint(b, posLen)
	}
	d.w.write(b)
	d.scratch = b
	d.prev = append(d.prev[:0], term...)
	d.postOff += docsLen + posLen
	d.meta.numTerms++
	d.meta.sumDocFreq += uint64(df)
}

// finish writes the block index and returns the dictionary's metadata.
func (d *dictWriter) finish() dictMeta {
	d.meta.blocksLen = d.w.offset() - d.meta.blocksOff
	d.meta.indexOff = d.w.offset()
	d.w.write(d.index)
	d.meta.postLen = d.postOff
	return d.meta
}

// dict reads one field's term dictionary.
type dict struct {
	numTerms   uint32
	blockSize  uint32
	numBlocks  uint32
	hasPos     bool
	sumDocFreq uint64
	blocks     []byte
	index      []byte
	post       []byte // the field's postings region
	numDocs    uint32
	id         segid.ID
	suffix     string // file holding the dictionary
	postSuffix string // file holding the postings
	legacyDocs bool   // docs sections in the version 1 post format
	// firsts is the in-memory index of the blocks' first terms, built once
	// the blocks probed by seekBlock add up to numBlocks (ski rental: a
	// dictionary searched a few times after open never pays for the whole
	// index, a searched one pays at most twice the probes it saves).
	probed     atomic.Uint64
	firstsOnce sync.Once
	firsts     atomic.Pointer[firstTerms]
}

// firstTerms holds every block's first term, in block order, for the
// binary search of seekBlock without decoding a block per probe.
type firstTerms struct {
	data []byte   // the terms, one after the other
	ends []uint32 // per block, the end of its term in data
}

// term returns block b's first term.
func (f *firstTerms) term(b uint32) []byte {
	start := uint32(0)
	if b > 0 {
		start = f.ends[b-1]
	}
	return f.data[start:f.ends[b]]
}

// loadFirsts builds d.firsts from the blocks; it leaves it unset when a
// block is corrupt or the index would be large (seekBlock then probes the
// blocks, reporting the corruption).
func (d *dict) loadFirsts() {
	const maxFirstsBytes = 8 << 20
	f := &firstTerms{ends: make([]uint32, 0, d.numBlocks)}
	for b := uint32(0); b < d.numBlocks; b++ {
		t, err := d.firstTerm(b)
		if err != nil || len(f.data)+len(t) > maxFirstsBytes {
			return
		}
		if b > 0 && string(t) <= string(f.term(b-1)) {
			return // not sorted: probing finds what it finds, as before
		}
		f.data = append(f.data, t...)
		f.ends = append(f.ends, uint32(len(f.data)))
	}
	f.data = slices.Clip(f.data)
	d.firsts.Store(f)
}

// openDict checks a dictionary's metadata against the payloads holding it.
func openDict(m dictMeta, payload, postPayload []byte, numDocs uint32, id segid.ID, suffix, postSuffix string) (*dict, error) {
	d := &dict{numTerms: m.numTerms, blockSize: m.blockSize, hasPos: m.hasPos, sumDocFreq: m.sumDocFreq,
		numDocs: numDocs, id: id, suffix: suffix, postSuffix: postSuffix}
	if m.blockSize == 0 || m.blockSize > maxBlockSize {
		return nil, corruptf(id, suffix, "dictionary block size %d", m.blockSize)
	}
	if m.numTerms > 0 && numDocs == 0 {
		return nil, corruptf(id, suffix, "%d terms in a segment without documents", m.numTerms)
	}
	d.numBlocks = uint32((uint64(m.numTerms) + uint64(m.blockSize) - 1) / uint64(m.blockSize))
	var ok bool
	if d.blocks, ok = subslice(payload, m.blocksOff, m.blocksLen); !ok {
		return nil, corruptf(id, suffix, "dictionary blocks [%d,+%d) outside payload", m.blocksOff, m.blocksLen)
	}
	if d.index, ok = subslice(payload, m.indexOff, uint64(d.numBlocks)*blockIndexEntry); !ok {
		return nil, corruptf(id, suffix, "dictionary block index of %d blocks outside payload", d.numBlocks)
	}
	if d.post, ok = subslice(postPayload, m.postOff, m.postLen); !ok {
		return nil, corruptf(id, postSuffix, "postings region [%d,+%d) outside payload", m.postOff, m.postLen)
	}
	if m.numTerms > 0 && (uint64(len(d.blocks)) < uint64(m.numTerms)*3 || uint64(len(d.post)) < uint64(m.numTerms)) {
		return nil, corruptf(id, suffix, "%d terms cannot fit %d dictionary bytes", m.numTerms, len(d.blocks))
	}
	return d, nil
}

// termEntry is one decoded dictionary entry.
type termEntry struct {
	ord     uint32
	df      uint32
	postOff uint64 // in the field's postings region
	docsLen uint64
	posLen  uint64
}

// block returns the bytes of block b and its first term's postings offset.
func (d *dict) block(b uint32) ([]byte, uint64, error) {
	e := d.index[uint64(b)*blockIndexEntry:]
	start := binary.LittleEndian.Uint64(e)
	postOff := binary.LittleEndian.Uint64(e[8:])
	end := uint64(len(d.blocks))
	if b+1 < d.numBlocks {
		end = binary.LittleEndian.Uint64(d.index[uint64(b+1)*blockIndexEntry:])
	}
	if start > end || end > uint64(len(d.blocks)) {
		return nil, 0, corruptf(d.id, d.suffix, "dictionary block %d spans [%d,%d) of %d bytes", b, start, end, len(d.blocks))
	}
	if postOff > uint64(len(d.post)) {
		return nil, 0, corruptf(d.id, d.suffix, "dictionary block %d postings offset %d past region of %d", b, postOff, len(d.post))
	}
	return d.blocks[start:end], postOff, nil
}

// firstTerm returns the first term of block b (a sub-slice of the file).
func (d *dict) firstTerm(b uint32) ([]byte, error) {
	data, _, err := d.block(b)
	if err != nil {
		return nil, err
	}
	shared, off, ok := codec.UvarintAt(data, 0)
	if !ok || shared != 0 {
		return nil, corruptf(d.id, d.suffix, "dictionary block %d does not start with a full term", b)
	}
	n, off, ok := codec.UvarintAt(data, off)
	if !ok || n > uint64(len(data)-off) {
		return nil, corruptf(d.id, d.suffix, "dictionary block %d: bad first term length", b)
	}
	return data[off : off+int(n)], nil
}

// blockCursor decodes the entries of one block in order.
type blockCursor struct {
	d       *dict
	data    []byte
	off     int
	left    uint32 // entries left in the block
	postOff uint64
	e       termEntry
}

// reset positions the cursor before the first entry of block b.
func (c *blockCursor) reset(d *dict, b uint32) error {
	data, postOff, err := d.block(b)
	if err != nil {
		return err
	}
	c.d, c.data, c.off, c.postOff = d, data, 0, postOff
	c.left = min(d.blockSize, d.numTerms-b*d.blockSize)
	c.e.ord = b * d.blockSize
	return nil
}

// next decodes the next entry, rebuilding its term from term (the previous
// term of the block, or anything when at the block's start) and returning
// it; ok is false at the end of the block. Taking and returning the term
// buffer lets callers keep it on their stack.
func (c *blockCursor) next(term []byte) (_ []byte, ok bool, err error) {
	if c.left == 0 {
		return term, false, nil
	}
	d := c.d
	first := c.off == 0
	shared, off, ok := codec.UvarintAt(c.data, c.off)
	if !ok || (!first && shared > uint64(len(term))) || (first && shared != 0) {
		return term, false, corruptf(d.id, d.suffix, "term %d: bad shared prefix length", c.e.ord)
	}
	n, off, ok := codec.UvarintAt(c.data, off)
	if !ok || n > uint64(len(c.data)-off) {
		return term, false, corruptf(d.id, d.suffix, "term %d: bad suffix length", c.e.ord)
	}
	term = append(term[:shared], c.data[off:off+int(n)]...)
	off += int(n)
	df, off, ok1 := codec.UvarintAt(c.data, off)
	docsLen, off, ok2 := codec.UvarintAt(c.data, off)
	var posLen uint64
	ok3 := true
	if d.hasPos {
		posLen, off, ok3 = codec.UvarintAt(c.data, off)
	}
	if !ok1 || !ok2 || !ok3 {
		return term, false, corruptf(d.id, d.suffix, "term %d: truncated entry", c.e.ord)
	}
	if err := d.checkEntry(c.e.ord, df, c.postOff, docsLen, posLen); err != nil {
		return term, false, err
	}
	if !first {
		c.e.ord++
	}
	c.e.df, c.e.postOff, c.e.docsLen, c.e.posLen = uint32(df), c.postOff, docsLen, posLen
	c.postOff += docsLen + posLen
	c.off = off
	c.left--
	return term, true, nil
}

// lookup finds term in the dictionary. It scans one block without
// rebuilding the terms it passes: it tracks the common prefix of term and
// the current entry, so an entry sharing more with its predecessor than
// that prefix is skipped unread and one sharing less ends the search
// (front coding keeps the entries sorted). The entry found gets the full
// checks of blockCursor.next; the entries skipped only those that keep
// the scan in bounds (Validate checks them all).
func (d *dict) lookup(term string) (termEntry, bool, error) {
	b, err := d.seekBlock(term)
	if err != nil || b < 0 {
		return termEntry{}, false, err
	}
	data, postOff, err := d.block(uint32(b))
	if err != nil {
		return termEntry{}, false, err
	}
	ord := uint32(b) * d.blockSize
	left := min(d.blockSize, d.numTerms-ord)
	off, matched, prevLen := 0, 0, uint64(0)
	for i := uint32(0); i < left; i++ {
		shared, o, ok := codec.UvarintAt(data, off)
		if !ok || shared > prevLen || (i == 0 && shared != 0) {
			return termEntry{}, false, corruptf(d.id, d.suffix, "term %d: bad shared prefix length", ord+i)
		}
		n, o, ok := codec.UvarintAt(data, o)
		if !ok || n > uint64(len(data)-o) {
			return termEntry{}, false, corruptf(d.id, d.suffix, "term %d: bad suffix length", ord+i)
		}
		suffix := data[o : o+int(n)]
		o += int(n)
		df, o, ok1 := codec.UvarintAt(data, o)
		docsLen, o, ok2 := codec.UvarintAt(data, o)
		var posLen uint64
		ok3 := true
		if d.hasPos {
			posLen, o, ok3 = codec.UvarintAt(data, o)
		}
		if !ok1 || !ok2 || !ok3 {
			return termEntry{}, false, corruptf(d.id, d.suffix, "term %d: truncated entry", ord+i)
		}
		off, prevLen = o, shared+n
		entryOff := postOff
		postOff += docsLen + posLen
		switch {
		case int(shared) < matched:
			return termEntry{}, false, nil // this entry is past term
		case int(shared) > matched:
			continue // this entry is still before term
		}
		rest := term[matched:]
		l := 0
		for l < len(suffix) && l < len(rest) && suffix[l] == rest[l] {
			l++
		}
		switch {
		case l == len(suffix) && l == len(rest):
			if err := d.checkEntry(ord+i, df, entryOff, docsLen, posLen); err != nil {
				return termEntry{}, false, err
			}
			return termEntry{ord: ord + i, df: uint32(df), postOff: entryOff, docsLen: docsLen, posLen: posLen}, true, nil
		case l == len(suffix) || (l < len(rest) && suffix[l] < rest[l]):
			matched += l // the entry is before term
		default:
			return termEntry{}, false, nil
		}
	}
	return termEntry{}, false, nil
}

// checkEntry checks a decoded entry (blockCursor.next, lookup): its
// document frequency against the segment and its postings length, and its
// postings range against the field's region.
func (d *dict) checkEntry(ord uint32, df, postOff, docsLen, posLen uint64) error {
	if df == 0 || df > uint64(d.numDocs) || docsLen < codec.MinDocsLen(df) {
		return corruptf(d.id, d.suffix, "term %d: document frequency %d with %d postings bytes in %d documents", ord, df, docsLen, d.numDocs)
	}
	region := uint64(len(d.post))
	if postOff > region || docsLen > region-postOff || posLen > region-postOff-docsLen {
		return corruptf(d.id, d.suffix, "term %d: postings [%d,+%d+%d) outside region of %d", ord, postOff, docsLen, posLen, region)
	}
	return nil
}

// seekBlock returns the last block whose first term is <= term, or -1.
func (d *dict) seekBlock(term string) (int, error) {
	lo, hi := uint32(0), d.numBlocks
	if f := d.firsts.Load(); f != nil {
		for lo < hi {
			mid := lo + (hi-lo)/2
			if string(f.term(mid)) > term {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		return int(lo) - 1, nil
	}
	if d.probed.Add(uint64(bits.Len32(hi))) >= uint64(hi) {
		d.firstsOnce.Do(d.loadFirsts)
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		ft, err := d.firstTerm(mid)
		if err != nil {
			return -1, err
		}
		if string(ft) > term {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return int(lo) - 1, nil
}

// postings returns a postings iterator for an entry.
func (d *dict) postings(e termEntry) *Postings {
	p := &Postings{}
	p.init(d, e)
	return p
}

// TermIterator walks one field's terms in sorted order. It is not safe for
// concurrent use; create one per goroutine.
type TermIterator struct {
	d       *dict
	c       blockCursor
	term    []byte
	block   uint32
	started bool // c is positioned inside block
	has     bool // c holds a term
	prev    []byte
	err     error
	done    bool
}

// Next advances to the next term.
func (it *TermIterator) Next() bool {
	if it.d == nil || it.done || it.err != nil {
		return false
	}
	d := it.d
	if it.has {
		it.prev = append(it.prev[:0], it.term...)
	}
	for {
		if !it.started {
			if it.block >= d.numBlocks {
				it.done = true
				return false
			}
			if err := it.c.reset(d, it.block); err != nil {
				it.err = err
				return false
			}
			it.started = true
		}
		var ok bool
		var err error
		it.term, ok, err = it.c.next(it.term)
		if err != nil {
			it.err = err
			return false
		}
		if ok {
			if it.has && string(it.term) <= string(it.prev) {
				it.err = corruptf(d.id, d.suffix, "term %d is not greater than its predecessor", it.c.e.ord)
				return false
			}
			it.has = true
			return true
		}
		// End of block: the block must be fully consumed and its postings
		// must end where the next block's begin.
		if it.c.off != len(it.c.data) {
			it.err = corruptf(d.id, d.suffix, "dictionary block %d has %d trailing bytes", it.block, len(it.c.data)-it.c.off)
			return false
		}
		endPost := it.c.postOff
		it.block++
		it.started = false
		if it.block < d.numBlocks {
			_, postOff, err := d.block(it.block)
			if err != nil {
				it.err = err
				return false
			}
			if postOff != endPost {
				it.err = corruptf(d.id, d.suffix, "dictionary block %d postings offset %d, previous block ends at %d", it.block, postOff, endPost)
				return false
			}
		} else if endPost != uint64(len(d.post)) {
			it.err = corruptf(d.id, d.postSuffix, "postings region of %d bytes, dictionary covers %d", len(d.post), endPost)
			return false
		}
	}
}

// Seek positions the iterator on the first term >= term; Next then moves
// past it. It returns false when no such term exists.
func (it *TermIterator) Seek(term string) bool {
	if it.d == nil || it.err != nil {
		return false
	}
	b, err := it.d.seekBlock(term)
	if err != nil {
		it.err = err
		return false
	}
	it.block, it.started, it.done, it.has = uint32(max(b, 0)), false, false, false
	for it.Next() {
		if string(it.term) >= term {
			return true
		}
	}
	return false
}

// Term returns the current term.
func (it *TermIterator) Term() string { return string(it.term) }

// TermBytes returns the current term; the bytes are valid until Next.
func (it *TermIterator) TermBytes() []byte { return it.term }

// Ordinal returns the current term's position in the field's sorted terms.
func (it *TermIterator) Ordinal() uint32 { return it.c.e.ord }

// DocFreq returns the number of documents holding the current term.
func (it *TermIterator) DocFreq() uint32 { return it.c.e.df }

// Postings returns the current term's postings.
func (it *TermIterator) Postings() *Postings { return it.d.postings(it.c.e) }

// Err returns the first corruption met.
func (it *TermIterator) Err() error { return it.err }

// DocsBytes returns the size of the current term's docs section (doc ids
// and frequencies, without positions).
func (it *TermIterator) DocsBytes() uint64 { return it.c.e.docsLen }
