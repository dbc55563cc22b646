// Package tick runs a function at a fixed interval until a context ends.
package tick

import (
	"context"
	"time"
)

// Every calls fn once each interval, the first time one interval from now,
// until ctx is done; it returns when ctx is done. A call of fn that runs
// longer than interval delays the next one (ticks are not queued).
func Every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn()
	}
}
