package replication_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/replication"
	"github.com/summadev/summa/engine/server"
)

// TestFollowerRecreatesAnIndexDeletedAndCreatedAgain: while a follower is
// stopped, the leader deletes its index and creates another of the same
// name, committed to the same generation number as the follower's copy.
// Started again, the follower must tell the two apart (the index UID) and
// serve the new index's documents, not the deleted one's.
func TestFollowerRecreatesAnIndexDeletedAndCreatedAgain(t *testing.T) {
	lr := openRegistry(t)
	ts := httptest.NewServer(server.New(lr, server.Options{}))
	defer ts.Close()
	lc := client.New(ts.URL, nil)
	ctx := context.Background()
	fill := func(ids ...string) client.IndexStatus {
		t.Helper()
		if _, err := lc.CreateIndex(ctx, "books", json.RawMessage(`{"fields":[{"name":"id","type":"keyword","primary":true},{"name":"body","type":"text"}]}`)); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(`{"id":"` + id + `","body":"light and colours"}` + "\n")
		}
		if _, err := lc.AddNDJSON(ctx, "books", strings.NewReader(b.String())); err != nil {
			t.Fatal(err)
		}
		if _, err := lc.Commit(ctx, "books"); err != nil {
			t.Fatal(err)
		}
		st, err := lc.GetIndex(ctx, "books")
		if err != nil {
			t.Fatal(err)
		}
		return *st
	}
	first := fill("old")
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
	f, err := replication.New(cfg, fr)
	if err != nil {
		t.Fatal(err)
	}
	stop := runFollower(f)
	waitFor(t, "the first copy", func() bool { g, n := served(); return g == first.Generation && n == 1 })
	stop()

	if err := lc.DeleteIndex(ctx, "books"); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitDeleted(ctx, "books"); err != nil {
		t.Fatal(err)
	}
	second := fill("new1", "new2")
	if second.Generation != first.Generation {
		t.Fatalf("the new index is at generation %d, the deleted one was at %d: the test needs them equal",
			second.Generation, first.Generation)
	}
	again, err := replication.New(cfg, fr)
	if err != nil {
		t.Fatal(err)
	}
	defer runFollower(again)()
	waitFor(t, "the new index's documents on the follower", func() bool {
		g, n := served()
		st, ok := again.Status("books")
		return g == second.Generation && n == 2 && ok && st.State == client.ReplicationFollowing
	})
}
