package metadata

import (
	"reflect"
	"testing"
)

// TestM09_SeismicDebtTransitions: the state an output inherits, for every
// way it replaces its source (M09): zero debt clears every counter; a
// flush or a merge starts afresh; compaction and reorder keep the
// source's counters; a maintenance pass counts a lower debt as a partial
// pass (stalls reset) and an unchanged or higher one as one more stall.
func TestM09_SeismicDebtTransitions(t *testing.T) {
	src := &SeismicDebt{PendingTerms: 10, PartialPasses: 2, Stalls: 3}
	for _, c := range []struct {
		name    string
		how     int
		src     *SeismicDebt
		pending int
		want    *SeismicDebt
	}{
		{"no debt clears a pass", SeismicPass, src, 0, nil},
		{"no debt clears a preserve", SeismicPreserve, src, 0, nil},
		{"negative debt is none", SeismicFresh, nil, -1, nil},
		{"one term is debt", SeismicFresh, nil, 1, &SeismicDebt{PendingTerms: 1}},
		{"flush starts afresh", SeismicFresh, src, 4, &SeismicDebt{PendingTerms: 4}},
		{"merge resets the history", SeismicMerge, src, 12, &SeismicDebt{PendingTerms: 12}},
		{"preserve without a source", SeismicPreserve, nil, 5, &SeismicDebt{PendingTerms: 5}},
		{"pass without a source", SeismicPass, nil, 5, &SeismicDebt{PendingTerms: 5}},
		{"preserve keeps the counters", SeismicPreserve, src, 10, &SeismicDebt{PendingTerms: 10, PartialPasses: 2, Stalls: 3}},
		{"preserve keeps the counters at another debt", SeismicPreserve, src, 3, &SeismicDebt{PendingTerms: 3, PartialPasses: 2, Stalls: 3}},
		{"lower debt is a partial pass", SeismicPass, src, 9, &SeismicDebt{PendingTerms: 9, PartialPasses: 3}},
		{"much lower debt is a partial pass", SeismicPass, src, 1, &SeismicDebt{PendingTerms: 1, PartialPasses: 3}},
		{"unchanged debt is a stall", SeismicPass, src, 10, &SeismicDebt{PendingTerms: 10, PartialPasses: 2, Stalls: 4}},
		{"higher debt is a stall", SeismicPass, src, 11, &SeismicDebt{PendingTerms: 11, PartialPasses: 2, Stalls: 4}},
		{"first stall", SeismicPass, &SeismicDebt{PendingTerms: 2}, 2, &SeismicDebt{PendingTerms: 2, Stalls: 1}},
	} {
		before := *src
		got := NextSeismicDebt(c.how, c.src, c.pending)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
		if *src != before {
			t.Fatalf("%s: the source's state changed to %+v", c.name, *src)
		}
		if got != nil && got == c.src {
			t.Fatalf("%s: the output shares the source's state", c.name)
		}
	}
}

// TestM09_ValidateSeismicDebtBounds: a decoded entry must have debt (at
// least one pending term: zero debt is written as no entry) and counters
// that are not negative; every bound is checked at its edge.
func TestM09_ValidateSeismicDebtBounds(t *testing.T) {
	for _, c := range []struct {
		debt *SeismicDebt
		ok   bool
	}{
		{nil, true},
		{&SeismicDebt{PendingTerms: 1}, true},
		{&SeismicDebt{PendingTerms: 1, PartialPasses: 0, Stalls: 0}, true},
		{&SeismicDebt{PendingTerms: 3, PartialPasses: 1, Stalls: 1}, true},
		{&SeismicDebt{PendingTerms: 0}, false},
		{&SeismicDebt{PendingTerms: -1}, false},
		{&SeismicDebt{PendingTerms: 0, PartialPasses: 1}, false},
		{&SeismicDebt{PendingTerms: 1, PartialPasses: -1}, false},
		{&SeismicDebt{PendingTerms: 1, Stalls: -1}, false},
	} {
		m := sample()
		m.Segments[0].Seismic = c.debt
		err := m.Validate()
		if (err == nil) != c.ok {
			t.Errorf("seismic %+v: Validate says %v, want ok=%v", c.debt, err, c.ok)
		}
		data, merr := m.appendJSON(nil)
		if merr != nil {
			t.Fatal(merr)
		}
		if _, derr := Decode(data); (derr == nil) != c.ok {
			t.Errorf("seismic %+v: Decode says %v, want ok=%v", c.debt, derr, c.ok)
		}
	}
	s := Segment{Seismic: &SeismicDebt{PendingTerms: 6}}
	if s.SeismicPending() != 6 || (&Segment{}).SeismicPending() != 0 {
		t.Fatalf("SeismicPending: %d, %d", s.SeismicPending(), (&Segment{}).SeismicPending())
	}
}
