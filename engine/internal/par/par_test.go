package par

import (
	"sync/atomic"
	"testing"
)

func TestDoCallsEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 1000} {
		counts := make([]atomic.Int32, n)
		Do(n, func(i int) { counts[i].Add(1) })
		for i := range counts {
			if c := counts[i].Load(); c != 1 {
				t.Fatalf("n %d: index %d called %d times", n, i, c)
			}
		}
	}
}

func TestDoUntilSkipsPastTheLimit(t *testing.T) {
	const n, fail = 1000, 10
	m := NewMin(n)
	var calls atomic.Int32
	DoUntil(n, m.Get, func(i int) {
		calls.Add(1)
		if i >= fail {
			m.Lower(i)
		}
	})
	// Every index below the first failure ran; at most one index per
	// goroutine was taken past it.
	if m.Get() != fail || calls.Load() < fail+1 || calls.Load() > n/2 {
		t.Fatalf("first failure %d after %d calls", m.Get(), calls.Load())
	}
}

func TestDoRaisesPanicsOnTheCaller(t *testing.T) {
	defer func() {
		if p := recover(); p != "boom" {
			t.Fatalf("recovered %v", p)
		}
	}()
	Do(100, func(i int) {
		if i == 37 {
			panic("boom")
		}
	})
	t.Fatal("no panic")
}
