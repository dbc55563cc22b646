package bp

import (
	"context"
	"errors"
)

// Result is the outcome of one Reorder pass.
type Result struct {
	// Order[newDoc] = oldDoc, a permutation of 0..NumDocs-1.
	Order []uint32
	// Converged is true when the recursion completed every level within
	// budget (no deadline/depth truncation). A pass with Converged=false
	// is still a valid order; a later pass can warm-start from it.
	Converged bool
	// Depth is the deepest level reached (the split of all documents is
	// level 1; 0 when nothing was split).
	Depth int
	// CostBefore and CostAfter are the LogGapCost of the initial and the
	// final order, always on the full (untrimmed) graph.
	CostBefore, CostAfter float64
	// Trimmed is the number of terms (with postings) dropped for the
	// memory budget; they still count in the costs.
	Trimmed int
	// KeptInitial is set when the refined order had a higher LogGapCost
	// than the initial one (BP's bisection objective is only a proxy: an
	// input already in a good sequential order, such as one sorted by URL
	// or time, can lose), so Order is the initial order and CostAfter ==
	// CostBefore. A pass thus never makes the index larger by the estimate.
	KeptInitial bool
}

// Reorder runs one pass. initial (may be nil = identity) is the
// warm-start order (a previous pass's Order). It checks ctx between
// bounded units of work in every phase (gains computation, sorting,
// swapping, recursion); on cancellation all started workers are joined and
// it returns ErrCancelled (wrapping ctx.Err()) and no result.
//
// An invalid g, initial or b is an error (ErrInvalidGraph,
// ErrInvalidOrder, ErrInvalidBudget). Neither g nor initial is modified.
func Reorder(ctx context.Context, g *Graph, initial []uint32, b Budget) (res Result, err error) {
	defer func() {
		if err != nil {
			res = Result{} // no partial result, also after an internal error
		}
	}()
	defer recoverInto(&err)
	st := newStopper(ctx, b.Deadline)
	p, err := b.normalize()
	if err != nil {
		return Result{}, err
	}
	if err := g.validate(st); err != nil {
		return Result{}, err
	}
	if g, err = compactSparse(st, g); err != nil {
		return Result{}, err
	}
	n := g.NumDocs()
	order, err := startOrder(st, initial, n)
	if err != nil {
		return Result{}, err
	}
	logs := log2Table(n + 3)
	res.CostBefore, err = logGapCost(st, g, order, logs)
	if err != nil {
		return Result{}, err
	}
	out, trimmed, err := refineAll(st, g, order, p, logs)
	if err != nil {
		return Result{}, err
	}
	res.CostAfter, err = logGapCost(st, g, order, logs)
	if err != nil {
		return Result{}, err
	}
	if res.CostAfter > res.CostBefore {
		restore(order, initial)
		res.CostAfter, res.KeptInitial = res.CostBefore, true
	}
	res.Order, res.Converged, res.Depth, res.Trimmed = order, !out.truncated, out.depth, trimmed
	return res, nil
}

// startOrder returns a fresh copy of initial after checking it, or the
// identity when initial is nil.
func startOrder(st *stopper, initial []uint32, n int) ([]uint32, error) {
	if initial != nil {
		if err := validateOrder(st, initial, n); err != nil {
			return nil, err
		}
	}
	order := make([]uint32, n)
	restore(order, initial)
	return order, nil
}

// restore overwrites order with initial, or the identity when nil.
func restore(order, initial []uint32) {
	if initial != nil {
		copy(order, initial)
		return
	}
	for i := range order {
		order[i] = uint32(i)
	}
}

// refineAll trims g to the memory budget and runs the recursion over
// order, in place. A deadline already past skips both.
func refineAll(st *stopper, g *Graph, order []uint32, p params, logs []float64) (outcome, int, error) {
	if len(order) < p.minPartition {
		return outcome{}, 0, nil // nothing to split: converged
	}
	if err := st.check(); err != nil {
		out, err := softStop(0, err)
		return out, 0, err
	}
	work, trimmed, err := trim(st, g, p)
	if err != nil {
		return outcome{}, 0, err
	}
	out, err := newRun(work, order, p, st, logs).bisectAll()
	if err != nil || out.depth == 0 {
		return out, trimmed, err
	}
	o, err := newOrienter(st, work, order, logs)
	if err == nil {
		_, err = o.orient()
	}
	if err == nil {
		_, err = o.localSwaps()
	}
	if errors.Is(err, errDeadline) {
		return outcome{depth: out.depth, truncated: true}, trimmed, nil
	}
	return out, trimmed, err
}
