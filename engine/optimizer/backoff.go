package optimizer

import (
	"sync"
	"time"

	"github.com/summadev/summa/engine/segid"
)

// Backoff delays failing sources exponentially, from Min to Max, measured
// from the completion of the failed pass (Q07, Q09), so a pass longer than
// the scan interval does not restart at once.
type Backoff struct {
	// Min and Max bound the delay.
	Min, Max time.Duration

	mu sync.Mutex
	// state holds each failing source's consecutive failures and the time
	// it becomes eligible again.
	state map[segid.ID]backoffState
}

type backoffState struct {
	failures int
	until    time.Time
}

// Failed records a failed pass over ids completed at now and returns the
// delay applied.
func (b *Backoff) Failed(ids []segid.ID, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == nil {
		b.state = make(map[segid.ID]backoffState)
	}
	var delay time.Duration
	for _, id := range ids {
		st := b.state[id]
		st.failures++
		d := b.Min
		for i := 1; i < st.failures && d < b.Max; i++ {
			d *= 2
		}
		d = min(d, b.Max)
		st.until = now.Add(d)
		b.state[id] = st
		delay = max(delay, d)
	}
	return delay
}

// Succeeded clears the backoff of ids.
func (b *Backoff) Succeeded(ids []segid.ID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		delete(b.state, id)
	}
}

// Eligible reports whether id may be selected at now.
func (b *Backoff) Eligible(id segid.ID, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, ok := b.state[id]
	return !ok || !now.Before(st.until)
}

// NextWake returns the earliest time a backed-off source becomes eligible.
func (b *Backoff) NextWake(now time.Time) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var next time.Time
	found := false
	for _, st := range b.state {
		if st.until.After(now) && (!found || st.until.Before(next)) {
			next, found = st.until, true
		}
	}
	return next, found
}

// Failures returns the consecutive failures of id.
func (b *Backoff) Failures(id segid.ID) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state[id].failures
}
