package replication_test

import (
	"context"
	"testing"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/replication"
)

// TestFollowerRecreatesAnIndexDeletedAndCreatedAgain: while a follower is
// stopped, the leader deletes its index and creates another of the same
// name, committed to the same generation number as the follower's copy.
// Started again, the follower must tell the two apart (the index UID) and
// serve the new index's documents, not the deleted one's.
func TestFollowerRecreatesAnIndexDeletedAndCreatedAgain(t *testing.T) {
	lr, ts, lc := startLeader(t, nil)
	ctx := context.Background()
	first := createBooks(t, lc, "old")
	fr := openRegistry(t)
	cfg := replication.Config{Leader: ts.URL, PollWait: time.Second, ListInterval: 50 * time.Millisecond}
	served := func() (uint64, int) {
		h, err := fr.Acquire("books")
		if err != nil {
			return 0, -1
		}
		defer h.Release()
		st := h.Status()
		return st.Generation, int(st.Documents)
	}
	stop := runFollower(newFollower(t, cfg, fr))
	waitFor(t, "the first copy", func() bool { g, n := served(); return g == first.Generation && n == 1 })
	stop()

	if err := lc.DeleteIndex(ctx, "books"); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitDeleted(ctx, "books"); err != nil {
		t.Fatal(err)
	}
	second := createBooks(t, lc, "new1", "new2")
	if second.Generation != first.Generation {
		t.Fatalf("the new index is at generation %d, the deleted one was at %d: the test needs them equal",
			second.Generation, first.Generation)
	}
	again := newFollower(t, cfg, fr)
	defer runFollower(again)()
	waitFor(t, "the new index's documents on the follower", func() bool {
		g, n := served()
		st, ok := again.Status("books")
		return g == second.Generation && n == 2 && ok && st.State == client.ReplicationFollowing
	})
}
