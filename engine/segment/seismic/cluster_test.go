package seismic

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// randomField returns the forward index and the per-dimension lists of
// numDocs random sparse vectors over numDims dimensions.
func randomField(rng *rand.Rand, numDocs, numDims int) (Forward, [][]Posting) {
	fwd := Forward{Off: []uint32{0}}
	lists := make([][]Posting, numDims)
	for doc := 0; doc < numDocs; doc++ {
		for d := 0; d < numDims; d++ {
			if rng.IntN(4) == 0 {
				w := rng.Float32() + 0.01
				fwd.Dims, fwd.Vals = append(fwd.Dims, uint32(d)), append(fwd.Vals, w)
				lists[d] = append(lists[d], Posting{Doc: uint32(doc), W: w})
			}
		}
		fwd.Off = append(fwd.Off, uint32(len(fwd.Dims)))
	}
	return fwd, lists
}

// TestPlaceKeepsTopLambda checks that Place puts each of a list's λ
// heaviest postings in exactly one block, with increasing doc ids, and
// that every block's summary covers its own dimension with a weight no
// lower than any of its documents' (quantization rounds up).
func TestPlaceKeepsTopLambda(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fwd, lists := randomField(rng, 400, 12)
	p := Params{Lambda: 60, CentroidFraction: 0.1, Alpha: 0.8}
	c := NewClusterer(fwd, len(lists), p)
	for dim, list := range lists {
		blocks := c.Place(uint32(dim), list)
		want := slices.Clone(list)
		slices.SortStableFunc(want, func(a, b Posting) int {
			if a.W != b.W {
				if a.W > b.W {
					return -1
				}
				return 1
			}
			return int(a.Doc) - int(b.Doc)
		})
		weight := map[uint32]float32{}
		for _, q := range want[:min(len(want), p.Lambda)] {
			weight[q.Doc] = q.W
		}
		seen := map[uint32]bool{}
		for _, b := range blocks {
			if !slices.IsSorted(b.Docs) || len(b.Docs) == 0 {
				t.Fatalf("dim %d: block docs %v", dim, b.Docs)
			}
			k, ok := slices.BinarySearch(b.SumDims, uint32(dim))
			if !ok {
				t.Fatalf("dim %d: summary %v lacks the dimension", dim, b.SumDims)
			}
			for _, doc := range b.Docs {
				w, kept := weight[doc]
				if !kept || seen[doc] {
					t.Fatalf("dim %d: doc %d kept %v, seen %v", dim, doc, kept, seen[doc])
				}
				seen[doc] = true
				if float32(b.SumVals[k])*b.Scale < w*(1-1e-6) {
					t.Fatalf("dim %d: summary %v*%v below doc %d's %v", dim, b.SumVals[k], b.Scale, doc, w)
				}
			}
		}
		if len(seen) != len(weight) {
			t.Fatalf("dim %d: %d docs placed, want %d", dim, len(seen), len(weight))
		}
	}
}

// TestPlaceShortListIsOneBlock checks that a list of at most singleBlock
// postings is one block, and an empty list none.
func TestPlaceShortListIsOneBlock(t *testing.T) {
	fwd, lists := randomField(rand.New(rand.NewPCG(3, 4)), 40, 3)
	c := NewClusterer(fwd, len(lists), Params{Lambda: 100, CentroidFraction: 0.5, Alpha: 1})
	for dim, list := range lists {
		list = list[:min(len(list), singleBlock)]
		if got := c.Place(uint32(dim), list); len(got) != 1 || len(got[0].Docs) != len(list) {
			t.Fatalf("dim %d: %d postings in %d blocks", dim, len(list), len(got))
		}
	}
	if got := c.Place(0, nil); got != nil {
		t.Fatalf("empty list: %d blocks", len(got))
	}
}
