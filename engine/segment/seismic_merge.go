package segment

import "fmt"

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
		blocks: make([][]seisBlock, len(outDims))}
	need := make([]bool, len(outDims))
	if err := sf.carry(field, carries, ids, need); err != nil {
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
