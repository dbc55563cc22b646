package segment

import (
	"fmt"

	"github.com/summadev/summa/engine/segment/seismic"
)

// mergeSeismic makes the output builder copy every source's placed
// Seismic blocks as encoded runs through the merge's doc-id map (Write
// runs the copy, after mergeVectors filled the output's sparse postings),
// placing new dimensions only within the merge's Seismic budget.
func (m *merger) mergeSeismic() error {
	o := SeismicOptions{Budget: m.seismicBudget}
	for i, r := range m.srcs {
		ids := m.newID[i]
		o.Carry = append(o.Carry, SeismicCarry{Source: r, Remap: func(d uint32) (uint32, bool) {
			if int(d) >= len(ids) || ids[d] == noDoc {
				return 0, false
			}
			return ids[d], true
		}})
	}
	m.b.SetSeismic(o)
	return nil
}

// mergeSeismicField builds one sparse field's Seismic index for a merge
// output without a Builder (a streaming merge's hook for the seis file
// kind): placed dimensions are copied from the sources as encoded runs
// (blocks, summaries and their quantization as they are) through each
// carry's doc-id remap; a dimension pending in a source, or in none,
// stays pending (no clustering happens in a merge); the forward index is
// the sources' vec postings, remapped. outDims are the output's dimension
// names in dictionary order (its vec dictionary), numDocs its documents.
// encodeSeismic writes the result. With the same carries it yields what
// a Builder fed the same rows writes with Budget -1.
func mergeSeismicField(field int, numDocs uint32, outDims []string, carries []SeismicCarry) (*seisField, error) {
	ids := make(map[string]uint32, len(outDims))
	for o, name := range outDims {
		ids[name] = uint32(o)
	}
	sf := &seisField{ord: field, numDims: len(outDims), pending: make([]bool, len(outDims)),
		blocks: make([][]seismic.Block, len(outDims))}
	need := make([]bool, len(outDims))
	// Dimensions to upgrade (from segments without Seismic index) stay
	// pending here: this hook places nothing.
	if _, err := sf.carry(field, carries, ids, need); err != nil {
		return nil, err
	}
	copy(sf.pending, need)
	counts := make([]uint32, numDocs+1)
	visit := func(fn func(out, ord uint32, w float32)) error {
		for _, c := range carries {
			vocab := c.Source.sparse[field]
			if vocab == nil {
				return fmt.Errorf("segment: seismic merge: source %s has no sparse field %d", c.Source.id, field)
			}
			it := &TermIterator{d: vocab}
			for it.Next() {
				o, ok := ids[it.Term()]
				p := newSparsePostings(vocab, it.c.e)
				for p.Next() {
					out, keep := c.Remap(p.Doc())
					if !keep {
						continue
					}
					if !ok || out >= numDocs {
						return fmt.Errorf("segment: seismic merge: source %s doc %d dimension %q has no place in the output", c.Source.id, p.Doc(), it.Term())
					}
					fn(out, o, p.Weight())
				}
				if err := p.Err(); err != nil {
					return err
				}
			}
			if err := it.Err(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(func(out, _ uint32, _ float32) { counts[out+1]++ }); err != nil {
		return nil, err
	}
	sf.fwdOff = make([]uint32, numDocs+1)
	for d := uint32(1); d <= numDocs; d++ {
		sf.fwdOff[d] = sf.fwdOff[d-1] + counts[d]
	}
	sf.fwdDims = make([]uint32, sf.fwdOff[numDocs])
	sf.fwdVals = make([]float32, sf.fwdOff[numDocs])
	fill := append([]uint32(nil), sf.fwdOff[:numDocs]...)
	// Source terms come in dictionary order, which maps monotonically to
	// the output's, so each document's entries come out sorted.
	if err := visit(func(out, ord uint32, w float32) {
		sf.fwdDims[fill[out]], sf.fwdVals[fill[out]] = ord, w
		fill[out]++
	}); err != nil {
		return nil, err
	}
	return sf, nil
}
