package bp

import (
	"context"
	"testing"
)

// FuzzReorder: any bytes, read as a graph shape, an initial order and a
// budget, give an error or a valid permutation, never a panic.
func FuzzReorder(f *testing.F) {
	f.Add([]byte{4, 0, 1, 2, 1, 3, 0, 2}, []byte{1, 0, 3, 2}, uint8(2), uint8(0))
	f.Add([]byte{0, 0, 0}, []byte{}, uint8(0), uint8(3))
	f.Add([]byte{9, 2, 5, 1, 2, 5, 7, 1, 1, 1, 3, 8, 8, 2}, []byte(nil), uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, shape, initial []byte, minPart, depth uint8) {
		g := &Graph{Offsets: []uint64{0}}
		raw := true
		if len(shape) > 0 {
			g.NumTerms = uint32(shape[0] % 40)
			raw = shape[0]&0x80 != 0
			shape = shape[1:]
		}
		// Each byte: high bit ends the document, low bits are a term id
		// (raw: not sorted, so invalid graphs are reached too).
		for _, c := range shape {
			g.Terms = append(g.Terms, uint32(c&0x7f)%32)
			if c&0x80 != 0 {
				g.Offsets = append(g.Offsets, uint64(len(g.Terms)))
			}
		}
		g.Offsets = append(g.Offsets, uint64(len(g.Terms)))
		if !raw { // most inputs: a valid graph through the Builder
			b := NewBuilder(g.NumTerms)
			for d := range g.NumDocs() {
				_ = b.Add(g.Terms[g.Offsets[d]:g.Offsets[d+1]])
			}
			g = b.Graph()
		}
		var order []uint32
		if len(initial) > 0 {
			for _, c := range initial {
				order = append(order, uint32(c))
			}
		}
		b := Budget{MinPartition: int(minPart % 8), MaxDepth: int(depth % 4), Workers: 2, Iterations: 3}
		res, err := Reorder(context.Background(), g, order, b)
		if err != nil {
			return
		}
		checkPerm(t, res.Order, g.NumDocs())
		if c := LogGapCost(g, res.Order); c != res.CostAfter || res.CostAfter > res.CostBefore {
			t.Fatalf("cost %v -> %v, LogGapCost of Order %v", res.CostBefore, res.CostAfter, c)
		}
	})
}
