package search

// runPhrase matches a phrase clause in one field of one segment: it walks
// the documents holding every distinct term and, for those the clause's
// gate admits, counts the positions where the terms appear at their
// offsets. Positions are decoded only for those documents. With cands
// (sorted), only those documents are tried (the clause's gate admits no
// other); else the lists are intersected by leapfrogging from the rarest:
// every list advances to the largest document seen, so whole blocks are
// skipped.
func runPhrase(t *ticker, seg Segment, fp *fieldPlan, c *clausePlan, row []postings, acc *accumulator, cands []uint32) error {
	lead := rarest(row)
	pm := phraseRun{seg: seg, fp: fp, vs: fp.viewScorer(seg), c: c, row: row, acc: acc, m: newPhraseMatcher(c.offsets, len(row))}
	if cands != nil {
	cand:
		for _, d := range cands {
			if err := t.tick(); err != nil {
				return err
			}
			for _, pl := range row {
				if !pl.Advance(d) {
					break cand
				}
				if pl.Doc() != d {
					continue cand
				}
			}
			if err := pm.match(d); err != nil {
				return err
			}
		}
		return rowErr(row)
	}
	for d, ok, err := nextCommon(t, row, lead, 0); ok || err != nil; d, ok, err = nextCommon(t, row, lead, d+1) {
		if err != nil {
			return err
		}
		if err := pm.match(d); err != nil {
			return err
		}
	}
	return rowErr(row)
}

// rowErr returns the first error of a row's postings.
func rowErr(row []postings) error {
	for _, pl := range row {
		if err := pl.Err(); err != nil {
			return err
		}
	}
	return nil
}

// phraseRun is the state of runPhrase in one field of one segment.
type phraseRun struct {
	seg Segment
	fp  *fieldPlan
	vs  viewScorer
	c   *clausePlan
	row []postings
	acc *accumulator
	m   phraseMatcher
}

// match counts the phrase in doc, where every list of the row stands, and
// records it when the gate admits doc and the phrase occurs.
func (r *phraseRun) match(d uint32) error {
	if !r.acc.admits(r.c.gate, d) {
		return nil
	}
	freq, err := r.m.inDoc(r.row, r.c.slots, !r.c.gate.score) // unscored: one occurrence is enough
	if err != nil || freq == 0 {
		return err
	}
	var s float64
	if r.c.gate.score {
		s = r.vs.score(d, freq)
	}
	r.acc.match(r.c.gate, d, s)
	return nil
}

// phraseMatcher counts phrase occurrences in one document.
type phraseMatcher struct {
	// offsets holds each term's position relative to the first.
	offsets []uint32
	// lists holds each term's positions in the document, ascending.
	lists [][]uint32
	// ptr is scratch: a cursor into each list.
	ptr []int
	// byDistinct holds the positions buffers, one per distinct term.
	byDistinct [][]uint32
	// want is scratch: the positions the lazily read term must hold.
	want []uint32
}

// newPhraseMatcher returns a matcher of a phrase whose terms sit at
// offsets, made of distinct different terms.
func newPhraseMatcher(offsets []uint32, distinct int) phraseMatcher {
	return phraseMatcher{offsets: offsets, lists: make([][]uint32, len(offsets)), ptr: make([]int, len(offsets)), byDistinct: make([][]uint32, distinct)}
}

// inDoc decodes the positions of the current document of every list of
// row (one per distinct term; slots maps each phrase term to its list)
// and returns the phrase's frequency there (with first, 1 when it occurs).
func (m *phraseMatcher) inDoc(row []postings, slots []int, first bool) (uint32, error) {
	lazy := -1
	if first {
		lazy = lazySlot(row, slots)
	}
	for u, pl := range row {
		if lazy >= 0 && u == slots[lazy] {
			continue
		}
		pos, err := pl.AppendPositions(m.byDistinct[u][:0])
		if err != nil {
			return 0, err
		}
		m.byDistinct[u] = pos
	}
	for i, u := range slots {
		m.lists[i] = m.byDistinct[u]
	}
	if lazy < 0 {
		return m.scan(first, -1), nil
	}
	// Where the other terms match, the lazy term must stand at its offset:
	// its positions are read only until one of those is found.
	m.want = m.want[:0]
	m.scan(false, lazy)
	if len(m.want) == 0 {
		return 0, nil
	}
	ok, err := row[slots[lazy]].HasPositionIn(m.want)
	if err != nil || !ok {
		return 0, err
	}
	return 1, nil
}

// lazySlot returns the phrase term whose positions an existence check
// reads lazily: the one with the most occurrences in the current
// document, when it stands once in the phrase; else -1.
func lazySlot(row []postings, slots []int) int {
	if len(slots) < 2 {
		return -1
	}
	big, bigFreq := -1, uint32(0)
	for i, u := range slots {
		if f := row[u].Freq(); f > bigFreq {
			big, bigFreq = i, f
		}
	}
	for i, u := range slots {
		if big >= 0 && i != big && u == slots[big] {
			return -1 // a repeated term: read it in full
		}
	}
	return big
}

// scan returns the number of start positions s such that every term i
// occurs at s+offsets[i], or with first stops at the first one (1, else
// 0). It walks the term with the fewest positions and moves a cursor
// through each other list: for "the kernel" it visits the positions of
// "kernel" and skips through those of "the". With skip >= 0, term skip is
// left out: each start where the others match adds, to want, the position
// term skip must hold there, and scan returns 0.
func (m *phraseMatcher) scan(first bool, skip int) uint32 {
	lead := -1
	for i, l := range m.lists {
		m.ptr[i] = 0
		if i != skip && (lead < 0 || len(l) < len(m.lists[lead])) {
			lead = i
		}
	}
	off := uint64(m.offsets[lead])
	var n uint32
	for _, p := range m.lists[lead] {
		if uint64(p) < off {
			continue // the phrase would start before position 0
		}
		s := uint64(p) - off
		match := true
		for i, l := range m.lists {
			if i == lead || i == skip {
				continue
			}
			want := s + uint64(m.offsets[i])
			q := m.ptr[i]
			for q < len(l) && uint64(l[q]) < want {
				q++
			}
			m.ptr[i] = q
			if q == len(l) {
				return n // no later start can match term i
			}
			if uint64(l[q]) != want {
				match = false
				break
			}
		}
		switch {
		case !match:
		case skip >= 0:
			if w := s + uint64(m.offsets[skip]); w <= 1<<32-1 {
				m.want = append(m.want, uint32(w))
			}
		case first:
			return 1
		default:
			n++
		}
	}
	return n
}
