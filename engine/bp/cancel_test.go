package bp

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// checkNoLeak fails t if the goroutine count does not come back to base
// within a short wait.
func checkNoLeak(t *testing.T, base int) {
	t.Helper()
	for range 100 {
		if runtime.NumGoroutine() <= base {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("goroutines: %d, want at most %d", runtime.NumGoroutine(), base)
}

// TestReorderCancelled (S03): cancelling at the n-th cancellation check,
// in validation, cost, gains, selection, swapping or recursion, with 4
// workers, returns ErrCancelled wrapping context.Canceled, no result, and
// leaves no goroutine behind.
func TestReorderCancelled(t *testing.T) {
	g := realGraph(t)
	var checks atomic.Int64
	setCheckHook(t, func() { checks.Add(1) })
	if _, err := Reorder(context.Background(), g, nil, Budget{Workers: 4}); err != nil {
		t.Fatal(err)
	}
	total := checks.Load()
	t.Logf("%d checks in a full pass", total)
	base := runtime.NumGoroutine()
	for _, at := range []int64{1, 2, 5, 20, total / 4, total / 2, total - 30, total - 2} {
		ctx, cancel := context.WithCancel(context.Background())
		checks.Store(0)
		setCheckHook(t, func() {
			if checks.Add(1) == at {
				cancel()
			}
		})
		res, err := Reorder(ctx, g, nil, Budget{Workers: 4})
		cancel()
		if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancel at check %d/%d: error %v, want ErrCancelled and context.Canceled", at, total, err)
		}
		if res.Order != nil {
			t.Fatalf("cancel at check %d: got a result", at)
		}
		checkNoLeak(t, base)
	}
}

// TestReorderCancelledBeforeStart: an already cancelled context fails at
// once, with the context's own error wrapped.
func TestReorderCancelledBeforeStart(t *testing.T) {
	g := realGraph(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, err := Reorder(ctx, g, nil, Budget{})
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want ErrCancelled and context.DeadlineExceeded", err)
	}
}

// TestBuilderCancelled (S03): cancelling a Builder's context discards the
// partial graph; every later Add fails with ErrCancelled.
func TestBuilderCancelled(t *testing.T) {
	base := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	b := NewBuilderContext(ctx, 10)
	for range 100 {
		if err := b.Add([]uint32{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	for range 2 {
		if err := b.Add([]uint32{1}); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Add after cancel: %v", err)
		}
	}
	if b.Graph() != nil || b.NumDocs() != 0 || b.MemBytes() != 0 || !errors.Is(b.Err(), ErrCancelled) {
		t.Errorf("after cancel: graph %v, %d docs, %d bytes, err %v", b.Graph(), b.NumDocs(), b.MemBytes(), b.Err())
	}
	checkNoLeak(t, base)
}

// TestFromPostingsCancelled (S03): cancelling during frequency counting
// or CSR construction returns ErrCancelled and no graph.
func TestFromPostingsCancelled(t *testing.T) {
	g := realGraph(t)
	post := invert(g)
	for _, at := range []int{10, len(post) + 10} { // first phase, second phase
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		out, err := FromPostings(ctx, g.NumDocs(), g.NumTerms, func(t uint32) []uint32 {
			if calls++; calls == at {
				cancel()
			}
			return post[t]
		})
		cancel()
		if out != nil || !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Errorf("cancel at call %d: graph %v, error %v", at, out != nil, err)
		}
	}
}
