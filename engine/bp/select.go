package bp

import (
	"math/bits"
	"slices"
)

// selectSmallRange is the range size below which selection finishes with
// an insertion sort.
const selectSmallRange = 16

// selectFirst rearranges a so that a[:m] holds the m elements that come
// first under the strict total order before (in no particular order), and
// a[m:] the others. It is a quickselect with a median-of-three pivot,
// falling back to a sort of the remaining range after too many rounds, and
// checks st between partitioning rounds over large ranges. The result
// depends only on a's contents and before.
func selectFirst(st *stopper, a []uint32, m int, before func(x, y uint32) bool) error {
	lo, hi := 0, len(a)
	rounds := 2*bits.Len(uint(len(a))) + 8
	for hi-lo > selectSmallRange {
		if m <= lo || m >= hi {
			return nil
		}
		if rounds == 0 {
			slices.SortFunc(a[lo:hi], func(x, y uint32) int { return order3(before, x, y) })
			return nil
		}
		rounds--
		if hi-lo >= unitWork {
			if err := st.check(); err != nil {
				return err
			}
		}
		p := partitionRange(a, lo, hi, before)
		switch {
		case p == m:
			return nil
		case p < m:
			lo = p + 1
		default:
			hi = p
		}
	}
	insertionSort(a[lo:hi], before)
	return nil
}

// partitionRange partitions a[lo:hi] (hi-lo >= 3) around a median-of-three
// pivot and returns the pivot's final index p: a[lo:p] come before it,
// a[p+1:hi] after it.
func partitionRange(a []uint32, lo, hi int, before func(x, y uint32) bool) int {
	mid := lo + (hi-lo)/2
	last := hi - 1
	// Order a[lo], a[mid], a[last]; the median ends at mid.
	if before(a[mid], a[lo]) {
		a[mid], a[lo] = a[lo], a[mid]
	}
	if before(a[last], a[mid]) {
		a[last], a[mid] = a[mid], a[last]
		if before(a[mid], a[lo]) {
			a[mid], a[lo] = a[lo], a[mid]
		}
	}
	a[mid], a[last] = a[last], a[mid]
	pivot := a[last]
	i := lo
	for j := lo; j < last; j++ {
		if before(a[j], pivot) {
			a[i], a[j] = a[j], a[i]
			i++
		}
	}
	a[i], a[last] = a[last], a[i]
	return i
}

// insertionSort sorts a small slice by before.
func insertionSort(a []uint32, before func(x, y uint32) bool) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && before(a[j], a[j-1]); j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// order3 turns before into a three-way comparison.
func order3(before func(x, y uint32) bool, x, y uint32) int {
	switch {
	case before(x, y):
		return -1
	case before(y, x):
		return 1
	default:
		return 0
	}
}
