package segment

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
)

// dictHit is one source holding the term being merged.
type dictHit struct {
	src int
	it  *TermIterator
}

// mergeDicts walks the union of the sources' dictionaries (nil entries are
// skipped) in sorted order, calling each with every term once and the
// sources holding it, their iterators positioned on it.
func mergeDicts(dicts []*dict, each func(term []byte, hits []dictHit) error) error {
	its := make([]*TermIterator, len(dicts))
	for i, d := range dicts {
		if d == nil {
			continue
		}
		it := &TermIterator{d: d}
		if it.Next() {
			its[i] = it
		} else if err := it.Err(); err != nil {
			return err
		}
	}
	var hits []dictHit
	var term []byte
	for {
		hits = hits[:0]
		for i, it := range its {
			if it == nil {
				continue
			}
			if len(hits) > 0 {
				c := bytes.Compare(it.TermBytes(), hits[0].it.TermBytes())
				if c > 0 {
					continue
				}
				if c < 0 {
					hits = hits[:0]
				}
			}
			hits = append(hits, dictHit{src: i, it: it})
		}
		if len(hits) == 0 {
			return nil
		}
		term = append(term[:0], hits[0].it.TermBytes()...)
		if err := each(term, hits); err != nil {
			return err
		}
		for _, h := range hits {
			if !h.it.Next() {
				if err := h.it.Err(); err != nil {
					return err
				}
				its[h.src] = nil
			}
		}
	}
}

// mergedPosting is one rebased posting of a term being merged out of order.
type mergedPosting struct {
	doc  uint32
	freq uint32
	pos  []byte // encoded positions, a sub-slice of the source file
}

// mergeTerms merges every indexed field's dictionaries and postings into
// the builder, and derives norms and row statistics from the frequencies:
// a document's field length is the sum of its terms' frequencies, exactly
// what Builder.Add counts.
func (m *merger) mergeTerms() error {
	for f := range m.b.fields {
		ix := m.b.fields[f].index
		if ix == nil {
			continue
		}
		if err := m.mergeField(f, ix); err != nil {
			return err
		}
	}
	return nil
}

// mergeField merges one indexed field.
func (m *merger) mergeField(f int, ix *indexBuilder) error {
	dicts := make([]*dict, len(m.srcs))
	for i, r := range m.srcs {
		dicts[i] = r.dicts[f]
		if ix.reorder {
			if m.ordMaps[i] == nil {
				m.ordMaps[i] = make([][]uint32, len(m.s.Fields))
			}
			om := make([]uint32, r.NumTerms(f))
			for k := range om {
				om[k] = noDoc
			}
			m.ordMaps[i][f] = om
		}
	}
	lengths := make([]uint32, m.b.numDocs)
	var out []mergedPosting
	p := new(Postings)
	count := 0
	err := mergeDicts(dicts, func(term []byte, hits []dictHit) error {
		count++
		if err := m.check(count); err != nil {
			return err
		}
		var t termPostings
		out = out[:0]
		for _, h := range hits {
			p.init(h.it.d, h.it.c.e)
			ids := m.newID[h.src]
			for p.Next() {
				nd := ids[p.Doc()]
				if nd == noDoc {
					continue
				}
				var pos []byte
				if ix.tokenized {
					var err error
					if pos, err = p.rawPositions(); err != nil {
						return err
					}
				}
				if lengths[nd]+p.Freq() < lengths[nd] {
					return fmt.Errorf("field %d doc %d: frequencies overflow", f, nd)
				}
				lengths[nd] += p.Freq()
				if m.inOrder {
					t.freq = p.Freq()
					t.addDoc(nd)
					t.pos = append(t.pos, pos...)
				} else {
					out = append(out, mergedPosting{doc: nd, freq: p.Freq(), pos: pos})
				}
			}
			if err := p.Err(); err != nil {
				return err
			}
		}
		if !m.inOrder {
			slices.SortFunc(out, func(a, b mergedPosting) int { return cmp.Compare(a.doc, b.doc) })
			for _, o := range out {
				t.freq = o.freq
				t.addDoc(o.doc)
				t.pos = append(t.pos, o.pos...)
			}
		}
		if t.df == 0 {
			return nil // every row holding the term was dropped
		}
		ord := uint32(len(ix.terms))
		if ix.reorder {
			for _, h := range hits {
				m.ordMaps[h.src][f][h.it.Ordinal()] = ord
			}
		}
		ix.names = append(ix.names, string(term))
		ix.terms = append(ix.terms, t)
		return nil
	})
	if err != nil {
		return err
	}
	for _, n := range lengths {
		ix.totalLen += uint64(n)
		if n > 0 {
			ix.docsWith++
		}
	}
	if ix.tokenized {
		ix.norms = lengths
	}
	return nil
}

// mergeForward copies the reorder fields' per-document term lists in
// output order, mapping source ordinals to the output's. The map is
// increasing, so the lists stay sorted.
func (m *merger) mergeForward() error {
	for f := range m.b.fields {
		ix := m.b.fields[f].index
		if ix == nil || !ix.reorder {
			continue
		}
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
			for _, o := range ords {
				if o >= uint32(len(om)) || om[o] == noDoc {
					return corruptf(r.id, SuffixForward, "field %d doc %d lists term %d, which its postings do not hold", f, ref.Doc, o)
				}
				ix.fwdIDs = append(ix.fwdIDs, om[o])
			}
			ix.fwdOffs = append(ix.fwdOffs, uint64(len(ix.fwdIDs)))
		}
	}
	return nil
}
