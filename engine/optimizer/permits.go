// Package optimizer runs background maintenance: it scans indexes on an
// interval, chooses merge, compaction and BP-reorder candidates from
// persisted metadata only, runs them under global maintenance permits,
// backs failing sources off exponentially and keeps deterministic
// corruption quarantined.
package optimizer

import (
	"context"
	"fmt"
)

// Permits bounds concurrent maintenance across the process (M04): the
// optimizer, explicit merges and manual reorders share them. A permit is
// held by the owned task until its blocking work drains.
type Permits struct {
	ch chan struct{}
}

// NewPermits returns n permits (at least one, so explicit maintenance
// always works even when background maintenance is off).
func NewPermits(n int) *Permits {
	return &Permits{ch: make(chan struct{}, max(n, 1))}
}

// Acquire waits for a permit; cancelling ctx stops the wait.
func (p *Permits) Acquire(ctx context.Context) error {
	select {
	case p.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("optimizer: waiting for a maintenance permit: %w", ctx.Err())
	}
}

// TryAcquire takes a permit without waiting (M05: automatic maintenance
// uses non-blocking admission).
func (p *Permits) TryAcquire() bool {
	select {
	case p.ch <- struct{}{}:
		return true
	default:
		return false
	}
}

// Release returns a permit.
func (p *Permits) Release() { <-p.ch }

// InUse returns the number of permits held.
func (p *Permits) InUse() int { return len(p.ch) }
