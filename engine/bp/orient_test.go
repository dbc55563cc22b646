package bp

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestOrientReachesLocalOptimum: on random graphs and orders, orienting
// until a sweep changes nothing leaves a permutation whose LogGapCost is
// no higher than before, position lists that match the order, and no span
// of the tree whose reversal or swap of halves (checked by brute force)
// would lower the cost: the incremental deltas are exact.
func TestOrientReachesLocalOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 40 {
		n := 8 + rng.IntN(120)
		terms := 4 + rng.IntN(40)
		b := NewBuilder(uint32(terms))
		for range n {
			var ts []uint32
			for range rng.IntN(8) {
				ts = append(ts, uint32(rng.IntN(terms)))
			}
			if err := b.Add(ts); err != nil {
				t.Fatal(err)
			}
		}
		g := b.Graph()
		order := identity(n)
		rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		before := LogGapCost(g, order)
		st := newStopper(context.Background(), noDeadline)
		o, err := newOrienter(st, g, order, log2Table(n+3))
		if err != nil {
			t.Fatal(err)
		}
		for range 100 {
			flips, err := o.orient()
			if err != nil {
				t.Fatal(err)
			}
			if flips == 0 {
				break
			}
		}
		checkPerm(t, order, n)
		after := LogGapCost(g, order)
		if after > before+1e-9 {
			t.Fatalf("trial %d: cost %.3f -> %.3f", trial, before, after)
		}
		fresh, err := newOrienter(st, g, order, log2Table(n+3))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fresh.tPos, o.tPos) {
			t.Fatalf("trial %d: position lists out of date after flips", trial)
		}
		for _, level := range levels(n) {
			for _, s := range level {
				flipped := slices.Clone(order)
				slices.Reverse(flipped[s.lo:s.hi])
				if c := LogGapCost(g, flipped); c < after-1e-6 {
					t.Fatalf("trial %d: reversing [%d,%d) lowers the cost %.3f -> %.3f", trial, s.lo, s.hi, after, c)
				}
				swapped := slices.Clone(order)
				rotate(swapped[s.lo:s.hi], (s.hi-s.lo)/2)
				if c := LogGapCost(g, swapped); c < after-1e-6 {
					t.Fatalf("trial %d: swapping the halves of [%d,%d) lowers the cost %.3f -> %.3f", trial, s.lo, s.hi, after, c)
				}
			}
		}
		if math.IsNaN(after) {
			t.Fatalf("trial %d: NaN cost", trial)
		}
	}
}

// TestOrientLowersRealCost: on the real-text graph, orientation after the
// bisection lowers LogGapCost below what bisection alone reaches.
func TestOrientLowersRealCost(t *testing.T) {
	g := realGraph(t)
	res, err := Reorder(context.Background(), g, nil, Budget{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Bisection alone: the same pass without orientation.
	st := newStopper(context.Background(), noDeadline)
	p, _ := Budget{Workers: 1}.normalize()
	order := identity(g.NumDocs())
	cg, err := compactSparse(st, g)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newRun(cg, order, p, st, log2Table(g.NumDocs()+3)).bisectAll(); err != nil {
		t.Fatal(err)
	}
	bisected := LogGapCost(g, order)
	if res.CostAfter >= bisected {
		t.Errorf("cost with orientation %.0f, bisection alone %.0f", res.CostAfter, bisected)
	}
	t.Logf("initial %.0f, bisection %.0f, with orientation %.0f", res.CostBefore, bisected, res.CostAfter)
}

// TestOrientStopsAtDeadline: with the deadline already past, orientation
// stops at its first check with errDeadline (which Reorder reports as a
// truncated pass) and leaves the order a permutation.
func TestOrientStopsAtDeadline(t *testing.T) {
	g := realGraph(t)
	if g.NumEdges() < 2*unitWork {
		t.Fatalf("graph of %d edges is too small to reach a check", g.NumEdges())
	}
	order := identity(g.NumDocs())
	st := newStopper(context.Background(), time.Now().Add(-time.Second))
	o, err := newOrienter(st, g, order, log2Table(g.NumDocs()+3))
	if err == nil {
		_, err = o.orient()
	}
	if !errors.Is(err, errDeadline) {
		t.Fatalf("error %v, want errDeadline", err)
	}
	checkPerm(t, order, g.NumDocs())
}
