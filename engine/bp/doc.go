// Package bp reorders document ids by recursive graph bisection (BP), so
// that documents sharing terms get close ids and postings compress better.
//
// The input is a document->term bipartite Graph (built with a Builder or
// FromPostings). Reorder splits the documents in two halves and swaps
// documents between them to minimise, for every term t,
//
//	d1*log2(n1/(d1+1)) + d2*log2(n2/(d2+1))
//
// where d1, d2 are the numbers of documents holding t in each half of sizes
// n1, n2 (Dhulipala et al., KDD 2016); then it does the same inside each
// half, down to partitions of Budget.MinPartition documents. The quantity
// this approximates is LogGapCost, the sum of log2 of the d-gaps of all
// postings.
//
// One swap round: per term, the cost saved when one of its documents
// changes half (two table reads, see termGains); per document, the sum
// over its terms, as one "belongs right" key for both halves; a
// quickselect (not a sort) takes the n2 highest keys for the right half
// (Mackenzie et al., SIGIR 2021), which is exactly the set of left/right
// pairs whose summed gain is positive; the pairs swap in place, except one
// in ten chosen by a hash of the pair and round, which breaks the
// oscillation of two halves that look alike; a round without swaps ends
// the partition early. Then each half is sorted by its documents' keys
// for the final halves (keyOrder): the documents leaning most to the
// other half sit next to the cut, so the next level starts from a split
// by key rather than an arbitrary one, and the leaves follow the keys.
// On the linux-doc sections bisection alone then ends 1.6% smaller in
// doc-id bytes (1,800,977 -> 1,772,522), 0.35% after orientation and
// local swaps (1,772,678 -> 1,766,029).
//
// Bisection decides which documents share a part, not in which direction
// a part is read nor which of two sibling parts comes first. After it,
// orientation walks the bisection tree top down once, continued below its
// leaves down to pairs of documents, and reverses a part in place or
// swaps its two halves, whichever lowers LogGapCost more, when one does:
// both keep the gaps inside each half, so the change comes from each
// term's first and last documents in each half and its neighbours outside
// (a term split between sibling parts, and the position of every term's
// first document). On the linux-doc sections it takes another 4-4.5%
// off LogGapCost after bisection.
//
// Last, local swaps sweep the order left to right and exchange the
// document at each position with the one of the next 8 whose exchange
// lowers LogGapCost the most, when one does (exact: a term held by one of
// the two moves one posting, costed from its neighbours in the position
// lists; up to three sweeps, the later ones only where the previous one
// exchanged something). They move single documents across the
// boundaries of bisection's leaves and of the parts orientation placed
// side by side: on the linux-doc sections the doc-id bytes after BP drop
// by another 0.6% (1,783,865 -> 1,772,678).
//
// Levels are processed breadth first, the partitions of a level in
// parallel on Budget.Workers goroutines, so the result does not depend on
// the number of workers, and a deadline leaves the whole order refined to
// about the same depth.
//
// BP is an anytime algorithm. A depth floor (Budget.MaxDepth) or a wall
// clock deadline (Budget.Deadline) stops refinement early and still yields
// a valid permutation, reported with Result.Converged=false; budget-truncated
// BP is a success (rule Q13), and the next pass warm-starts from the
// previous Order. A memory budget trims the graph (terms of df<2, then the
// highest-degree terms) instead of failing. A pass whose order would have
// a higher LogGapCost than its initial order keeps the initial order.
//
// Cancellation (rule S03): graph construction and every phase of Reorder
// check their context between bounded units of work; on cancellation the
// started workers are joined, partial results are discarded and the error
// wraps both ErrCancelled and ctx.Err().
package bp

import "errors"

// Errors returned by this package. Test them with errors.Is.
var (
	// ErrCancelled is returned (wrapping ctx.Err()) when the context of a
	// build or a Reorder is cancelled; the partial graph or order is dropped.
	ErrCancelled = errors.New("bp: cancelled")
	// ErrInvalidGraph is returned for a Graph whose shape is wrong: offsets
	// not starting at 0, decreasing or not ending at len(Terms), terms out of
	// range or not sorted and distinct within a document, too many documents.
	ErrInvalidGraph = errors.New("bp: invalid graph")
	// ErrInvalidOrder is returned for an initial order that is not a
	// permutation of 0..NumDocs-1.
	ErrInvalidOrder = errors.New("bp: invalid order")
	// ErrInvalidBudget is returned for a Budget with a negative field.
	ErrInvalidBudget = errors.New("bp: invalid budget")
)
