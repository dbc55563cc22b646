package bp

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// invert returns the postings of every term of g.
func invert(g *Graph) [][]uint32 {
	post := make([][]uint32, g.NumTerms)
	for d := range g.NumDocs() {
		for _, t := range g.docTerms(uint32(d)) {
			post[t] = append(post[t], uint32(d))
		}
	}
	return post
}

// TestBuilder: Add sorts and deduplicates, rejects out-of-range terms
// without changing the graph, and the result validates.
func TestBuilder(t *testing.T) {
	b := NewBuilder(5)
	if err := b.Add([]uint32{3, 1, 3, 0}); err != nil {
		t.Fatal(err)
	}
	if err := b.Add([]uint32{1, 5}); !errors.Is(err, ErrInvalidGraph) {
		t.Fatalf("term 5 of 5: error %v", err)
	}
	if err := b.Add(nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Add([]uint32{2, 4}); err != nil {
		t.Fatal(err)
	}
	g := b.Graph()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	want := &Graph{NumTerms: 5, Offsets: []uint64{0, 3, 3, 5}, Terms: []uint32{0, 1, 3, 2, 4}}
	if g.NumDocs() != 3 || !slices.Equal(g.Offsets, want.Offsets) || !slices.Equal(g.Terms, want.Terms) {
		t.Errorf("graph %+v, want %+v", g, want)
	}
	if err := b.Add([]uint32{0}); err != nil || g.NumDocs() != 3 || b.MemBytes() <= 0 {
		t.Errorf("Add after Graph: %v, earlier graph now has %d docs", err, g.NumDocs())
	}
}

// TestFromPostings: transposing the postings of the real graph gives the
// same graph; bad postings are errors.
func TestFromPostings(t *testing.T) {
	g := realGraph(t)
	post := invert(g)
	out, err := FromPostings(context.Background(), g.NumDocs(), g.NumTerms, func(t uint32) []uint32 { return post[t] })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Offsets, g.Offsets) || !slices.Equal(out.Terms, g.Terms) {
		t.Fatal("FromPostings differs from the built graph")
	}
	bad := map[string][][]uint32{
		"range":    {{0, 3}},
		"unsorted": {{1, 0}},
		"repeated": {{1, 1}},
	}
	for name, p := range bad {
		if _, err := FromPostings(context.Background(), 3, 1, func(t uint32) []uint32 { return p[t] }); !errors.Is(err, ErrInvalidGraph) {
			t.Errorf("%s: error %v", name, err)
		}
	}
	flip := 0
	changing := func(uint32) []uint32 { flip++; return [][]uint32{{0}, {0, 1}}[flip%2] }
	if _, err := FromPostings(context.Background(), 2, 1, changing); !errors.Is(err, ErrInvalidGraph) {
		t.Errorf("changing postings: error %v", err)
	}
	if _, err := FromPostings(context.Background(), -1, 1, changing); !errors.Is(err, ErrInvalidGraph) {
		t.Errorf("negative docs: error %v", err)
	}
}

// TestSelectFirst: selection puts exactly the m first elements (by a
// total order) in front, for sizes around the small-range cutoff.
func TestSelectFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	st := newStopper(context.Background(), noDeadline)
	for _, n := range []int{0, 1, 2, 3, 16, 17, 100, 5000} {
		keys := make([]int, n)
		for i := range keys {
			keys[i] = rng.IntN(10) // many ties, broken by index
		}
		before := func(a, b uint32) bool {
			if keys[a] != keys[b] {
				return keys[a] > keys[b]
			}
			return a < b
		}
		want := identity(n)
		slices.SortFunc(want, func(a, b uint32) int { return order3(before, a, b) })
		for _, m := range []int{0, n / 3, n / 2, n} {
			a := identity(n)
			rng.Shuffle(n, func(i, j int) { a[i], a[j] = a[j], a[i] })
			if err := selectFirst(st, a, m, before); err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(a[:m])
			slices.Sort(got)
			exp := slices.Clone(want[:m])
			slices.Sort(exp)
			if !slices.Equal(got, exp) {
				t.Fatalf("n %d m %d: wrong selection", n, m)
			}
		}
	}
}
