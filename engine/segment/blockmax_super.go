package segment

import (
	"encoding/binary"
	"math"

	"github.com/summadev/summa/engine/segment/codec"
)

// Superblocks (format version 4 of the bmp file). A text or exact term
// whose record spans at least superMinBlocks blocks, superDensity per
// group on average, carries before its entries a table of its
// superblocks: its blocks grouped by
// 2^SuperShift consecutive block numbers (1,024 documents), each group
// with bound codes that bound every block of the group (the loosest
// frequency code, the smallest ratio and mix codes) and the place of the
// group's entries and data in the record. A search of frequent terms
// orders these groups by their summed bounds first and decodes the
// entries of a group only when the group can still enter the page, as
// Lucene's upper skip levels carry the impacts of eight blocks of 128
// documents: the most frequent term of the large benchmark corpus has
// 4,342 blocks and 277 groups.
//
// A group's entry is uvarint(group number, then gap >= 1), the bound
// bytes (as many as the term's block entries have), a byte holding the
// block number of the group's first entry within the group (high four
// bits) and the group's number of blocks minus one (low four bits),
// uvarint(length of the group's block entries), uvarint(length of the
// group's data). A record of at least superMinBlocks blocks always has
// the table's length; it is 0, and there is no table, when the term's
// blocks fill fewer than superDensity per group on average: such a table
// would cost about as much as the entries it spares. The table is
// derived from the block entries alone (appendSupers), so a writer and
// Validate build it the same way.

// SuperShift is log2 of the blocks per superblock.
const SuperShift = 4

// superBlocks is the number of blocks per superblock.
const superBlocks = 1 << SuperShift

// superMinBlocks is the smallest number of blocks of a term whose record
// has a superblock table.
const superMinBlocks = 16

// superDensity is the smallest average number of blocks per group of a
// term with a superblock table.
const superDensity = 4

// superVersion is the bmax format whose records of many blocks carry
// superblock tables; versions 1 to 3 are still read.
const superVersion = 4

// hasSupers reports whether a text or exact record of nBlocks blocks in
// a file of layout l has the length of a superblock table (which may be 0:
// no table).
func (l bmLayout) hasSupers(nBlocks int) bool {
	return l.supers && l.kind != bmSparse && nBlocks >= superMinBlocks
}

// boundBytes returns the number of bound bytes of the layout's block
// entries: 1 for exact fields, 2 for tokenized ones, 3 with mix codes,
// 2 for sparse fields.
func (l bmLayout) boundBytes() int {
	switch {
	case l.kind == bmExact:
		return 1
	case l.kind == bmTokenized && l.mix.on():
		return 3
	}
	return 2
}

// SuperEntry is one superblock of a BlockTerm: Block is the superblock's
// number (its blocks are Block<<SuperShift and on), Hi, Lo and Mix bound
// every block of the group as a block's codes bound its documents, Count
// is its number of blocks.
type SuperEntry struct {
	BlockEntry
	// first is the block number of the group's first entry.
	first uint32
	// entOff and entN locate the group's block entries in the record's
	// entries (off and n of BlockEntry its data).
	entOff, entN uint32
}

// looserHi returns the frequency code that bounds both a and b: 1/tf is
// bounded by 0 for codes 0 and 255, by 1/c otherwise.
func looserHi(a, b uint8) uint8 {
	if a == 0 || a == tfCodeSaturated || b == 0 || b == tfCodeSaturated {
		return tfCodeSaturated
	}
	return max(a, b)
}

// entryAt decodes the block entry at p of entries whose bound bytes are
// bounds long: its block gap, the entry (without its block number and
// data offset) and the offset after it; ok is false when it is cut short.
func entryAt(b []byte, p, bounds int) (gap uint64, e BlockEntry, next int, dataLen uint64, ok bool) {
	gap, next, ok = uvarintFast(b, p)
	if !ok || len(b)-next < bounds+1 {
		return 0, e, 0, 0, false
	}
	e.Hi = b[next]
	if bounds >= 2 {
		e.Lo = b[next+1]
	}
	if bounds == 3 {
		e.Mix = b[next+2]
	}
	e.Count = int(b[next+bounds]) + 1
	dataLen, next, ok = uvarintFast(b, next+bounds+1)
	return gap, e, next, dataLen, ok
}

// uvarintFast is codec.UvarintAt with a one-byte value decoded inline,
// the usual case of block entries.
func uvarintFast(b []byte, p int) (uint64, int, bool) {
	if uint(p) < uint(len(b)) {
		if v := b[p]; v < 0x80 {
			return uint64(v), p + 1, true
		}
	}
	return codec.UvarintAt(b, p)
}

// appendSupers appends the superblock table of a record whose block
// entries (nBlocks of them, bound bytes bounds long) are entries, nothing
// when its blocks are too sparse for one (superDensity). It reports false
// when the entries do not decode.
func appendSupers(dst, entries []byte, nBlocks, bounds int) ([]byte, bool) {
	start := len(dst)
	var block uint64
	p := 0
	var g SuperEntry // the group being summed
	prevGroup := uint64(0)
	groups := 0
	flush := func() {
		gap := uint64(g.Block)
		if groups > 0 {
			gap -= prevGroup
		}
		prevGroup = uint64(g.Block)
		groups++
		dst = binary.AppendUvarint(dst, gap)
		dst = append(dst, g.Hi)
		if bounds >= 2 {
			dst = append(dst, g.Lo)
		}
		if bounds == 3 {
			dst = append(dst, g.Mix)
		}
		dst = append(dst, byte(g.first&(superBlocks-1))<<SuperShift|byte(g.Count-1))
		dst = binary.AppendUvarint(dst, uint64(g.entN))
		dst = binary.AppendUvarint(dst, uint64(g.n))
	}
	for i := 0; i < nBlocks; i++ {
		gap, e, next, n, ok := entryAt(entries, p, bounds)
		if !ok || block+gap > math.MaxUint32 || n > math.MaxUint32 {
			return dst, false
		}
		block += gap
		if i == 0 || uint32(block>>SuperShift) != g.Block {
			if i > 0 {
				flush()
			}
			g = SuperEntry{BlockEntry: BlockEntry{Block: uint32(block >> SuperShift), Hi: e.Hi, Lo: e.Lo, Mix: e.Mix}, first: uint32(block)}
		} else {
			g.Hi, g.Lo, g.Mix = looserHi(g.Hi, e.Hi), min(g.Lo, e.Lo), min(g.Mix, e.Mix)
		}
		g.Count++
		g.entN += uint32(next - p)
		g.n += uint32(n)
		p = next
	}
	if nBlocks > 0 {
		flush()
	}
	if groups*superDensity > nBlocks {
		dst = dst[:start]
	}
	return dst, p == len(entries)
}

// Blocks returns the number of blocks holding the term.
func (t *BlockTerm) Blocks() int { return t.nBlocks }

// HasSupers reports whether the term's record has a superblock table.
func (t *BlockTerm) HasSupers() bool { return t.supers != nil }

// Supers appends the term's superblocks, in increasing order, to dst.
func (t *BlockTerm) Supers(dst []SuperEntry) ([]SuperEntry, error) {
	b := t.supers
	bounds := t.layout().boundBytes()
	maxGroup := uint64(t.numDocs) >> (BlockShift + SuperShift)
	var group, entOff, dataOff uint64
	blocks := 0
	for i, p := 0, 0; p < len(b); i++ {
		gap, next, ok := codec.UvarintAt(b, p)
		if !ok || (i > 0 && gap == 0) || len(b)-next < bounds+1 {
			return dst, corruptf(t.id, SuffixBlockMax, "bad superblock entry %d", i)
		}
		group += gap
		s := SuperEntry{BlockEntry: BlockEntry{Hi: b[next]}}
		if bounds >= 2 {
			s.Lo = b[next+1]
		}
		if bounds == 3 {
			s.Mix = b[next+2]
		}
		first, count := uint64(b[next+bounds]>>SuperShift), int(b[next+bounds]&(superBlocks-1))+1
		entN, next, ok1 := codec.UvarintAt(b, next+bounds+1)
		dataN, next, ok2 := codec.UvarintAt(b, next)
		if !ok1 || !ok2 || group > maxGroup ||
			entN > uint64(len(t.entries))-entOff || dataN > uint64(len(t.data))-dataOff {
			return dst, corruptf(t.id, SuffixBlockMax, "superblock entry %d (group %d) outside the record", i, group)
		}
		s.Block, s.Count, s.first = uint32(group), count, uint32(group<<SuperShift|first)
		s.entOff, s.entN, s.off, s.n = uint32(entOff), uint32(entN), uint32(dataOff), uint32(dataN)
		entOff, dataOff = entOff+entN, dataOff+dataN
		blocks += count
		dst = append(dst, s)
		p = next
	}
	if blocks != t.nBlocks || entOff != uint64(len(t.entries)) || dataOff != uint64(len(t.data)) {
		return dst, corruptf(t.id, SuffixBlockMax, "superblocks hold %d blocks of %d", blocks, t.nBlocks)
	}
	return dst, nil
}

// SuperBlocks appends the blocks of superblock s, in increasing block
// order, to dst.
func (t *BlockTerm) SuperBlocks(s *SuperEntry, dst []BlockEntry) ([]BlockEntry, error) {
	b := t.entries[s.entOff : s.entOff+s.entN]
	bounds := t.layout().boundBytes()
	maxBlock := uint64(t.numDocs) >> BlockShift
	block := uint64(s.first)
	off := uint64(s.off)
	end := off + uint64(s.n)
	p := 0
	for i := 0; i < s.Count; i++ {
		gap, e, next, n, ok := entryAt(b, p, bounds)
		if i > 0 {
			block += gap
		}
		if !ok || (i > 0 && gap == 0) || block > maxBlock || block>>SuperShift != uint64(s.Block) || n > end-off {
			return dst, corruptf(t.id, SuffixBlockMax, "superblock %d: bad block entry %d", s.Block, i)
		}
		e.Block, e.off, e.n = uint32(block), uint32(off), uint32(n)
		off += n
		p = next
		dst = append(dst, e)
	}
	if p != len(b) || off != end {
		return dst, corruptf(t.id, SuffixBlockMax, "superblock %d: entries and data disagree", s.Block)
	}
	return dst, nil
}
