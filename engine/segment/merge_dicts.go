package segment

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
)

// dictHit is one source holding the term being merged.
type dictHit struct {
	src int
	it  *TermIterator
	// e is the term's entry in the source's dictionary (the iterator
	// itself may have moved on by the time the hit is handed out).
	e termEntry
}

// heapItem is one source's iterator in a dictHeap: small, since the heap
// moves items at every level of a sift (the term's entry is read from the
// iterator when the source is taken).
type heapItem struct {
	// key is the big-endian value of the term's first 8 bytes (zero
	// padded): keys that differ order their terms as bytes.Compare does.
	key uint64
	src int
	it  *TermIterator
}

// termKey returns the key of term (see dictHit).
func termKey(term []byte) uint64 {
	var k uint64
	for i := 0; i < 8; i++ {
		k <<= 8
		if i < len(term) {
			k |= uint64(term[i])
		}
	}
	return k
}

// mergeDicts walks the union of the sources' dictionaries (nil entries are
// skipped) in sorted order, calling each with every term once and the
// sources holding it, in source order, with their entries for it (the
// hits' e; their iterators have moved past it).
func mergeDicts(dicts []*dict, each func(term []byte, hits []dictHit) error) error {
	return mergeDictRange(dicts, dictRange{}, each)
}

// dictRange is a range of terms [lo, hi); a nil bound is open.
type dictRange struct {
	lo, hi []byte
	// ords, when not nil, receives per source the range of term
	// ordinals the walk covered.
	ords [][2]uint32
}

// seekFrom positions it on the first term at or past lo (the first term
// when lo is nil) and returns that term's ordinal (the dictionary's term
// count when there is none: the ordinal a range from lo starts at) and
// whether there is one; a read error is left in Err.
func (it *TermIterator) seekFrom(lo []byte) (start uint32, ok bool) {
	if lo == nil {
		ok = it.Next()
	} else {
		ok = it.Seek(string(lo))
	}
	if !ok {
		return it.d.numTerms, false
	}
	return it.Ordinal(), true
}

// mergeDictRange is mergeDicts over the terms of r only. The sources'
// iterators are kept in a heap ordered by (term, source): each term costs
// a logarithm of the number of sources, not a scan of them all.
func mergeDictRange(dicts []*dict, r dictRange, each func(term []byte, hits []dictHit) error) error {
	var h dictHeap
	hiKey := termKey(r.hi)
	for i, d := range dicts {
		if d == nil {
			continue
		}
		it := &TermIterator{d: d}
		start, ok := it.seekFrom(r.lo)
		if err := it.Err(); err != nil {
			return err
		}
		if ok && (r.hi == nil || bytes.Compare(it.TermBytes(), r.hi) < 0) {
			h = append(h, heapItem{src: i, it: it, key: termKey(it.TermBytes())})
		}
		if r.ords != nil {
			r.ords[i] = [2]uint32{start, start}
		}
	}
	h.init()
	var hits []dictHit
	var term []byte
	for len(h) > 0 {
		// Every source on the root's term is at the root in turn, in
		// source order: it is taken and advanced in place (one sift).
		term = append(term[:0], h[0].it.TermBytes()...)
		key := h[0].key
		hits = hits[:0]
		for {
			hits = append(hits, dictHit{src: h[0].src, it: h[0].it, e: h[0].it.c.e})
			if !h.advanceRoot(dicts, r, hiKey) {
				if err := h[0].it.Err(); err != nil {
					return err
				}
				h.pop()
			}
			if len(h) == 0 || h[0].key != key || !bytes.Equal(h[0].it.TermBytes(), term) {
				break
			}
		}
		if err := each(term, hits); err != nil {
			return err
		}
	}
	return nil
}

// dictHeap is a binary min-heap of iterators by (term, source).
type dictHeap []heapItem

// advanceRoot moves the root's iterator to its next term within r and
// restores the heap order; at the end of the iterator or of r it records
// the source's end ordinal and returns false, leaving the root for the
// caller to pop (after checking the iterator's error). hiKey is
// termKey(r.hi).
func (h dictHeap) advanceRoot(dicts []*dict, r dictRange, hiKey uint64) bool {
	hit := &h[0]
	it := hit.it
	end := dicts[hit.src].numTerms // the first term at or past hi
	if it.Next() {
		key := termKey(it.TermBytes())
		if r.hi == nil || key < hiKey || (key == hiKey && bytes.Compare(it.TermBytes(), r.hi) < 0) {
			hit.key = key
			h.siftRoot()
			return true
		}
		end = it.Ordinal()
	}
	if r.ords != nil && it.Err() == nil {
		r.ords[hit.src][1] = end
	}
	return false
}

func (h dictHeap) less(i, j int) bool { return hitLess(&h[i], &h[j]) }

// hitLess orders heap items by (term, source).
func hitLess(a, b *heapItem) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	if c := bytes.Compare(a.it.TermBytes(), b.it.TermBytes()); c != 0 {
		return c < 0
	}
	return a.src < b.src
}

// siftRoot restores the heap order after the root's term moved on: the
// hole goes down to a leaf along the smaller children (one comparison a
// level), then the root's hit climbs back to its place (an iterator moved
// on is past most others: it climbs little). Bottom-up, it compares about
// half as often as down.
func (h dictHeap) siftRoot() {
	x := h[0]
	i, n := 0, len(h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		h[i] = h[m]
		i = m
	}
	for i > 0 {
		p := (i - 1) / 2
		if !hitLess(&x, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

func (h dictHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *dictHeap) pop() heapItem {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	*h = s[:n]
	h.down(0)
	return top
}

func (h dictHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// termCost is what splitDicts counts for each term of a dictionary besides
// its postings bytes: the fixed work a term costs a merge or a validation
// (the heap, a postings cursor, a dictionary entry, a block-max record),
// in postings bytes.
const termCost = 16

// costMark is one dictionary block seen by splitDicts: its first term and
// the estimated cost of its terms.
type costMark struct {
	key  uint64 // termKey(term)
	term []byte
	cost uint64
}

// splitDicts returns up to n-1 increasing terms that cut the union of the
// dictionaries into n ranges of about equal cost. The cost of every block
// of every dictionary (the postings bytes its terms span, from the block
// index, plus termCost per term) is counted at its first term, so a range
// of rare terms spread over many sources weighs what merging it costs. A
// block that cannot be read is left out: the walk reports it.
func splitDicts(dicts []*dict, n int) [][]byte {
	if n < 2 {
		return nil
	}
	var marks []costMark
	var total uint64
	sources := 0
	for _, d := range dicts {
		if d == nil || d.numBlocks == 0 {
			continue
		}
		sources++
		marks = slices.Grow(marks, int(d.numBlocks))
		for b := uint32(0); b < d.numBlocks; b++ {
			t, err := d.firstTerm(b)
			if err != nil {
				break
			}
			m := costMark{key: termKey(t), term: t, cost: termCost * uint64(min(d.blockSize, d.numTerms-b*d.blockSize))}
			off := binary.LittleEndian.Uint64(d.index[uint64(b)*blockIndexEntry+8:])
			end := uint64(len(d.post))
			if b+1 < d.numBlocks {
				end = binary.LittleEndian.Uint64(d.index[uint64(b+1)*blockIndexEntry+8:])
			}
			if off < end && end <= uint64(len(d.post)) {
				m.cost += end - off
			}
			marks = append(marks, m)
			total += m.cost
		}
	}
	if sources > 1 {
		slices.SortFunc(marks, func(a, b costMark) int {
			if a.key != b.key {
				return cmp.Compare(a.key, b.key)
			}
			return bytes.Compare(a.term, b.term)
		})
	}
	var keys [][]byte
	var cum uint64
	for _, m := range marks {
		if cum > 0 && cum*uint64(n) >= total*uint64(len(keys)+1) &&
			(len(keys) == 0 || bytes.Compare(m.term, keys[len(keys)-1]) > 0) {
			keys = append(keys, slices.Clone(m.term))
			if len(keys) == n-1 {
				break
			}
		}
		cum += m.cost
	}
	return keys
}
