package replication_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/replication"
	"github.com/summadev/summa/engine/server"
)

// TestFollowerReadyAfterItsFirstCopy: a new follower is not ready (a
// read Service would send it searches of indexes it does not have) while
// its leader does not answer, nor before it has copied each of the
// leader's indexes; then it is. Started again on its data directory, it
// is ready at once, before its leader answers. A follower of a leader
// without indexes is ready once the leader's list answered.
func TestFollowerReadyAfterItsFirstCopy(t *testing.T) {
	lr := openRegistry(t)
	var blocked atomic.Bool
	blocked.Store(true)
	api := server.New(lr, server.Options{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if blocked.Load() {
			http.Error(w, "leader away", http.StatusServiceUnavailable)
			return
		}
		api.ServeHTTP(w, r)
	}))
	defer ts.Close()
	lc := client.New(ts.URL, nil)
	ctx := context.Background()
	blocked.Store(false)
	if _, err := lc.CreateIndex(ctx, "books", json.RawMessage(`{"fields":[{"name":"id","type":"keyword","primary":true},{"name":"body","type":"text"}]}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AddNDJSON(ctx, "books", strings.NewReader(`{"id":"a","body":"light"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.Commit(ctx, "books"); err != nil {
		t.Fatal(err)
	}
	blocked.Store(true)

	fr := openRegistry(t)
	cfg := replication.Config{Leader: ts.URL, PollWait: time.Second, ListInterval: 20 * time.Millisecond,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond}
	f, err := replication.New(cfg, fr)
	if err != nil {
		t.Fatal(err)
	}
	stop := runFollower(f)
	time.Sleep(200 * time.Millisecond) // list attempts, all refused
	if f.Ready() {
		t.Fatal("a new follower whose leader does not answer is ready")
	}
	blocked.Store(false)
	waitFor(t, "the follower's first copy", func() bool {
		st, ok := f.Status("books")
		return ok && st.State == client.ReplicationFollowing
	})
	if !f.Ready() {
		t.Fatal("a follower serving the leader's generation of every index is not ready")
	}
	stop()

	blocked.Store(true)
	again, err := replication.New(cfg, fr)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Ready() {
		t.Fatal("a follower started again on its copy is not ready at once")
	}

	blocked.Store(false)
	empty := openRegistry(t)
	if err := lr.Delete(ctx, "books"); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitDeleted(ctx, "books"); err != nil {
		t.Fatal(err)
	}
	g, err := replication.New(cfg, empty)
	if err != nil {
		t.Fatal(err)
	}
	if g.Ready() {
		t.Fatal("a new follower is ready before its leader's list answered")
	}
	defer runFollower(g)()
	waitFor(t, "a follower of a leader without indexes to be ready", g.Ready)
}

// runFollower runs f until the returned function stops it.
func runFollower(f *replication.Follower) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	return func() { cancel(); <-done }
}
