package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// unreachableBackoffMin is the first wait before an engine that did not
// answer is asked again; it doubles up to the resync period.
const unreachableBackoffMin = time.Second

// backoffs are per-index exponential backoffs: an engine that does not
// answer (stopped, overloaded, partitioned) is asked again after 1 s,
// 2 s, 4 s... up to a cap, not every second, so that it costs the
// operator's workers little and the other indexes are not held up.
type backoffs struct {
	mu   sync.Mutex
	wait map[types.NamespacedName]time.Duration
}

// next returns how long key waits before its next try, and doubles it
// for the one after, up to limit.
func (b *backoffs) next(key types.NamespacedName, limit time.Duration) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wait == nil {
		b.wait = map[types.NamespacedName]time.Duration{}
	}
	w := b.wait[key]
	if w <= 0 {
		w = unreachableBackoffMin
	}
	w = min(w, limit)
	b.wait[key] = min(2*w, limit)
	return w
}

// reset forgets key's backoff: its engine answered.
func (b *backoffs) reset(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.wait, key)
}
