package replication_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/replication"
)

// TestFollowerReadyAfterItsFirstCopy: a new follower is not ready (a
// read Service would send it searches of indexes it does not have) while
// its leader does not answer, nor before it has copied each of the
// leader's indexes; then it is. Started again on its data directory, it
// is ready at once, before its leader answers. A follower of a leader
// without indexes is ready once the leader's list answered.
func TestFollowerReadyAfterItsFirstCopy(t *testing.T) {
	var blocked atomic.Bool
	lr, ts, lc := startLeader(t, func(api http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if blocked.Load() {
				http.Error(w, "leader away", http.StatusServiceUnavailable)
				return
			}
			api.ServeHTTP(w, r)
		})
	})
	createBooks(t, lc, "a")
	blocked.Store(true)

	fr := openRegistry(t)
	cfg := replication.Config{Leader: ts.URL, PollWait: time.Second, ListInterval: 20 * time.Millisecond,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond}
	f := newFollower(t, cfg, fr)
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
	if !newFollower(t, cfg, fr).Ready() {
		t.Fatal("a follower started again on its copy is not ready at once")
	}

	blocked.Store(false)
	ctx := context.Background()
	if err := lr.Delete(ctx, "books"); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitDeleted(ctx, "books"); err != nil {
		t.Fatal(err)
	}
	g := newFollower(t, cfg, openRegistry(t))
	if g.Ready() {
		t.Fatal("a new follower is ready before its leader's list answered")
	}
	defer runFollower(g)()
	waitFor(t, "a follower of a leader without indexes to be ready", g.Ready)
}
