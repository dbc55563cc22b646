package s3backup

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestForEachRunsEveryIndexAtMostConcurrencyAtOnce: every index runs once,
// never more than transferConcurrency at a time, and the first
// transferConcurrency run together (each waits until all of them started).
func TestForEachRunsEveryIndexAtMostConcurrencyAtOnce(t *testing.T) {
	const n = 40
	var running, peak, first atomic.Int32
	var seen [n]atomic.Int32
	together := make(chan struct{})
	err := forEach(context.Background(), n, func(ctx context.Context, i int) error {
		cur := running.Add(1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		if i < transferConcurrency {
			if first.Add(1) == transferConcurrency {
				close(together)
			}
			select {
			case <-together:
			case <-time.After(time.Minute):
				return errors.New("the first calls did not run together within a minute")
			}
		}
		seen[i].Add(1)
		running.Add(-1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range seen {
		if seen[i].Load() != 1 {
			t.Fatalf("index %d ran %d times", i, seen[i].Load())
		}
	}
	if p := peak.Load(); p != transferConcurrency {
		t.Fatalf("peak concurrency %d, want %d", p, transferConcurrency)
	}
}

// TestForEachFirstErrorCancelsTheRest: the first error is returned, the
// running calls see their context cancelled, and no later index starts.
func TestForEachFirstErrorCancelsTheRest(t *testing.T) {
	boom := errors.New("boom")
	var started atomic.Int32
	var cancelled atomic.Int32
	err := forEach(context.Background(), 100, func(ctx context.Context, i int) error {
		started.Add(1)
		if i == 2 {
			return boom
		}
		select {
		case <-ctx.Done():
			cancelled.Add(1)
			return ctx.Err()
		case <-time.After(time.Minute):
			return nil
		}
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if s := started.Load(); s > transferConcurrency+1 {
		t.Fatalf("%d calls started after the error", s)
	}
	if cancelled.Load() == 0 {
		t.Fatalf("no running call saw its context cancelled")
	}
}

// TestForEachParentCancelled returns the parent's error and starts
// nothing more.
func TestForEachParentCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var started atomic.Int32
	err := forEach(ctx, 10, func(ctx context.Context, i int) error { started.Add(1); return nil })
	if !errors.Is(err, context.Canceled) || started.Load() != 0 {
		t.Fatalf("err %v, %d started; want context.Canceled, none", err, started.Load())
	}
}
