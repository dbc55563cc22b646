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

// TestLocalSwapsExact: on random graphs and orders, the cost change
// swapDeltas computes for every exchange of two documents up to swapWindow
// apart equals LogGapCost recomputed from scratch; after localSwaps the
// cost is no higher, the order a permutation and the position lists those
// of the order; and when the sweeps stop early, no exchange in the window
// lowers the cost (checked by brute force).
func TestLocalSwapsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 40 {
		n := 2 + rng.IntN(90)
		terms := 2 + rng.IntN(30)
		b := NewBuilder(uint32(terms))
		for range n {
			var ts []uint32
			for range rng.IntN(9) {
				ts = append(ts, uint32(rng.IntN(terms)))
			}
			if err := b.Add(ts); err != nil {
				t.Fatal(err)
			}
		}
		g := b.Graph()
		order := identity(n)
		rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		st := newStopper(context.Background(), noDeadline)
		o, err := newOrienter(st, g, order, log2Table(n+3))
		if err != nil {
			t.Fatal(err)
		}
		base := LogGapCost(g, order)
		var deltas [swapWindow + 1]float64
		for p := 0; p+1 < n; p++ {
			w := min(swapWindow, n-1-p)
			seekCursors(o, p)
			o.swapDeltas(p, w, deltas[:])
			for k := 1; k <= w; k++ {
				got := deltas[k]
				swapped := slices.Clone(order)
				swapped[p], swapped[p+k] = swapped[p+k], swapped[p]
				if want := LogGapCost(g, swapped) - base; math.Abs(got-want) > 1e-6 {
					t.Fatalf("trial %d: exchanging %d and %d: delta %.6f, recomputed %.6f", trial, p, p+k, got, want)
				}
			}
		}
		swaps, err := o.localSwaps()
		if err != nil {
			t.Fatal(err)
		}
		checkPerm(t, order, n)
		after := LogGapCost(g, order)
		if after > base+1e-9 || (swaps > 0 && after >= base) {
			t.Fatalf("trial %d: %d swaps, cost %.3f -> %.3f", trial, swaps, base, after)
		}
		fresh, err := newOrienter(st, g, order, log2Table(n+3))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fresh.tPos, o.tPos) {
			t.Fatalf("trial %d: position lists out of date after %d swaps", trial, swaps)
		}
		if more, err := o.localSwaps(); err != nil || more > 0 {
			continue // the sweeps were cut by swapSweeps: no optimum to check
		}
		for p := 0; p+1 < n; p++ {
			for q := p + 1; q < n && q <= p+swapWindow; q++ {
				swapped := slices.Clone(order)
				swapped[p], swapped[q] = swapped[q], swapped[p]
				if c := LogGapCost(g, swapped); c < after-1e-6 {
					t.Fatalf("trial %d: exchanging %d and %d lowers the cost %.3f -> %.3f", trial, p, q, after, c)
				}
			}
		}
	}
}

// seekCursors sets the cursors as the sweep has them at position p:
// cursor[t] is the index of t's first position >= p.
func seekCursors(o *orienter, p int) {
	for t := range o.cursor {
		i := o.tOff[t]
		for i < o.tOff[t+1] && int(o.tPos[i]) < p {
			i++
		}
		o.cursor[t] = i
	}
}

// TestLocalSwapsLowerRealCost: on the real-text graph, the local swaps
// after bisection and orientation lower LogGapCost further.
func TestLocalSwapsLowerRealCost(t *testing.T) {
	g := realGraph(t)
	st := newStopper(context.Background(), noDeadline)
	p, _ := Budget{Workers: 1}.normalize()
	cg, err := compactSparse(st, g)
	if err != nil {
		t.Fatal(err)
	}
	order := identity(g.NumDocs())
	logs := log2Table(g.NumDocs() + 3)
	if _, err := newRun(cg, order, p, st, logs).bisectAll(); err != nil {
		t.Fatal(err)
	}
	o, err := newOrienter(st, cg, order, logs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.orient(); err != nil {
		t.Fatal(err)
	}
	oriented := LogGapCost(g, order)
	swaps, err := o.localSwaps()
	if err != nil {
		t.Fatal(err)
	}
	swapped := LogGapCost(g, order)
	if swaps == 0 || swapped >= oriented {
		t.Errorf("%d swaps: cost %.0f after orientation, %.0f after the swaps", swaps, oriented, swapped)
	}
	res, err := Reorder(context.Background(), g, nil, Budget{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.CostAfter != swapped {
		t.Errorf("Reorder's cost %.3f, bisection+orientation+swaps %.3f", res.CostAfter, swapped)
	}
	t.Logf("oriented %.0f, after %d swaps %.0f", oriented, swaps, swapped)
}

// TestLocalSwapsStopAtDeadline: with the deadline already past, the swaps
// stop at their first check with errDeadline and leave a permutation.
func TestLocalSwapsStopAtDeadline(t *testing.T) {
	g := realGraph(t)
	order := identity(g.NumDocs())
	o, err := newOrienter(newStopper(context.Background(), noDeadline), g, order, log2Table(g.NumDocs()+3))
	if err != nil {
		t.Fatal(err)
	}
	o.st = newStopper(context.Background(), time.Now().Add(-time.Second))
	if _, err := o.localSwaps(); !errors.Is(err, errDeadline) {
		t.Fatalf("error %v, want errDeadline", err)
	}
	checkPerm(t, order, g.NumDocs())
}
