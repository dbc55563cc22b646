package segment

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/summadev/summa/engine/internal/par"
	"github.com/summadev/summa/engine/segment/codec"
)

// mergedPosting is one rebased posting of a term being merged out of order.
type mergedPosting struct {
	doc  uint32
	freq uint32
	pos  []byte // encoded positions, a sub-slice of the source file
}

// chunkBytes is the postings bytes (summed over the sources) from which a
// field's merge is cut into term ranges merged concurrently (a variable
// for the tests, which cut small merges).
var chunkBytes = 256 << 10

// termChunk is one term range of one field, merged on its own: its terms
// in order with their final docs sections, positions and block-max
// records, which mergeTerms appends to the field's.
type termChunk struct {
	field int
	// only is set when the range is its field's only one: it adds to the
	// field's lengths without atomics (others add to a private slot's, or
	// atomically when the field has no slots).
	only  bool
	rng   dictRange
	names []string
	// nameBytes holds the terms back to back while the range is merged,
	// nameEnds where each ends; names are cut from one string of them at
	// the end (one allocation per range instead of one per term).
	nameBytes []byte
	nameEnds  []int
	terms     []chunkTerm
	docs      []byte   // the terms' docs sections, back to back
	pos       []byte   // the terms' positions, back to back
	bm        []byte   // the terms' block-max records, back to back
	bmEnd     []uint64 // per term: the end of its record in bm
	err       error
}

// chunkTerm is one merged term of a termChunk: where its docs and
// positions sections end in the chunk's buffers (each starts where the
// previous term's ends), and its document frequency. It holds no pointer,
// so the list grows without write barriers; appendChunk turns it into the
// builder's termPostings once the buffers are final.
type chunkTerm struct {
	docsEnd, posEnd int
	df              uint32
}

// fieldMerge is the state mergeTerms shares between the chunks of a field.
type fieldMerge struct {
	ix *indexBuilder
	// lengths is per output document the sum of its frequencies: added
	// to by a field's only chunk, folded from the slots' once the chunks
	// are done, or added to atomically by the chunks when slots is nil.
	lengths []uint32
	// slots lend the chunks of a field cut in several private lengths
	// (nil: one chunk, or atomics; see newDocSlots).
	slots *docSlots
	// norms are the output's field lengths read from the sources' norms
	// (tokenized fields), used by the chunks' block-max records; nil when
	// a source has none, and Write then rebuilds the records.
	norms []uint32
	// bmKind is the field's block-max kind.
	bmKind byte
}

// encodesBlockMax reports whether the chunks encode the field's block-max
// records: always, but for a tokenized field whose norms a source lacks.
func (fm *fieldMerge) encodesBlockMax() bool {
	return fm.bmKind == bmExact || fm.norms != nil
}

// mergeTerms merges every indexed field's dictionaries and postings into
// the builder, and derives norms and row statistics from the frequencies:
// a document's field length is the sum of its terms' frequencies, exactly
// what Builder.Add counts. Postings are encoded in their final form and
// block-max records built as they are merged. Fields with many postings
// are cut into term ranges (splitDicts), and every range of every field
// is merged concurrently (GOMAXPROCS at most).
func (m *merger) mergeTerms() error {
	fields := make([]*fieldMerge, len(m.b.fields))
	var chunks []*termChunk
	for f := range m.b.fields {
		if ix := m.b.fields[f].index; ix != nil {
			var cs []*termChunk
			fields[f], cs = m.planField(f, ix)
			chunks = append(chunks, cs...)
		}
	}
	failed := par.NewMin(len(chunks))
	par.DoUntil(len(chunks), failed.Get, func(i int) {
		c := chunks[i]
		if c.err = m.mergeChunk(c, fields[c.field]); c.err != nil {
			failed.Lower(i)
		}
	})
	for _, c := range chunks {
		if c.err != nil {
			return c.err
		}
	}
	return m.assembleFields(fields, chunks)
}

// planField prepares the merge of field f: the state its chunks share,
// the sources' ordinal maps when the field is reordered, and its term
// ranges (one, or cut by splitDicts when its postings are large), each
// with buffers sized from its share.
func (m *merger) planField(f int, ix *indexBuilder) (*fieldMerge, []*termChunk) {
	fm := &fieldMerge{ix: ix, lengths: make([]uint32, m.b.numDocs), bmKind: bmExact}
	if ix.tokenized {
		fm.bmKind = bmTokenized
		fm.norms = m.sourceNorms(f)
		if fm.norms != nil {
			ix.bmMix = mixRefOf(fm.norms)
		}
	}
	dicts := make([]*dict, len(m.srcs))
	var size, terms int
	for i, r := range m.srcs {
		dicts[i] = r.dicts[f]
		if d := r.dicts[f]; d != nil {
			size += len(d.post)
			terms += int(d.numTerms)
		}
		if ix.reorder {
			m.initOrdMap(i, f)
		}
	}
	n := 1
	if procs := runtime.GOMAXPROCS(0); procs > 1 {
		n = min(max(size/chunkBytes, 1), 8*procs)
	}
	keys := splitDicts(dicts, n)
	fm.slots = newDocSlots(m.b.numDocs, len(keys)+1, 1)
	// A range's share of the postings, and of the terms (sources share
	// many: half their sum is a guess), sizes its buffers.
	hint := size / (len(keys) + 1)
	termsHint := terms / 2 / (len(keys) + 1)
	chunks := make([]*termChunk, 0, len(keys)+1)
	for k := 0; k <= len(keys); k++ {
		c := newTermChunk(f, fm, hint, termsHint, len(m.srcs))
		c.only = len(keys) == 0
		if k > 0 {
			c.rng.lo = keys[k-1]
		}
		if k < len(keys) {
			c.rng.hi = keys[k]
		}
		chunks = append(chunks, c)
	}
	return fm, chunks
}

// initOrdMap makes source i's ordinal map of field f, every entry noDoc
// until a chunk merges the term.
func (m *merger) initOrdMap(i, f int) {
	if m.ordMaps[i] == nil {
		m.ordMaps[i] = make([][]uint32, len(m.s.Fields))
	}
	om := make([]uint32, m.srcs[i].NumTerms(f))
	for k := range om {
		om[k] = noDoc
	}
	m.ordMaps[i][f] = om
}

// newTermChunk allocates a term range of field f with its buffers sized
// from its share of the postings' bytes (hint) and of the terms: the
// block-max records hold every posting's doc offset and frequency in
// bytes, about the postings' size with positions (linux-doc: 9.2 MB for
// 7.4), three times the docs sections without.
func newTermChunk(f int, fm *fieldMerge, hint, termsHint, sources int) *termChunk {
	c := &termChunk{field: f}
	bmHint := 3 * hint
	if fm.ix.tokenized {
		c.docs, c.pos = make([]byte, 0, hint/4), make([]byte, 0, hint)
		bmHint = hint + hint/4
	} else {
		c.docs = make([]byte, 0, hint)
	}
	c.terms = make([]chunkTerm, 0, termsHint)
	c.nameEnds = make([]int, 0, termsHint)
	c.nameBytes = make([]byte, 0, 8*termsHint)
	if fm.encodesBlockMax() {
		c.bm, c.bmEnd = make([]byte, 0, bmHint), make([]uint64, 0, termsHint)
	}
	if fm.ix.reorder {
		c.rng.ords = make([][2]uint32, sources)
	}
	return c
}

// assembleFields puts the merged chunks together, field by field: the
// slots' lengths folded, each field's lists sized once for every chunk's
// terms, the chunks appended in order, and the norms and statistics
// derived.
func (m *merger) assembleFields(fields []*fieldMerge, chunks []*termChunk) error {
	for f, fm := range fields {
		if fm != nil && fm.slots != nil {
			if doc, ok := fm.slots.fold(fm.lengths); !ok {
				return fmt.Errorf("field %d doc %d: frequencies overflow", f, doc)
			}
		}
	}
	terms := make([]int, len(fields))
	for _, c := range chunks {
		terms[c.field] += len(c.terms)
	}
	for f, fm := range fields {
		if fm != nil {
			fm.ix.terms = slices.Grow(fm.ix.terms, terms[f])
			fm.ix.names = slices.Grow(fm.ix.names, terms[f])
			if fm.encodesBlockMax() {
				fm.ix.bmMerged = true
				fm.ix.bmEnds = slices.Grow(fm.ix.bmEnds, terms[f])
			}
		}
	}
	for _, c := range chunks {
		m.appendChunk(c, fields[c.field])
	}
	for f, fm := range fields {
		if fm == nil {
			continue
		}
		if err := m.finishField(f, fm); err != nil {
			return err
		}
	}
	return nil
}

// sourceNorms returns a tokenized field's output norms read from the
// sources' norms columns, or nil when a source lacks the column.
func (m *merger) sourceNorms(f int) []uint32 {
	for _, r := range m.srcs {
		c := r.norms[f]
		if c.width != 1 && c.width != 2 && c.width != 4 || len(c.data) < c.width*int(r.numDocs) {
			return nil
		}
	}
	norms := make([]uint32, len(m.order))
	for n, ref := range m.order {
		norms[n] = m.srcs[ref.Source].norms[f].at(ref.Doc)
	}
	return norms
}

// chunkMerge is the state of one termChunk's merge, reused from term to
// term: the encoders, the current term's output postings, and the
// lengths its frequencies add to.
type chunkMerge struct {
	m     *merger
	c     *termChunk
	fm    *fieldMerge
	p     *Postings
	norm  func(uint32) uint32
	enc   codec.DocsEncoder
	bmEnc bmEncoder
	sec   []byte
	// tdocs and freqs are the current term's output postings in order;
	// out collects them unordered when the merge reorders documents.
	tdocs, freqs []uint32
	out          []mergedPosting
	// lengths is where the frequencies add up: the field's (atomically
	// unless the chunk is the field's only one) or a private slot's.
	lengths    []uint32
	atomically bool
	count      int
}

// mergeChunk merges the terms of one range of a field.
func (m *merger) mergeChunk(c *termChunk, fm *fieldMerge) error {
	dicts := make([]*dict, len(m.srcs))
	for i, r := range m.srcs {
		dicts[i] = r.dicts[c.field]
	}
	cm := &chunkMerge{m: m, c: c, fm: fm, p: new(Postings), lengths: fm.lengths, atomically: !c.only}
	if fm.norms != nil {
		norms := fm.norms
		cm.norm = func(doc uint32) uint32 { return norms[doc] }
	}
	cm.bmEnc.mix = fm.ix.bmMix
	if fm.slots != nil {
		slot := fm.slots.get()
		defer fm.slots.put(slot)
		cm.lengths, cm.atomically = slot.counts[0], false
	}
	err := mergeDictRange(dicts, c.rng, cm.term)
	c.cutNames()
	return err
}

// cutNames cuts the chunk's term names from one string of their bytes
// (one allocation per range instead of one per term).
func (c *termChunk) cutNames() {
	all := string(c.nameBytes)
	c.names = make([]string, len(c.nameEnds))
	start := 0
	for k, end := range c.nameEnds {
		c.names[k] = all[start:end]
		start = end
	}
	c.nameBytes, c.nameEnds = nil, nil
}

// term merges one term: its postings gathered from every source that
// holds it (hits), then encoded into the chunk unless every row holding
// it was dropped.
func (cm *chunkMerge) term(term []byte, hits []dictHit) error {
	cm.count++
	if err := cm.m.check(cm.count); err != nil {
		return err
	}
	cm.tdocs, cm.freqs, cm.out = cm.tdocs[:0], cm.freqs[:0], cm.out[:0]
	posStart := len(cm.c.pos)
	for _, h := range hits {
		if err := cm.gather(h); err != nil {
			return err
		}
	}
	if !cm.m.inOrder {
		cm.sortOut()
	}
	if len(cm.tdocs) == 0 {
		cm.c.pos = cm.c.pos[:posStart]
		return nil // every row holding the term was dropped
	}
	cm.emit(term, hits)
	return nil
}

// gather adds one source's postings of the term, rebased to output doc
// ids, to the term's output. A source whose every row is kept in order
// gives the term's positions section as it is: positions do not depend
// on doc ids, and every document's are kept, in order.
func (cm *chunkMerge) gather(h dictHit) error {
	m, ix, p := cm.m, cm.fm.ix, cm.p
	p.init(h.it.d, h.e)
	ids := m.newID[h.src]
	whole := ix.tokenized && m.inOrder && m.keepsAll[h.src]
	var err error
	if m.inOrder && (whole || !ix.tokenized) {
		err = cm.gatherBlocks(ids) // no positions to cut per document
	} else {
		err = cm.gatherEach(ids)
	}
	if err != nil {
		return err
	}
	if err := p.Err(); err != nil {
		return err
	}
	if whole {
		cm.c.pos = append(cm.c.pos, p.pos...)
	}
	return nil
}

// gatherBlocks takes the source's postings a whole decoded block at a
// time, in order.
func (cm *chunkMerge) gatherBlocks(ids []uint32) error {
	tdocs, freqs := cm.tdocs, cm.freqs
	for {
		docs, fs, ok := cm.p.nextBlock()
		if !ok {
			break
		}
		for k, d := range docs {
			nd := ids[d]
			if nd == noDoc {
				continue
			}
			if !cm.count1(nd, fs[k]) {
				return cm.overflow(nd)
			}
			tdocs, freqs = append(tdocs, nd), append(freqs, fs[k])
		}
	}
	cm.tdocs, cm.freqs = tdocs, freqs
	return nil
}

// gatherEach takes the source's postings one at a time, with their
// positions, appended in order or collected to be sorted.
func (cm *chunkMerge) gatherEach(ids []uint32) error {
	m, c, p, tokenized := cm.m, cm.c, cm.p, cm.fm.ix.tokenized
	for p.Next() {
		nd := ids[p.Doc()]
		if nd == noDoc {
			continue
		}
		var pos []byte
		if tokenized {
			var err error
			if pos, err = p.rawPositions(); err != nil {
				return err
			}
		}
		freq := p.Freq()
		if !cm.count1(nd, freq) {
			return cm.overflow(nd)
		}
		if m.inOrder {
			cm.tdocs, cm.freqs = append(cm.tdocs, nd), append(cm.freqs, freq)
			c.pos = append(c.pos, pos...)
		} else {
			cm.out = append(cm.out, mergedPosting{doc: nd, freq: freq, pos: pos})
		}
	}
	return nil
}

// count1 adds a posting's frequency to its document's field length and
// reports false when the sum overflows.
func (cm *chunkMerge) count1(nd, freq uint32) bool {
	if !cm.atomically {
		cm.lengths[nd] += freq
		return cm.lengths[nd] >= freq
	}
	return atomic.AddUint32(&cm.lengths[nd], freq) >= freq
}

// overflow is the error of a document whose field length overflows.
func (cm *chunkMerge) overflow(nd uint32) error {
	return fmt.Errorf("field %d doc %d: frequencies overflow", cm.c.field, nd)
}

// sortOut puts the postings collected out of order in doc order, with
// their positions.
func (cm *chunkMerge) sortOut() {
	slices.SortFunc(cm.out, func(a, b mergedPosting) int { return cmp.Compare(a.doc, b.doc) })
	for _, o := range cm.out {
		cm.tdocs, cm.freqs = append(cm.tdocs, o.doc), append(cm.freqs, o.freq)
		cm.c.pos = append(cm.c.pos, o.pos...)
	}
}

// emit encodes the term's postings into the chunk: its docs section, its
// name, its block-max record, and the sources' ordinal map entries.
func (cm *chunkMerge) emit(term []byte, hits []dictHit) {
	c, fm := cm.c, cm.fm
	cm.enc.Reset(cm.sec, cm.m.b.numDocs, fm.ix.tokenized)
	cm.enc.AddAll(cm.tdocs, cm.freqs)
	cm.sec = cm.enc.Finish()
	c.docs = append(c.docs, cm.sec...)
	local := uint32(len(c.terms))
	c.terms = append(c.terms, chunkTerm{docsEnd: len(c.docs), posEnd: len(c.pos), df: uint32(len(cm.tdocs))})
	c.nameBytes = append(c.nameBytes, term...)
	c.nameEnds = append(c.nameEnds, len(c.nameBytes))
	if fm.encodesBlockMax() {
		c.bm = cm.bmEnc.encodeText(c.bm, fm.bmKind, cm.tdocs, cm.freqs, cm.norm)
		c.bmEnd = append(c.bmEnd, uint64(len(c.bm)))
	}
	if fm.ix.reorder {
		for _, h := range hits {
			cm.m.ordMaps[h.src][c.field][h.e.ord] = local
		}
	}
}

// appendChunk appends a merged chunk's terms to its field's, renumbering
// the ordinal maps' entries it wrote (chunk-local ordinals) to the
// field's.
func (m *merger) appendChunk(c *termChunk, fm *fieldMerge) {
	ix := fm.ix
	base := uint32(len(ix.terms))
	if ix.reorder && base > 0 {
		for i, o := range c.rng.ords {
			om := m.ordMaps[i][c.field]
			for k := o[0]; k < o[1]; k++ {
				if om[k] != noDoc {
					om[k] += base
				}
			}
		}
	}
	ix.names = append(ix.names, c.names...)
	var docs, pos int
	for _, t := range c.terms {
		ix.terms = append(ix.terms, termPostings{
			docs:    c.docs[docs:t.docsEnd:t.docsEnd],
			pos:     c.pos[pos:t.posEnd:t.posEnd],
			df:      t.df,
			encoded: true,
		})
		docs, pos = t.docsEnd, t.posEnd
	}
	if fm.encodesBlockMax() {
		var bmBase uint64
		if n := len(ix.bmEnds); n > 0 {
			bmBase = ix.bmEnds[n-1]
		}
		ix.bmParts = append(ix.bmParts, c.bm) // the records stay where the chunk wrote them
		for _, e := range c.bmEnd {
			ix.bmEnds = append(ix.bmEnds, bmBase+e)
		}
	}
}

// finishField derives a merged field's norms and statistics from its
// lengths. The norms the chunks' block-max records used come from the
// sources; they must be the lengths the postings hold, else a source is
// corrupt.
func (m *merger) finishField(f int, fm *fieldMerge) error {
	ix := fm.ix
	for n, l := range fm.lengths {
		ix.totalLen += uint64(l)
		if l > 0 {
			ix.docsWith++
		}
		if fm.norms != nil && fm.norms[n] != l {
			ref := m.order[n]
			r := m.srcs[ref.Source]
			return corruptf(r.id, SuffixNorms, "field %d doc %d: length %d, postings hold %d", f, ref.Doc, fm.norms[n], l)
		}
	}
	if ix.tokenized {
		ix.norms = fm.lengths
	}
	return nil
}

// mergeForward copies the reorder fields' per-document term lists in
// output order, mapping source ordinals to the output's, and encodes them
// as the fwd part holds them (Builder.writeForward copies them). The map
// is increasing, so the lists stay sorted.
func (m *merger) mergeForward() error {
	for f := range m.b.fields {
		ix := m.b.fields[f].index
		if ix == nil || !ix.reorder {
			continue
		}
		// The sources' encoded lists bound the output's, give or take
		// the ordinals' widths.
		var size int
		for _, r := range m.srcs {
			size += len(r.fwds[f].data)
		}
		data := make([]byte, 0, size+size/8)
		ends := make([]uint64, 0, len(m.order))
		var ords []uint32
		for n, ref := range m.order {
			if err := m.check(n); err != nil {
				return err
			}
			r := m.srcs[ref.Source]
			var err error
			if ords, err = r.fwds[f].decode(r.id, ref.Doc, ords[:0]); err != nil {
				return err
			}
			om := m.ordMaps[ref.Source][f]
			var prev uint32
			for k, o := range ords {
				if o >= uint32(len(om)) || om[o] == noDoc {
					return corruptf(r.id, SuffixForward, "field %d doc %d lists term %d, which its postings do not hold", f, ref.Doc, o)
				}
				if k == 0 {
					data = binary.AppendUvarint(data, uint64(om[o]))
				} else {
					data = binary.AppendUvarint(data, uint64(om[o]-prev))
				}
				prev = om[o]
			}
			ends = append(ends, uint64(len(data)))
		}
		ix.fwdData, ix.fwdEnds = data, ends
	}
	return nil
}
