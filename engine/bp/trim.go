package bp

import (
	"cmp"
	"slices"
)

// dropped marks a term removed by trimming in a remapping table.
const dropped = ^uint32(0)

// trim returns g itself when it fits p.maxMemory, else a copy without the
// terms of df<2 (they never help) and then without the highest-degree
// terms until the estimate fits (or no term is left), with the kept terms
// renumbered densely in their original order. It also returns the number
// of dropped terms that had postings.
// REQUIRES: g valid.
func trim(st *stopper, g *Graph, p params) (*Graph, int, error) {
	docs := g.NumDocs()
	if p.maxMemory <= 0 || estimate(docs, int64(g.NumEdges()), int64(g.NumTerms), p.workers) <= p.maxMemory {
		return g, 0, nil
	}
	df, err := docFreqs(st, g)
	if err != nil {
		return nil, 0, err
	}
	// Drop df<2 first, then candidates by decreasing df.
	var keep []uint32
	edges, trimmed := int64(0), 0
	for t, f := range df {
		if f >= 2 {
			keep = append(keep, uint32(t))
			edges += int64(f)
		} else if f == 1 {
			trimmed++
		}
	}
	slices.SortFunc(keep, func(a, b uint32) int {
		return cmp.Or(cmp.Compare(df[b], df[a]), cmp.Compare(a, b))
	})
	for len(keep) > 0 && estimate(docs, edges, int64(len(keep)), p.workers) > p.maxMemory {
		edges -= int64(df[keep[0]])
		keep = keep[1:]
		trimmed++
	}
	if err := st.cancelled(); err != nil {
		return nil, 0, err
	}
	// Renumber the kept terms in increasing old id; reuse df as the table.
	for t := range df {
		df[t] = dropped
	}
	for _, t := range keep {
		df[t] = 0
	}
	next := uint32(0)
	for t := range df {
		if df[t] == 0 {
			df[t] = next
			next++
		}
	}
	out, err := remap(st, g, df, next, edges)
	return out, trimmed, err
}

// sparseSlack: a graph may name up to this many more term ids than it
// has postings before its ids are compacted (see compactSparse).
const sparseSlack = 1 << 16

// compactSparse returns g itself when its per-term arrays (NumTerms long)
// are within sparseSlack of its postings, else a copy with the used term
// ids renumbered densely in order, so a huge NumTerms with few postings
// cannot make Reorder or LogGapCost allocate unbounded memory. Costs do
// not depend on term names. REQUIRES: g valid.
func compactSparse(st *stopper, g *Graph) (*Graph, error) {
	if uint64(g.NumTerms) <= uint64(len(g.Terms))+sparseSlack {
		return g, nil
	}
	used := slices.Clone(g.Terms)
	slices.Sort(used)
	used = slices.Compact(used)
	if err := st.cancelled(); err != nil {
		return nil, err
	}
	out := &Graph{NumTerms: uint32(len(used)), Offsets: g.Offsets, Terms: make([]uint32, len(g.Terms))}
	for i, t := range g.Terms {
		id, _ := slices.BinarySearch(used, t)
		out.Terms[i] = uint32(id)
		if i%unitWork == unitWork-1 {
			if err := st.cancelled(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// docFreqs returns the number of documents of every term.
func docFreqs(st *stopper, g *Graph) ([]uint32, error) {
	df := make([]uint32, g.NumTerms)
	for i, t := range g.Terms {
		df[t]++
		if i%unitWork == unitWork-1 {
			if err := st.cancelled(); err != nil {
				return nil, err
			}
		}
	}
	return df, nil
}

// remap returns the graph of g's documents with term t renamed newID[t],
// dropping terms mapped to dropped. newID must be increasing on kept terms
// so every document's run stays sorted.
func remap(st *stopper, g *Graph, newID []uint32, numTerms uint32, edges int64) (*Graph, error) {
	out := &Graph{
		NumTerms: numTerms,
		Offsets:  make([]uint64, 1, g.NumDocs()+1),
		Terms:    make([]uint32, 0, edges),
	}
	work := 0
	for d := 0; d < g.NumDocs(); d++ {
		terms := g.docTerms(uint32(d))
		for _, t := range terms {
			if id := newID[t]; id != dropped {
				out.Terms = append(out.Terms, id)
			}
		}
		out.Offsets = append(out.Offsets, uint64(len(out.Terms)))
		if work += len(terms) + 1; work >= unitWork {
			work = 0
			if err := st.cancelled(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
