package bp

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// run is the state of one Reorder pass shared by its workers. The
// per-position arrays are indexed by position in order; partitions of a
// level own disjoint position ranges, so workers never share an entry.
type run struct {
	// g is the graph refined (possibly trimmed).
	g *Graph
	// p is the normalized budget.
	p params
	// stop signals cancellation and the deadline.
	stop *stopper
	// order[pos] is the document at position pos, permuted in place.
	order []uint32
	// keys[pos] is the "belongs right" key of the document at pos.
	keys []float64
	// sel holds the partition-relative positions being selected.
	sel []uint32
	// plainHalves turns keyOrder off (tests compare against it).
	plainHalves bool
	// tmp[pos] holds documents while a partition is permuted (keyOrder).
	tmp []uint32
	// moved[pos] flags the document at pos to change half this round.
	moved []bool
	// logs[i] = log2(i), for 0 < i <= len(order)+2.
	logs []float64
	// delta[d] = h(d) - h(d-1) with h(d) = d*log2(d+1), for
	// 0 < d <= len(order)+1: the change of a term's cost in a half when
	// its degree there grows to d (see termGains).
	delta []float64
	// scratch[w] is worker w's per-term state, allocated on first use.
	scratch []*scratch
}

// span is a partition: the positions [lo, hi) of order.
type span struct{ lo, hi int }

// outcome is what a pass reports about its recursion.
type outcome struct {
	// depth is the deepest level bisected, fully or in part (0 for none).
	depth int
	// truncated is set when the depth floor or the deadline left a
	// partition unsplit or its refinement unfinished.
	truncated bool
}

// newRun prepares a pass over g starting from order (taken over).
func newRun(g *Graph, order []uint32, p params, st *stopper, logs []float64) *run {
	n := len(order)
	return &run{
		g: g, p: p, stop: st, order: order, logs: logs,
		keys:    make([]float64, n),
		sel:     make([]uint32, n),
		moved:   make([]bool, n),
		tmp:     make([]uint32, n),
		scratch: make([]*scratch, p.workers),
		delta:   deltaTable(logs, n+2),
	}
}

// deltaTable returns delta[d] = d*log2(d+1) - (d-1)*log2(d) for
// 0 < d < size. REQUIRES: len(logs) > size.
func deltaTable(logs []float64, size int) []float64 {
	delta := make([]float64, size)
	for d := 1; d < size; d++ {
		delta[d] = float64(d)*logs[d+1] - float64(d-1)*logs[d]
	}
	return delta
}

// bisectAll refines the whole order level by level, breadth first: all
// partitions of a level are split and refined before any of the next, so
// a deadline leaves every part of the order refined to about the same
// depth. A deadline ends the pass as truncated, not as an error.
func (r *run) bisectAll() (outcome, error) {
	var out outcome
	parts := r.splittable(nil, span{0, len(r.order)})
	for level := 1; len(parts) > 0; level++ {
		if r.p.maxDepth > 0 && level > r.p.maxDepth {
			out.truncated = true
			break
		}
		err := r.level(parts)
		if errors.Is(err, errDeadline) {
			out.depth, out.truncated = level, true
			break
		}
		if err != nil {
			return outcome{}, err
		}
		out.depth = level
		var next []span
		for _, s := range parts {
			mid := s.lo + (s.hi-s.lo)/2
			next = r.splittable(next, span{s.lo, mid})
			next = r.splittable(next, span{mid, s.hi})
		}
		parts = next
	}
	return out, nil
}

// splittable appends s to parts if it is large enough to split.
func (r *run) splittable(parts []span, s span) []span {
	if n := s.hi - s.lo; n >= r.p.minPartition && n >= 2 {
		parts = append(parts, s)
	}
	return parts
}

// level refines every partition of one level on up to p.workers
// goroutines, each taking the next partition in turn. It returns after
// every goroutine it started has returned, with the first error.
func (r *run) level(parts []span) error {
	workers := min(r.p.workers, len(parts))
	var next atomic.Int64
	errs := make([]error, workers)
	work := func(w int) {
		defer recoverInto(&errs[w])
		if r.scratch[w] == nil {
			r.scratch[w] = newScratch(r.g.NumTerms)
		}
		for {
			i := int(next.Add(1)) - 1
			if i >= len(parts) {
				return
			}
			if err := r.stop.check(); err != nil {
				errs[w] = err
				return
			}
			if err := r.refine(r.scratch[w], parts[i].lo, parts[i].hi); err != nil {
				errs[w] = err
				return
			}
		}
	}
	if workers == 1 {
		work(0)
		return errs[0]
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { work(w) })
	}
	wg.Wait()
	return firstHard(errs)
}

// firstHard returns the first error that is not errDeadline, else
// errDeadline if any, else nil: a cancellation wins over the deadline.
func firstHard(errs []error) error {
	var soft error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, errDeadline):
			soft = err
		default:
			return err
		}
	}
	return soft
}

// softStop turns errDeadline into a truncated outcome at depth and passes
// other errors through.
func softStop(depth int, err error) (outcome, error) {
	if errors.Is(err, errDeadline) {
		return outcome{depth: depth, truncated: true}, nil
	}
	return outcome{}, err
}

// recoverInto turns a panic (a bug in this package) into an error, so a
// worker goroutine cannot bring the process down.
func recoverInto(err *error) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("bp: internal error: %v", v)
	}
}
