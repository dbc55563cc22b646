package tick

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestEveryCallsUntilTheContextEnds: fn runs repeatedly, Every returns
// once ctx is cancelled, and fn is not called after that.
func TestEveryCallsUntilTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, time.Millisecond, func() { n.Add(1) })
	}()
	deadline := time.Now().Add(30 * time.Second)
	for n.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("fn ran %d times in 30 s", n.Load())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	after := n.Load()
	time.Sleep(10 * time.Millisecond)
	if n.Load() != after {
		t.Errorf("fn ran after Every returned")
	}
}

// TestEveryWaitsOneIntervalFirst: fn is not called at once.
func TestEveryWaitsOneIntervalFirst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	Every(ctx, time.Hour, func() { called = true })
	if called {
		t.Error("fn ran before the first interval")
	}
}
