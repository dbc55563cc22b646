package segment

import "math/bits"

// Counting a union of terms from block maxima: a block's doc offsets are
// bytes, and its 64 documents one word of a bitset of the segment's
// documents (block b is word b), so a term's documents are set a word at
// a time without decoding its postings.

// MarkDocs sets the bit of each of the term's documents in set, a bitset
// of the segment's documents (64 per word, so that block b is word b),
// reading only the entries and the doc offsets of each block: a count
// of a union of terms needs no frequencies.
func (t *BlockTerm) MarkDocs(set []uint64) error {
	b := t.entries
	bounds := t.layout().boundBytes()
	var block, off uint64
	p := 0
	for i := 0; i < t.nBlocks; i++ {
		gap, e, next, n, ok := entryAt(b, p, bounds)
		block += gap
		if !ok || (i > 0 && gap == 0) || block >= uint64(len(set)) || n > uint64(len(t.data))-off || uint64(e.Count) > n {
			return corruptf(t.id, SuffixBlockMax, "bad block entry %d", i)
		}
		var mask uint64
		var all byte
		for _, o := range t.data[off : off+uint64(e.Count)] {
			mask |= 1 << (o & (blockDocs - 1))
			all |= o
		}
		if all >= blockDocs || block<<BlockShift+uint64(63-bits.LeadingZeros64(mask)) >= uint64(t.numDocs) {
			return corruptf(t.id, SuffixBlockMax, "block %d: document offsets out of range", block)
		}
		set[block] |= mask
		off += n
		p = next
	}
	return nil
}
