// Package par runs independent pieces of work on the machine's cores.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Do calls f(0) to f(n-1) on up to GOMAXPROCS goroutines, taking indexes
// in increasing order, and returns when every call has returned. A panic
// in a call is raised again on the caller's goroutine (where its recovery,
// if any, runs) once the other goroutines have stopped; calls not started
// by then are skipped.
func Do(n int, f func(i int)) {
	DoUntil(n, func() int { return n }, f)
}

// DoUntil is Do that skips the indexes at or past limit() when a goroutine
// comes to take them: a caller that finds its answer at index i (the
// first failure, say) lowers the limit to i so that later work is not
// started.
func DoUntil(n int, limit func() int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n && i < limit(); i++ {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	var once sync.Once
	var panicked any
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					once.Do(func() { panicked = p })
					stop.Store(true)
				}
			}()
			for i := int(next.Add(1) - 1); i < n && i < limit() && !stop.Load(); i = int(next.Add(1) - 1) {
				f(i)
			}
		}()
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}

// Min is an index that only decreases: the first failure of a DoUntil.
type Min struct{ v atomic.Int64 }

// NewMin returns a Min holding n.
func NewMin(n int) *Min {
	m := &Min{}
	m.v.Store(int64(n))
	return m
}

// Get returns the current value.
func (m *Min) Get() int { return int(m.v.Load()) }

// Lower sets the value to i if i is smaller.
func (m *Min) Lower(i int) {
	for cur := m.v.Load(); int64(i) < cur && !m.v.CompareAndSwap(cur, int64(i)); cur = m.v.Load() {
	}
}
