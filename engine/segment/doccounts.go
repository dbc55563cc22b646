package segment

import "runtime"

// privateCountsMax bounds, per field, the entries of the private count
// arrays a docSlots lends (uint32s over all its slots, 64 MiB): a larger
// field's ranges add atomically to the shared arrays instead.
var privateCountsMax = uint64(1) << 24

// docSlots lends the concurrent term ranges of one field private
// per-document count arrays (a merge's field lengths; a validation's field
// lengths and distinct terms), so that ranges walking the same documents
// at once neither take atomics nor fight over cache lines. A range holds
// a slot while it runs; fold adds every slot into the field's arrays once
// the ranges are done. At most GOMAXPROCS ranges of one call run at once
// (par.Do), so that many slots suffice and get never waits for long.
type docSlots struct {
	numDocs uint32
	// arrays is the number of count arrays per slot (1 or 2).
	arrays int
	free   chan *docSlot
	slots  []*docSlot
}

// docSlot is one range's private counts: counts[k][doc].
type docSlot struct {
	counts [2][]uint32
}

// newDocSlots returns the slots for a field of numDocs documents walked in
// ranges concurrent ranges, or nil when the field is walked in one range
// or its private arrays would pass privateCountsMax (then the ranges add
// atomically to the shared arrays).
func newDocSlots(numDocs uint32, ranges, arrays int) *docSlots {
	n := min(ranges, runtime.GOMAXPROCS(0))
	if ranges < 2 || uint64(n)*uint64(numDocs)*uint64(arrays) > privateCountsMax {
		return nil
	}
	s := &docSlots{numDocs: numDocs, arrays: arrays, free: make(chan *docSlot, n)}
	for range n {
		d := &docSlot{}
		s.slots = append(s.slots, d)
		s.free <- d
	}
	return s
}

// get lends a slot, its arrays allocated on first use.
func (s *docSlots) get() *docSlot {
	d := <-s.free
	if d.counts[0] == nil {
		for k := range s.arrays {
			d.counts[k] = make([]uint32, s.numDocs)
		}
	}
	return d
}

// put returns a slot.
func (s *docSlots) put(d *docSlot) { s.free <- d }

// fold adds every slot's counts k into dst[k]. The sums of dst[0] (field
// lengths) must not wrap: the first document whose would is returned with
// false.
func (s *docSlots) fold(dst ...[]uint32) (uint32, bool) {
	for _, d := range s.slots {
		if d.counts[0] == nil {
			continue
		}
		for doc, v := range d.counts[0] {
			sum := dst[0][doc] + v
			if sum < v {
				return uint32(doc), false
			}
			dst[0][doc] = sum
		}
		for k := 1; k < len(dst) && k < s.arrays; k++ {
			for doc, v := range d.counts[k] {
				dst[k][doc] += v
			}
		}
	}
	return 0, true
}
