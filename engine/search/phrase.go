package search

// runPhrase matches a phrase clause in one field of one segment: it walks
// the documents holding every distinct term and, for those the clause's
// gate admits, counts the positions where the terms appear at their
// offsets. Positions are decoded only for those documents.
func runPhrase(t *ticker, seg Segment, fp *fieldPlan, c *clausePlan, row []postings, acc *accumulator) error {
	lead := 0
	for u, pl := range row {
		if pl.DocFreq() < row[lead].DocFreq() {
			lead = u
		}
	}
	m := phraseMatcher{offsets: c.offsets, lists: make([][]uint32, len(c.offsets)), ptr: make([]int, len(c.offsets))}
	started := make([]bool, len(row))
	byDistinct := make([][]uint32, len(row))
	for row[lead].Next() {
		if err := t.tick(); err != nil {
			return err
		}
		d := row[lead].Doc()
		all, done := true, false
		for u, pl := range row {
			if u == lead {
				continue
			}
			ok := advanceTo(pl, &started[u], d)
			if !ok {
				done = true
				break
			}
			all = all && pl.Doc() == d
		}
		if done {
			break
		}
		if !all || !acc.admits(c.gate, d) {
			continue
		}
		for u, pl := range row {
			pos, err := pl.AppendPositions(byDistinct[u][:0])
			if err != nil {
				return err
			}
			byDistinct[u] = pos
		}
		for i, u := range c.slots {
			m.lists[i] = byDistinct[u]
		}
		freq := m.count()
		if freq == 0 {
			continue
		}
		var s float64
		if c.gate.score {
			s = fp.score(seg, d, freq)
		}
		acc.match(c.gate, d, s)
	}
	for _, pl := range row {
		if err := pl.Err(); err != nil {
			return err
		}
	}
	return nil
}

// advanceTo moves pl to its first document >= target, if it is not there
// already; started says whether pl was moved before. It returns false when
// pl has no such document.
func advanceTo(pl postings, started *bool, target uint32) bool {
	if *started && pl.Doc() >= target {
		return true
	}
	*started = true
	for pl.Next() {
		if pl.Doc() >= target {
			return true
		}
	}
	return false
}

// phraseMatcher counts phrase occurrences in one document.
type phraseMatcher struct {
	// offsets holds each term's position relative to the first.
	offsets []uint32
	// lists holds each term's positions in the document, ascending.
	lists [][]uint32
	// ptr is scratch: a cursor into each list.
	ptr []int
}

// count returns the number of start positions s such that every term i
// occurs at s+offsets[i].
func (m *phraseMatcher) count() uint32 {
	for i := range m.ptr {
		m.ptr[i] = 0
	}
	var n uint32
	for _, s := range m.lists[0] {
		match := true
		for i := 1; i < len(m.lists) && match; i++ {
			want := uint64(s) + uint64(m.offsets[i])
			l, p := m.lists[i], m.ptr[i]
			for p < len(l) && uint64(l[p]) < want {
				p++
			}
			m.ptr[i] = p
			if p == len(l) {
				return n // no later start can match term i
			}
			match = uint64(l[p]) == want
		}
		if match {
			n++
		}
	}
	return n
}
