package bp

import (
	"fmt"
	"runtime"
	"time"
)

// Defaults and bounds applied to a Budget's zero fields.
const (
	// DefaultMinPartition is the smallest partition split when
	// Budget.MinPartition is 0.
	DefaultMinPartition = 16
	// DefaultIterations is the number of swap rounds per partition when
	// Budget.Iterations is 0.
	DefaultIterations = 20
	// MaxWorkers bounds Budget.Workers.
	MaxWorkers = 64
)

// Budget bounds one pass. The zero Budget means: no depth, time or memory
// limit, default partition size and iterations, GOMAXPROCS workers.
type Budget struct {
	// MaxDepth is the recursion depth limit (0 = until partitions reach
	// MinPartition); the spec's "depth floor": no bisection deeper than
	// level MaxDepth, where the split of all documents is level 1.
	MaxDepth int
	// MinPartition: do not split partitions smaller than this (default
	// 16, at least 2).
	MinPartition int
	// Iterations is the number of swap rounds per partition (default 20);
	// a partition stops earlier when a round swaps nothing.
	Iterations int
	// Deadline is a wall clock: when reached, refinement stops and Reorder
	// returns the current (valid) order with Converged=false.
	Deadline time.Time
	// MaxMemoryBytes (0 = unlimited): when EstimateMemory exceeds it, the
	// graph is trimmed, dropping the terms with df<2 (they never help),
	// then the highest-degree terms, until under budget; see Result.Trimmed.
	MaxMemoryBytes int64
	// Workers bounds the parallel recursion on disjoint halves (default
	// GOMAXPROCS, at most MaxWorkers). It does not change the result.
	Workers int
}

// params is a Budget with defaults applied.
type params struct {
	maxDepth     int       // 0 = unlimited
	minPartition int       // >= 2
	iterations   int       // >= 1
	deadline     time.Time // zero = none
	maxMemory    int64     // 0 = unlimited
	workers      int       // 1..MaxWorkers
}

// normalize applies the defaults, rejecting negative fields.
func (b Budget) normalize() (params, error) {
	if b.MaxDepth < 0 || b.MinPartition < 0 || b.Iterations < 0 || b.MaxMemoryBytes < 0 || b.Workers < 0 {
		return params{}, fmt.Errorf("%w: negative field in %+v", ErrInvalidBudget, b)
	}
	p := params{
		maxDepth:     b.MaxDepth,
		minPartition: b.MinPartition,
		iterations:   b.Iterations,
		deadline:     b.Deadline,
		maxMemory:    b.MaxMemoryBytes,
		workers:      b.Workers,
	}
	if p.minPartition == 0 {
		p.minPartition = DefaultMinPartition
	}
	p.minPartition = max(p.minPartition, 2)
	if p.iterations == 0 {
		p.iterations = DefaultIterations
	}
	if p.workers == 0 {
		p.workers = runtime.GOMAXPROCS(0)
	}
	p.workers = min(max(p.workers, 1), MaxWorkers)
	return p, nil
}

// Bytes per unit held during refinement, used by EstimateMemory.
const (
	// bytesPerDoc: offset (8), order (4), key (8), selection slot (4),
	// move flag (1), log2 and delta table entries (16), the local swaps'
	// change mark (4), keyOrder's permutation buffer (4).
	bytesPerDoc = 8 + 4 + 8 + 4 + 1 + 16 + 4 + 4
	// bytesPerEdge: one term id in the CSR, one position in the
	// orientation's position lists.
	bytesPerEdge = 4 + 4
	// bytesPerTerm: the orientation's list offset (8), cursor (8), first
	// occurrences in the span and in its right half (16) and stamp (4).
	bytesPerTerm = 8 + 8 + 16 + 4
	// bytesPerWorkerTerm: per worker, two degrees (8), two cached gains
	// (8) and a touched-list slot (4).
	bytesPerWorkerTerm = 8 + 8 + 4
)

// EstimateMemory returns the bytes Reorder holds while refining g with
// the given number of workers (0 = GOMAXPROCS): the graph's arrays, the
// per-document arrays, each worker's per-term arrays and the
// orientation's position lists. Budget.MaxMemoryBytes
// is compared with it.
func EstimateMemory(g *Graph, workers int) int64 {
	if g == nil {
		return 0
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, MaxWorkers)
	terms := int64(g.NumTerms)
	if edges := int64(g.NumEdges()); terms > edges+sparseSlack {
		terms = edges // compacted first: at most one id per posting
	}
	return estimate(g.NumDocs(), int64(g.NumEdges()), terms, workers)
}

// estimate is EstimateMemory from the graph's dimensions.
func estimate(docs int, edges, terms int64, workers int) int64 {
	return bytesPerDoc*int64(docs) + bytesPerEdge*edges + (bytesPerTerm+bytesPerWorkerTerm*int64(workers))*terms
}
