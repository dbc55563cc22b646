package controllers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/summadev/summa/client"
)

// fakeWaitEngine answers GET /v1/indexes/{index} like the engine's long
// poll: at once when its generation differs from ?waitGeneration, else
// when it changes or the request ends.
type fakeWaitEngine struct {
	mu      sync.Mutex
	gen     int64
	changed chan struct{}
	open    atomic.Int64
}

func (f *fakeWaitEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.open.Add(1)
	defer f.open.Add(-1)
	want, _ := strconv.ParseInt(r.URL.Query().Get("waitGeneration"), 10, 64)
	f.mu.Lock()
	gen, ch := f.gen, f.changed
	f.mu.Unlock()
	if gen == want {
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		}
	}
	f.mu.Lock()
	gen = f.gen
	f.mu.Unlock()
	_ = json.NewEncoder(w).Encode(client.IndexStatus{Name: "i", State: "open", Generation: uint64(gen)})
}

// commit moves the fake engine to the next generation.
func (f *fakeWaitEngine) commit() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	close(f.changed)
	f.changed = make(chan struct{})
}

// eventually polls cond for up to a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after a minute: %s", what)
		}
	}
}

// TestStatusWatchWakesOnCommitAndStops: a watch wakes its index's
// reconcile when the engine's generation moves, not while it waits, and a
// pass that does not observe the engine ends it (its long poll closed).
func TestStatusWatchWakesOnCommitAndStops(t *testing.T) {
	f := &fakeWaitEngine{gen: 1, changed: make(chan struct{})}
	srv := httptest.NewServer(f)
	defer srv.Close()
	s := newStatusWatches(4, logr.Discard(), nil, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Start(ctx) }()
	key := types.NamespacedName{Namespace: "ns", Name: "i"}
	target := watchTarget{podUID: "u1", base: srv.URL, transport: http.DefaultTransport, index: "i"}
	eventually(t, "the watches started", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.ctx != nil
	})
	s.begin(key)
	s.ensure(key, target, 1, 0)
	s.finish(key)
	eventually(t, "a long poll is open", func() bool { return f.open.Load() == 1 })
	select {
	case ev := <-s.wake:
		t.Fatalf("woke %s/%s before any change", ev.Object.GetNamespace(), ev.Object.GetName())
	default:
	}
	f.commit()
	select {
	case ev := <-s.wake:
		if ev.Object.GetName() != "i" || ev.Object.GetNamespace() != "ns" {
			t.Errorf("woke %s/%s, want ns/i", ev.Object.GetNamespace(), ev.Object.GetName())
		}
	case <-time.After(time.Minute):
		t.Fatal("no wake a minute after the commit")
	}
	// A pass that does not reach the engine ends the watch.
	s.begin(key)
	s.finish(key)
	eventually(t, "the long poll is closed", func() bool { return f.open.Load() == 0 })
	s.mu.Lock()
	n := len(s.m)
	s.mu.Unlock()
	if n != 0 {
		t.Errorf("%d watches left after a pass that did not keep it", n)
	}
}
