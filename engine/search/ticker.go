package search

import "context"

// ticker checks for cancellation every few thousand steps.
type ticker struct {
	// ctx is the search's context.
	ctx context.Context
	// n counts steps.
	n uint32
}

// tick counts one step and returns the context's error every 4096 steps.
func (t *ticker) tick() error {
	t.n++
	if t.n&4095 != 0 {
		return nil
	}
	return t.check()
}

// check returns the context's error; callers wrap it with where they were.
func (t *ticker) check() error { return t.ctx.Err() }
