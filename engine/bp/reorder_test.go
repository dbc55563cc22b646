package bp

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestReorderRealText: on real text in shuffled order, one pass is a
// permutation and cuts the log-gap cost by at least 10% and the real
// delta-varint postings size too.
func TestReorderRealText(t *testing.T) {
	g := realGraph(t)
	start := time.Now()
	res, err := Reorder(context.Background(), g, nil, Budget{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	checkPerm(t, res.Order, g.NumDocs())
	if !res.Converged || res.Depth == 0 || res.Trimmed != 0 || res.KeptInitial {
		t.Errorf("Converged %v Depth %d Trimmed %d KeptInitial %v, want true, >0, 0, false", res.Converged, res.Depth, res.Trimmed, res.KeptInitial)
	}
	if want := LogGapCost(g, nil); res.CostBefore != want {
		t.Errorf("CostBefore %.0f, want LogGapCost of the shuffled order %.0f", res.CostBefore, want)
	}
	if want := LogGapCost(g, res.Order); res.CostAfter != want {
		t.Errorf("CostAfter %.0f, want LogGapCost of Order %.0f", res.CostAfter, want)
	}
	if res.CostAfter > 0.9*res.CostBefore {
		t.Errorf("log-gap cost %.0f -> %.0f: less than 10%% gain", res.CostBefore, res.CostAfter)
	}
	before, after := varintBytes(g, identity(g.NumDocs())), varintBytes(g, res.Order)
	if after >= before {
		t.Errorf("varint postings %d -> %d bytes: no gain", before, after)
	}
	t.Logf("%d docs, %d postings, depth %d, %v: log-gap %.0f -> %.0f bits (-%.1f%%), varint %d -> %d bytes (-%.1f%%)",
		g.NumDocs(), g.NumEdges(), res.Depth, elapsed, res.CostBefore, res.CostAfter,
		100*(1-res.CostAfter/res.CostBefore), before, after, 100*(1-float64(after)/float64(before)))
}

// TestReorderWarmStart: a pass started from a previous pass's order is not
// worse than that order, and deepening a depth-truncated pass gets close
// to a full pass.
func TestReorderWarmStart(t *testing.T) {
	g := realGraph(t)
	ctx := context.Background()
	full, err := Reorder(ctx, g, nil, Budget{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Reorder(ctx, g, full.Order, Budget{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkPerm(t, again.Order, g.NumDocs())
	if again.CostBefore != full.CostAfter || again.CostAfter > full.CostAfter || again.KeptInitial {
		t.Errorf("warm pass: %.0f -> %.0f (kept initial %v), previous pass ended at %.0f", again.CostBefore, again.CostAfter, again.KeptInitial, full.CostAfter)
	}
	shallow, err := Reorder(ctx, g, nil, Budget{Workers: 1, MaxDepth: 3})
	if err != nil {
		t.Fatal(err)
	}
	deeper, err := Reorder(ctx, g, shallow.Order, Budget{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if shallow.Converged || !deeper.Converged || deeper.CostAfter > shallow.CostAfter {
		t.Errorf("depth 3 then full: converged %v, %v; cost %.0f then %.0f", shallow.Converged, deeper.Converged, shallow.CostAfter, deeper.CostAfter)
	}
	if deeper.CostAfter > 1.02*full.CostAfter {
		t.Errorf("depth 3 then full: %.0f, more than 2%% above one full pass %.0f", deeper.CostAfter, full.CostAfter)
	}
	t.Logf("full %.0f, warm again %.0f, depth 3 %.0f then full %.0f", full.CostAfter, again.CostAfter, shallow.CostAfter, deeper.CostAfter)
}

// TestReorderDeadlinePast: a deadline already past returns the initial
// order at once, unconverged (Q13: truncation is a success).
func TestReorderDeadlinePast(t *testing.T) {
	g := realGraph(t)
	start := time.Now()
	res, err := Reorder(context.Background(), g, nil, Budget{Deadline: start.Add(-time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("took %v with a past deadline", elapsed)
	}
	checkPerm(t, res.Order, g.NumDocs())
	if res.Converged || res.Depth != 0 || !slices.Equal(res.Order, identity(g.NumDocs())) {
		t.Errorf("Converged %v Depth %d, identity %v; want false, 0, true", res.Converged, res.Depth, slices.Equal(res.Order, identity(g.NumDocs())))
	}
}

// TestReorderDeadlineMidway: a deadline reached during refinement stops
// it and returns a valid, already improved order. A fake clock advancing
// one second per reading makes the stop point exact.
func TestReorderDeadlineMidway(t *testing.T) {
	g := realGraph(t)
	start := time.Now()
	var ticks atomic.Int64
	timeNow = func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * time.Second) }
	t.Cleanup(func() { timeNow = time.Now })
	far := start.Add(1000 * time.Hour)
	full, err := Reorder(context.Background(), g, nil, Budget{Workers: 1, Deadline: far})
	if err != nil || !full.Converged {
		t.Fatalf("far deadline: %v, converged %v", err, full.Converged)
	}
	total := ticks.Load()
	for _, at := range []int64{total / 10, total / 2, total - 1} {
		ticks.Store(0)
		res, err := Reorder(context.Background(), g, nil, Budget{Workers: 2, Deadline: start.Add(time.Duration(at) * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		checkPerm(t, res.Order, g.NumDocs())
		if res.Converged || res.CostAfter >= res.CostBefore || res.CostAfter < full.CostAfter*0.99 {
			t.Errorf("deadline at clock reading %d/%d: Converged %v, cost %.0f -> %.0f (full pass %.0f)", at, total, res.Converged, res.CostBefore, res.CostAfter, full.CostAfter)
		}
		t.Logf("deadline at clock reading %d/%d: depth %d, cost %.0f -> %.0f (full pass %.0f)", at, total, res.Depth, res.CostBefore, res.CostAfter, full.CostAfter)
	}
}

// TestReorderMaxDepth: the depth floor truncates (Converged=false) only
// when it stops a split.
func TestReorderMaxDepth(t *testing.T) {
	g := realGraph(t)
	for _, c := range []struct {
		maxDepth  int
		converged bool
	}{{1, false}, {4, false}, {64, true}} {
		res, err := Reorder(context.Background(), g, nil, Budget{MaxDepth: c.maxDepth})
		if err != nil {
			t.Fatal(err)
		}
		checkPerm(t, res.Order, g.NumDocs())
		if res.Converged != c.converged || res.Depth > c.maxDepth || (!c.converged && res.Depth != c.maxDepth) {
			t.Errorf("MaxDepth %d: Converged %v Depth %d", c.maxDepth, res.Converged, res.Depth)
		}
		if res.CostAfter >= res.CostBefore {
			t.Errorf("MaxDepth %d: cost %.0f -> %.0f", c.maxDepth, res.CostBefore, res.CostAfter)
		}
	}
}

// TestReorderMemoryBudget: a budget below the estimate trims terms and
// still returns a valid, improved permutation; a hopeless budget trims
// every term.
func TestReorderMemoryBudget(t *testing.T) {
	g := realGraph(t)
	est := EstimateMemory(g, 1)
	res, err := Reorder(context.Background(), g, nil, Budget{Workers: 1, MaxMemoryBytes: est * 7 / 10})
	if err != nil {
		t.Fatal(err)
	}
	checkPerm(t, res.Order, g.NumDocs())
	hapax := 0
	for _, p := range invert(g) {
		if len(p) == 1 {
			hapax++
		}
	}
	// Beyond the df=1 terms, some of the highest-degree ones must go.
	if res.Trimmed <= hapax || res.CostAfter > 0.9*res.CostBefore {
		t.Errorf("Trimmed %d (%d of df 1), cost %.0f -> %.0f", res.Trimmed, hapax, res.CostBefore, res.CostAfter)
	}
	t.Logf("budget %d of %d bytes: %d terms trimmed (%d of df 1), cost %.0f -> %.0f", est*7/10, est, res.Trimmed, hapax, res.CostBefore, res.CostAfter)
	res, err = Reorder(context.Background(), g, nil, Budget{Workers: 1, MaxMemoryBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkPerm(t, res.Order, g.NumDocs())
	if res.Trimmed == 0 || res.CostAfter != res.CostBefore {
		t.Errorf("1-byte budget: Trimmed %d, cost %.0f -> %.0f", res.Trimmed, res.CostBefore, res.CostAfter)
	}
}

// TestReorderWorkersDeterministic: Workers=1 and Workers=4 give the same
// order, and so do repeated runs.
func TestReorderWorkersDeterministic(t *testing.T) {
	g := realGraph(t)
	one, err := Reorder(context.Background(), g, nil, Budget{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		four, err := Reorder(context.Background(), g, nil, Budget{Workers: 4})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(one.Order, four.Order) || one.Depth != four.Depth {
			t.Fatalf("Workers=4 order differs from Workers=1")
		}
	}
}

// TestReorderSeparatesClusters: two interleaved groups of documents with
// disjoint vocabularies end up in two contiguous runs.
func TestReorderSeparatesClusters(t *testing.T) {
	b := NewBuilder(200)
	for d := range 512 {
		base := uint32(d%2) * 100
		terms := []uint32{base, base + 1 + uint32(d%7), base + 10 + uint32(d%13), base + 30 + uint32(d%29)}
		if err := b.Add(terms); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Reorder(context.Background(), b.Graph(), nil, Budget{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range res.Order {
		if int(d%2) != int(res.Order[0]%2) != (i >= 256) {
			t.Fatalf("position %d holds doc %d: groups not separated", i, d)
		}
	}
	t.Logf("clusters: %.0f -> %.0f", res.CostBefore, res.CostAfter)
}

// TestReorderKeepsBetterInitial: on documents already in a good
// sequential order (term j is held by documents j..j+3, each with
// probability 3/4: every term spans at most four documents), BP's
// bisection, orientation and local swaps do worse, so the pass keeps the
// initial order and reports it. (The earlier input, terms drawn at random
// from a window sliding with the doc id, is no longer one: the local
// swaps end below its initial cost.)
func TestReorderKeepsBetterInitial(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 200
	b := NewBuilder(n)
	for d := range n {
		var ts []uint32
		for j := max(d-3, 0); j <= d; j++ {
			if rng.IntN(4) > 0 {
				ts = append(ts, uint32(j))
			}
		}
		if err := b.Add(ts); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Reorder(context.Background(), b.Graph(), nil, Budget{Workers: 1, MinPartition: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !res.KeptInitial || res.CostAfter != res.CostBefore || !slices.Equal(res.Order, identity(n)) {
		t.Errorf("KeptInitial %v, cost %.1f -> %.1f, identity %v", res.KeptInitial, res.CostBefore, res.CostAfter, slices.Equal(res.Order, identity(n)))
	}
}

// TestReorderInvalidInput: bad graphs, orders and budgets are errors, not
// panics; LogGapCost answers NaN.
func TestReorderInvalidInput(t *testing.T) {
	ok := &Graph{NumTerms: 3, Offsets: []uint64{0, 2, 3}, Terms: []uint32{0, 2, 1}}
	graphs := map[string]*Graph{
		"nil":          nil,
		"terms only":   {NumTerms: 1, Terms: []uint32{0}},
		"first offset": {NumTerms: 3, Offsets: []uint64{1, 2}, Terms: []uint32{0, 1}},
		"last offset":  {NumTerms: 3, Offsets: []uint64{0, 5}, Terms: []uint32{0, 1}},
		"decreasing":   {NumTerms: 3, Offsets: []uint64{0, 2, 1, 2}, Terms: []uint32{0, 1}},
		"huge offset":  {NumTerms: 3, Offsets: []uint64{0, math.MaxUint64, 2}, Terms: []uint32{0, 1}},
		"term range":   {NumTerms: 1, Offsets: []uint64{0, 2}, Terms: []uint32{0, 1}},
		"unsorted":     {NumTerms: 3, Offsets: []uint64{0, 2}, Terms: []uint32{1, 0}},
		"repeated":     {NumTerms: 3, Offsets: []uint64{0, 2}, Terms: []uint32{1, 1}},
	}
	for name, g := range graphs {
		if _, err := Reorder(context.Background(), g, nil, Budget{}); !errors.Is(err, ErrInvalidGraph) {
			t.Errorf("%s: Reorder error %v, want ErrInvalidGraph", name, err)
		}
		if c := LogGapCost(g, nil); !math.IsNaN(c) {
			t.Errorf("%s: LogGapCost %v, want NaN", name, c)
		}
	}
	for _, order := range [][]uint32{{}, {0}, {0, 0}, {0, 2}, {1, 0, 2}} {
		if _, err := Reorder(context.Background(), ok, order, Budget{}); !errors.Is(err, ErrInvalidOrder) {
			t.Errorf("order %v: error %v, want ErrInvalidOrder", order, err)
		}
		if c := LogGapCost(ok, order); !math.IsNaN(c) {
			t.Errorf("order %v: LogGapCost %v, want NaN", order, c)
		}
	}
	for _, b := range []Budget{{MaxDepth: -1}, {MinPartition: -1}, {Iterations: -1}, {MaxMemoryBytes: -1}, {Workers: -1}} {
		if _, err := Reorder(context.Background(), ok, nil, b); !errors.Is(err, ErrInvalidBudget) {
			t.Errorf("budget %+v: error %v, want ErrInvalidBudget", b, err)
		}
	}
	for _, g := range []*Graph{{}, {NumTerms: 5, Offsets: []uint64{0}}, ok} {
		res, err := Reorder(context.Background(), g, nil, Budget{MinPartition: 2})
		if err != nil || !res.Converged {
			t.Errorf("graph %+v: %v, converged %v", g, err, res.Converged)
		}
		checkPerm(t, res.Order, g.NumDocs())
	}
}

// TestReorderSparseTermIDs: a huge NumTerms with few postings is
// compacted, not allocated; costs do not depend on term names.
func TestReorderSparseTermIDs(t *testing.T) {
	dense, sparse := NewBuilder(8), NewBuilder(math.MaxUint32)
	for d := range 64 {
		ts := []uint32{uint32(d % 2), 2 + uint32(d%3), 5 + uint32(d%3)}
		if err := dense.Add(ts); err != nil {
			t.Fatal(err)
		}
		for i := range ts {
			ts[i] = ts[i]*500_000_000 + 7
		}
		if err := sparse.Add(ts); err != nil {
			t.Fatal(err)
		}
	}
	a, err := Reorder(context.Background(), dense.Graph(), nil, Budget{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Reorder(context.Background(), sparse.Graph(), nil, Budget{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Order, b.Order) || a.CostAfter != b.CostAfter || LogGapCost(sparse.Graph(), nil) != a.CostBefore {
		t.Errorf("sparse ids: order equal %v, cost %.1f vs %.1f", slices.Equal(a.Order, b.Order), a.CostAfter, b.CostAfter)
	}
	if est := EstimateMemory(sparse.Graph(), 1); est > 1<<20 {
		t.Errorf("EstimateMemory %d for 64 docs", est)
	}
}

// TestLogGapCost checks the cost on a hand-computed example.
func TestLogGapCost(t *testing.T) {
	// Term 0 in docs 0, 1, 3; term 1 in doc 2.
	g := &Graph{NumTerms: 2, Offsets: []uint64{0, 1, 2, 3, 4}, Terms: []uint32{0, 0, 1, 0}}
	// Identity: term 0 gaps 0, 0, 1; term 1 gap 2.
	if c, want := LogGapCost(g, nil), math.Log2(2)+math.Log2(3); math.Abs(c-want) > 1e-9 {
		t.Errorf("identity: %v, want %v", c, want)
	}
	// Order 2,0,1,3: term 0 at 1, 2, 3 (gaps 1, 0, 0); term 1 at 0.
	if c, want := LogGapCost(g, []uint32{2, 0, 1, 3}), math.Log2(2); math.Abs(c-want) > 1e-9 {
		t.Errorf("reordered: %v, want %v", c, want)
	}
}
