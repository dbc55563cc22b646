package segment

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Block-max file (kind "bmax", see doc.go): per indexed field and term, the
// term's postings cut into fixed-size doc-id blocks, each with an upper
// bound of what the term can contribute to a score in that block. Search
// uses it for block-max pruning (BMP): it sums the bounds of the query's
// terms per block, visits blocks best bound first and stops when no block
// left can enter the top-k.
//
// BM25 depends on collection statistics (idf, average field length) that
// differ between snapshots, so the file cannot hold scores. It holds, per
// term and block, the largest term frequency and the smallest ratio field
// length / term frequency of the block's documents. A document's BM25
// contribution is w·tf/(tf + A + B·dl) = w/(1 + A/tf + B·dl/tf) with w, A,
// B >= 0 fixed per query, so 1/(1 + A/maxTF + B·minRatio) bounds every
// document of the block whatever the statistics are. Both are stored in one
// byte each, rounded so that the bound only grows: frequencies above 254
// saturate (code 255 bounds A/tf by 0), ratios are stored on a log scale
// rounded down. Sparse vector weights may be negative: a block stores the
// largest and smallest weight on a signed 8-bit scale of the dimension's
// largest absolute weight, rounded outwards.

// BlockShift is log2 of the documents per block.
const BlockShift = 6

// blockDocs is the number of documents per block.
const blockDocs = 1 << BlockShift

// Kinds of block-max fields.
const (
	bmExact     = 1 // keyword and numeric fields: no field length
	bmTokenized = 2 // text fields: field lengths from the norms
	bmSparse    = 3 // sparse vector fields: float32 weights
)

// tfCodeSaturated is the frequency code meaning "255 or more".
const tfCodeSaturated = 255

// bmPosting is one decoded posting fed to the record encoder: a doc id and
// either a frequency (text) or a weight (sparse).
type bmPosting struct {
	doc uint32
	tf  uint32
	w   float32
}

// encodeBlockRecord appends the block-max record of one term to dst (see
// doc.go). norm returns a document's field length (tokenized fields only);
// mix is a tokenized field's reference (zero: no mix codes).
func encodeBlockRecord(dst []byte, kind byte, ps []bmPosting, norm func(uint32) uint32, mix mixRef) []byte {
	e := bmEncoder{mix: mix}
	return e.encode(dst, kind, ps, norm)
}

// bmEncoder encodes block-max records, reusing its buffers from one record
// to the next.
type bmEncoder struct {
	entries, data []byte
	// docs and freqs hold the postings of encodeTextBlocks split in
	// columns (encodeTextCols).
	docs, freqs []uint32
	// mix is the tokenized field's reference coefficients (blockmax_mix.go);
	// zero for other fields.
	mix mixRef
	// noSupers writes records without superblock tables (format versions
	// 1 to 3, for the tests that write them).
	noSupers bool
	// supers holds the superblock table of the record being written.
	supers []byte
}

// encodeText is encode for a text or exact field's postings given as
// columns: doc ids and their frequencies (the same length, at least 1).
func (e *bmEncoder) encodeText(dst []byte, kind byte, docs, freqs []uint32, norm func(uint32) uint32) []byte {
	if len(docs) == 1 {
		return encodeOneRecord(dst, kind, bmPosting{doc: docs[0], tf: freqs[0]}, norm, e.mix)
	}
	return e.encodeTextCols(dst, kind == bmTokenized, docs, freqs, norm)
}

// encode is encodeBlockRecord with e's buffers.
func (e *bmEncoder) encode(dst []byte, kind byte, ps []bmPosting, norm func(uint32) uint32) []byte {
	if len(ps) == 1 && kind != bmSparse {
		return encodeOneRecord(dst, kind, ps[0], norm, e.mix)
	}
	return e.encodeBlocks(dst, kind, ps, norm)
}

// encodeOneRecord is encode for a text or exact term of one posting, most
// terms: one block, no buffers.
func encodeOneRecord(dst []byte, kind byte, p bmPosting, norm func(uint32) uint32, mix mixRef) []byte {
	dataLen := 1 + uvarintLen(uint64(p.tf))
	entriesLen := uvarintLen(uint64(p.doc>>BlockShift)) + 2 + uvarintLen(uint64(dataLen))
	if kind == bmTokenized {
		entriesLen++
		if mix.on() {
			entriesLen++
		}
	}
	dst = append(dst, 1) // one block
	dst = binary.AppendUvarint(dst, uint64(entriesLen))
	dst = binary.AppendUvarint(dst, uint64(p.doc>>BlockShift))
	dst = append(dst, tfCode(p.tf))
	if kind == bmTokenized {
		dl := norm(p.doc)
		dst = append(dst, ratioCode(dl, p.tf))
		if mix.on() {
			dst = append(dst, mix.code(mix.value(dl, p.tf)))
		}
	}
	dst = append(dst, 0) // one document
	dst = binary.AppendUvarint(dst, uint64(dataLen))
	dst = append(dst, byte(p.doc&(blockDocs-1)))
	return binary.AppendUvarint(dst, uint64(p.tf))
}

// uvarintLen returns the length of v's uvarint encoding.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// encodeBlocks is encode for any postings.
func (e *bmEncoder) encodeBlocks(dst []byte, kind byte, ps []bmPosting, norm func(uint32) uint32) []byte {
	if kind != bmSparse {
		return e.encodeTextBlocks(dst, kind == bmTokenized, ps, norm)
	}
	return e.encodeAnyBlocks(dst, kind, ps, norm)
}

// encodeAnyBlocks encodes the records of every kind: sparse fields' (text
// fields take encodeTextBlocks, which writes the same bytes faster; the
// tests compare the two).
func (e *bmEncoder) encodeAnyBlocks(dst []byte, kind byte, ps []bmPosting, norm func(uint32) uint32) []byte {
	var scale float32
	if kind == bmSparse {
		for _, p := range ps {
			scale = max(scale, float32(math.Abs(float64(p.w))))
		}
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(scale))
	}
	entries, data := e.entries[:0], e.data[:0]
	nBlocks := 0
	prev := uint32(0)
	for i := 0; i < len(ps); {
		block := ps[i].doc >> BlockShift
		j := i
		for j < len(ps) && ps[j].doc>>BlockShift == block {
			j++
		}
		gap := block
		if nBlocks > 0 {
			gap = block - prev
		}
		prev = block
		nBlocks++
		entries = binary.AppendUvarint(entries, uint64(gap))
		start := len(data)
		for _, p := range ps[i:j] {
			data = append(data, byte(p.doc&(blockDocs-1)))
		}
		switch kind {
		case bmSparse:
			hi, lo := ps[i].w, ps[i].w
			for _, p := range ps[i:j] {
				hi, lo = max(hi, p.w), min(lo, p.w)
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(p.w))
			}
			up, down := weightLevels(hi, lo, scale)
			entries = append(entries, byte(up), byte(down))
		default:
			var maxTF uint32
			minDL, minTF := uint32(math.MaxUint32), uint32(1)
			minMix := math.Inf(1)
			for _, p := range ps[i:j] {
				maxTF = max(maxTF, p.tf)
				if kind == bmTokenized {
					dl := norm(p.doc)
					minDL, minTF = minRatio(minDL, minTF, dl, p.tf)
					minMix = min(minMix, e.mix.value(dl, p.tf))
				}
				data = binary.AppendUvarint(data, uint64(p.tf))
			}
			entries = appendTextCodes(entries, kind == bmTokenized, maxTF, minDL, minTF)
			if kind == bmTokenized && e.mix.on() {
				entries = append(entries, e.mix.code(minMix))
			}
		}
		entries = appendBlockEnd(entries, j-i, len(data)-start)
		i = j
	}
	return e.record(dst, kind, nBlocks, entries, data)
}

// encodeTextBlocks is encodeBlocks for a text or exact field (tokenized:
// with field lengths): the same bytes, in one pass over each block's
// postings (encodeTextCols).
func (e *bmEncoder) encodeTextBlocks(dst []byte, tokenized bool, ps []bmPosting, norm func(uint32) uint32) []byte {
	docs, freqs := e.docs[:0], e.freqs[:0]
	for _, p := range ps {
		docs, freqs = append(docs, p.doc), append(freqs, p.tf)
	}
	e.docs, e.freqs = docs, freqs
	return e.encodeTextCols(dst, tokenized, docs, freqs, norm)
}

// encodeTextCols is encodeTextBlocks for postings given as columns.
func (e *bmEncoder) encodeTextCols(dst []byte, tokenized bool, docs, freqs []uint32, norm func(uint32) uint32) []byte {
	freqs = freqs[:len(docs)]
	entries, data := e.entries[:0], e.data[:0]
	nBlocks := 0
	prev := uint32(0)
	for i := 0; i < len(docs); {
		block, j, gap := nextDocBlock(docs, i, prev, nBlocks == 0)
		prev = block
		nBlocks++
		entries = binary.AppendUvarint(entries, uint64(gap))
		// The block's doc offsets, then its frequencies: the offsets take
		// one byte each, so the frequencies start j-i bytes on.
		start := len(data)
		data = slices.Grow(data, binary.MaxVarintLen32*(j-i))[:start+j-i]
		offs := data[start:]
		var maxTF uint32
		minDL, minTF := uint32(math.MaxUint32), uint32(1)
		minMix := math.Inf(1)
		mixed := tokenized && e.mix.on()
		bf := freqs[i:j]
		for k, doc := range docs[i:j] {
			offs[k] = byte(doc & (blockDocs - 1))
			tf := bf[k]
			maxTF = max(maxTF, tf)
			if tf < 0x80 {
				data = append(data, byte(tf))
			} else {
				data = binary.AppendUvarint(data, uint64(tf))
			}
			if tokenized {
				dl := norm(doc)
				minDL, minTF = minRatio(minDL, minTF, dl, tf)
				if mixed {
					minMix = min(minMix, e.mix.value(dl, tf))
				}
			}
		}
		entries = appendTextCodes(entries, tokenized, maxTF, minDL, minTF)
		if mixed {
			entries = append(entries, e.mix.code(minMix))
		}
		entries = appendBlockEnd(entries, j-i, len(data)-start)
		i = j
	}
	kind := byte(bmExact)
	if tokenized {
		kind = bmTokenized
	}
	return e.record(dst, kind, nBlocks, entries, data)
}

// minRatio is the smaller of the ratios minDL/minTF and dl/tf, found
// exactly by cross-multiplying; a zero frequency (code 0, as a zero ratio)
// counts as 0/1. ratioCode grows with dl/tf, so a block's code is the code
// of its smallest ratio.
func minRatio(minDL, minTF, dl, tf uint32) (uint32, uint32) {
	if tf == 0 {
		dl, tf = 0, 1
	}
	if uint64(dl)*uint64(minTF) < uint64(minDL)*uint64(tf) {
		return dl, tf
	}
	return minDL, minTF
}

// appendTextCodes appends the codes of a text or exact field's block entry:
// its largest frequency and, for a tokenized field, its smallest ratio of
// field length to frequency.
func appendTextCodes(entries []byte, tokenized bool, maxTF, minDL, minTF uint32) []byte {
	entries = append(entries, tfCode(maxTF))
	if tokenized {
		entries = append(entries, ratioCode(minDL, minTF))
	}
	return entries
}

// appendBlockEnd appends the end of a block's entry: its number of docs
// minus one, then the length of its data.
func appendBlockEnd(entries []byte, docs, dataLen int) []byte {
	entries = append(entries, byte(docs-1))
	return binary.AppendUvarint(entries, uint64(dataLen))
}

// record keeps entries and data as e's buffers for the next term and
// appends the term's record of the given kind to dst: its number of
// blocks, the entries' length, its superblock table when it has one
// (blockmax_super.go: its length, then the table), the entries, then the
// data.
func (e *bmEncoder) record(dst []byte, kind byte, nBlocks int, entries, data []byte) []byte {
	e.entries, e.data = entries, data
	dst = binary.AppendUvarint(dst, uint64(nBlocks))
	dst = binary.AppendUvarint(dst, uint64(len(entries)))
	if l := (bmLayout{kind: kind, mix: e.mix, supers: !e.noSupers}); l.hasSupers(nBlocks) {
		e.supers, _ = appendSupers(e.supers[:0], entries, nBlocks, l.boundBytes())
		dst = binary.AppendUvarint(dst, uint64(len(e.supers))) // 0: no table
		dst = append(dst, e.supers...)
	}
	dst = append(dst, entries...)
	return append(dst, data...)
}

// nextDocBlock returns the block of docs[i], the index just past its
// last doc in docs, and its gap from the previous block prev (the block
// itself for the first).
func nextDocBlock(docs []uint32, i int, prev uint32, first bool) (block uint32, j int, gap uint32) {
	block = docs[i] >> BlockShift
	j = i + 1
	for j < len(docs) && docs[j]>>BlockShift == block {
		j++
	}
	gap = block - prev
	if first {
		gap = block
	}
	return block, j, gap
}

// bmFieldKind returns the block-max kind of a builder field, 0 for none.
func bmFieldKind(fb *fieldBuilder) byte {
	switch {
	case fb.sparse != nil:
		return bmSparse
	case fb.index == nil:
		return 0
	case fb.index.tokenized:
		return bmTokenized
	}
	return bmExact
}

// writeBlockMax writes the bmax file from the builder's postings: per field
// its term records then its offset table; then the directory.
func (b *Builder) writeBlockMax(ctx context.Context, w *fileWriter, sorted []sortedTerms) error {
	var dir []byte
	nFields := 0
	for i := range b.fields {
		fb := &b.fields[i]
		kind := bmFieldKind(fb)
		if kind == 0 {
			continue
		}
		recOff := w.offset()
		var offs []uint64
		var err error
		mix := fieldMix(fb, kind)
		if ix := fb.index; kind != bmSparse && ix.bmMerged && sorted[i].identity {
			offs, err = writeMergedRecords(ctx, w, ix)
		} else {
			offs, err = b.writeRecords(ctx, w, fb, kind, sorted[i], mix)
		}
		if err != nil {
			return err
		}
		recLen := w.offset() - recOff
		offs = append(offs, recLen)
		tableOff := w.offset()
		width := bmTableWidth(recLen)
		tbl := make([]byte, 0, width*len(offs))
		for _, o := range offs {
			if width == 4 {
				tbl = binary.LittleEndian.AppendUint32(tbl, uint32(o))
			} else {
				tbl = binary.LittleEndian.AppendUint64(tbl, o)
			}
		}
		w.write(tbl)
		dir = binary.AppendUvarint(dir, uint64(i))
		dir = append(dir, kind)
		dir = binary.AppendUvarint(dir, uint64(len(offs)-1))
		dir = binary.AppendUvarint(dir, recOff)
		dir = binary.AppendUvarint(dir, recLen)
		dir = binary.AppendUvarint(dir, tableOff)
		dir = append(dir, byte(width))
		if kind == bmTokenized {
			dir = binary.LittleEndian.AppendUint64(dir, math.Float64bits(mix.a))
			dir = binary.LittleEndian.AppendUint64(dir, math.Float64bits(mix.b))
		}
		nFields++
	}
	w.beginDirectory()
	w.uvarint(uint64(b.numDocs))
	w.uvarint(BlockShift)
	w.uvarint(uint64(nFields))
	w.write(dir)
	return w.err
}

// bmTableWidth is the width of a field's record offsets: 4 bytes when
// its records end below 4 GiB, else 8 (format version 2; version 1 files
// always have 8, legacyBlockMaxVersion).
func bmTableWidth(recLen uint64) int {
	if recLen <= math.MaxUint32 {
		return 4
	}
	return 8
}

// writeMergedRecords writes the records a merge encoded for a field whose
// terms are in dictionary order already: its parts as they are, one write
// each. It returns every record's start (the offset table but its end).
func writeMergedRecords(ctx context.Context, w *fileWriter, ix *indexBuilder) ([]uint64, error) {
	var n uint64
	for _, part := range ix.bmParts {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("segment: write block maxima: %w", err)
		}
		w.write(part)
		n += uint64(len(part))
	}
	var end uint64
	if len(ix.bmEnds) > 0 {
		end = ix.bmEnds[len(ix.bmEnds)-1]
	}
	if len(ix.bmEnds) != len(ix.names) || end != n {
		return nil, fmt.Errorf("segment: write block maxima: %d records ending at %d for %d terms in %d bytes",
			len(ix.bmEnds), end, len(ix.names), n)
	}
	offs := make([]uint64, len(ix.bmEnds), len(ix.bmEnds)+1)
	for k := 1; k < len(offs); k++ {
		offs[k] = ix.bmEnds[k-1]
	}
	return offs, nil
}

// writeRecords writes one field's block-max records in dictionary order,
// encoding them from the postings with mix codes of reference mix (or
// copying a merge's) and returns every record's start.
func (b *Builder) writeRecords(ctx context.Context, w *fileWriter, fb *fieldBuilder, kind byte, st sortedTerms, mix mixRef) ([]uint64, error) {
	var norm func(uint32) uint32
	var lists [][]byte // encoded postings in dictionary order
	var dfs []uint32
	var encoded []bool
	var pre [][]byte // records a merge encoded, in dictionary order
	if kind == bmSparse {
		order := make([]uint32, len(fb.sparse.dims))
		for k := range order {
			order[k] = uint32(k)
		}
		slices.SortFunc(order, func(x, y uint32) int { return strings.Compare(fb.sparse.dims[x], fb.sparse.dims[y]) })
		for _, k := range order {
			lists = append(lists, fb.sparse.posts[k].data)
			dfs = append(dfs, fb.sparse.posts[k].df)
		}
	} else {
		ix := fb.index
		var recs []byte
		if ix.bmMerged {
			recs = slices.Concat(ix.bmParts...)
		}
		for _, local := range st.order {
			lists = append(lists, ix.terms[local].docs)
			dfs = append(dfs, ix.terms[local].df)
			encoded = append(encoded, ix.terms[local].encoded)
			if ix.bmMerged {
				start := uint64(0)
				if local > 0 {
					start = ix.bmEnds[local-1]
				}
				pre = append(pre, recs[start:ix.bmEnds[local]])
			}
		}
		norms := fb.index.norms
		norm = func(doc uint32) uint32 { return norms[doc] }
	}
	var rec []byte
	var ps []bmPosting
	enc := bmEncoder{mix: mix}
	recOff := w.offset()
	offs := make([]uint64, 0, len(lists)+1)
	for k, list := range lists {
		if k%ctxCheckEvery == ctxCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("segment: write block maxima: %w", err)
			}
		}
		offs = append(offs, w.offset()-recOff)
		if pre != nil {
			w.write(pre[k])
			continue
		}
		var err error
		if ps, err = decodeForBlockMax(ps[:0], kind, list, dfs[k], b.numDocs, encoded != nil && encoded[k]); err != nil {
			return nil, fmt.Errorf("segment: field %q: %w", fb.field.Name, err)
		}
		rec = enc.encode(rec[:0], kind, ps, norm)
		w.write(rec)
	}
	return offs, nil
}

// decodeForBlockMax decodes one postings list (a Builder's compact docs, or
// the final docs section when encoded, or a sparse dimension's postings)
// into ps.
func decodeForBlockMax(ps []bmPosting, kind byte, list []byte, df, numDocs uint32, encoded bool) ([]bmPosting, error) {
	if kind == bmSparse {
		p := &SparsePostings{data: list, df: df, numDocs: numDocs}
		for p.Next() {
			ps = append(ps, bmPosting{doc: p.doc, w: p.weight})
		}
		return ps, p.Err()
	}
	p := &Postings{}
	p.start(list, nil, df, numDocs, false, !encoded) // a Builder holds docs in the version 1 encoding
	for p.Next() {
		ps = append(ps, bmPosting{doc: p.doc, tf: p.freq})
	}
	return ps, p.Err()
}
