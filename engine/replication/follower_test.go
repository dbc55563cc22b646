package replication_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/replication"
	"github.com/summadev/summa/engine/server"
)

// openRegistry opens a registry on a temporary directory, closed at the
// end of the test.
func openRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	r, err := registry.Open(vfs.Default, t.TempDir(), registry.Options{Index: index.Options{IndexingWorkers: 1, CommitFlushTimeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = r.Close(ctx)
	})
	return r
}

// booksSchema is the schema of the tests' index "books".
const booksSchema = `{"fields":[{"name":"id","type":"keyword","primary":true},{"name":"body","type":"text"}]}`

// startLeader serves a new registry over HTTP until the end of the test,
// through wrap when not nil, and returns the registry, the server and a
// client of it.
func startLeader(t *testing.T, wrap func(http.Handler) http.Handler) (*registry.Registry, *httptest.Server, *client.Client) {
	t.Helper()
	lr := openRegistry(t)
	var h http.Handler = server.New(lr, server.Options{})
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return lr, ts, client.New(ts.URL, nil)
}

// createBooks creates the index "books" on the leader with one document
// per id, commits them and returns the index's STATUS.
func createBooks(t *testing.T, lc *client.Client, ids ...string) client.IndexStatus {
	t.Helper()
	ctx := context.Background()
	if _, err := lc.CreateIndex(ctx, "books", json.RawMessage(booksSchema)); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, `{"id":%q,"body":"light and colours"}`+"\n", id)
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

// newFollower builds a follower of cfg over reg.
func newFollower(t *testing.T, cfg replication.Config, reg *registry.Registry) *replication.Follower {
	t.Helper()
	f, err := replication.New(cfg, reg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// runFollower runs f until the returned function stops it (and waits for
// Run to return).
func runFollower(f *replication.Follower) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	return func() { cancel(); <-done }
}

// TestFollowerCopiesCommitsAndDeletions: in one process (so that the race
// detector sees both sides), a follower copies a leader's index with its
// commits and a merge, reports "following" with no lag, and deletes the
// index when the leader does.
func TestFollowerCopiesCommitsAndDeletions(t *testing.T) {
	_, ts, lc := startLeader(t, nil)
	ctx := context.Background()
	if _, err := lc.CreateIndex(ctx, "books", json.RawMessage(booksSchema)); err != nil {
		t.Fatal(err)
	}
	fr := openRegistry(t)
	f := newFollower(t, replication.Config{Leader: ts.URL, PollWait: time.Second, ListInterval: 50 * time.Millisecond}, fr)
	defer runFollower(f)()
	for round := range 4 {
		var b strings.Builder
		for i := range 20 {
			fmt.Fprintf(&b, `{"id":"d%d-%d","body":"light and colours %d"}`+"\n", round, i, i)
		}
		if _, err := lc.AddNDJSON(ctx, "books", strings.NewReader(b.String())); err != nil {
			t.Fatal(err)
		}
		if _, err := lc.Commit(ctx, "books"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lc.Merge(ctx, "books", client.MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	want, err := lc.GetIndex(ctx, "books")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to copy the leader's generation", func() bool {
		st, ok := f.Status("books")
		h, err := fr.Acquire("books")
		if err != nil {
			return false
		}
		defer h.Release()
		got := h.Status()
		return ok && st.State == client.ReplicationFollowing && st.LagSeconds == 0 &&
			got.Generation == want.Generation && got.Documents == want.Documents
	})
	if err := lc.DeleteIndex(ctx, "books"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to delete the index", func() bool {
		_, ok := f.Status("books")
		return !ok && len(fr.Names()) == 0
	})
}

// waitFor polls cond until it holds, failing after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRestartedFollowerReportsFollowingAtOnce: a follower started on an
// up-to-date copy reports "following" and the leader's generation as soon
// as the leader answers its index list, not only once a long poll (which
// waits up to PollWait when nothing is committed) returns.
func TestRestartedFollowerReportsFollowingAtOnce(t *testing.T) {
	_, ts, lc := startLeader(t, nil)
	want := createBooks(t, lc, "a")
	fr := openRegistry(t)
	run := func(pollWait time.Duration) (*replication.Follower, func()) {
		f := newFollower(t, replication.Config{Leader: ts.URL, PollWait: pollWait, ListInterval: 50 * time.Millisecond}, fr)
		return f, runFollower(f)
	}
	f, stop := run(time.Second)
	waitFor(t, "the first follower to copy the leader's generation", func() bool {
		st, ok := f.Status("books")
		return ok && st.State == client.ReplicationFollowing && st.LeaderGeneration == want.Generation
	})
	stop()
	// The second follower's long polls wait a minute: only the index list
	// can tell it that its copy is current.
	f, stop = run(time.Minute)
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, ok := f.Status("books")
		if ok && st.State == client.ReplicationFollowing && st.LeaderGeneration == want.Generation && st.LagSeconds == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted follower reports %+v (known %v), want following at generation %d", st, ok, want.Generation)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFollowerStopsWhenItsContextEnds: Run returns promptly once its
// context ends, whatever the order in which its index loops end (an index
// loop that ended first used to leave stopAll waiting on a nil channel
// forever: a follower never finished its shutdown after SIGTERM).
func TestFollowerStopsWhenItsContextEnds(t *testing.T) {
	_, ts, lc := startLeader(t, nil)
	ctx := context.Background()
	names := []string{"a", "b", "c", "d"}
	for _, name := range names {
		if _, err := lc.CreateIndex(ctx, name, json.RawMessage(`{"fields":[{"name":"id","type":"keyword","primary":true}]}`)); err != nil {
			t.Fatal(err)
		}
	}
	fr := openRegistry(t)
	for round := range 10 {
		f := newFollower(t, replication.Config{Leader: ts.URL, PollWait: time.Minute, ListInterval: 20 * time.Millisecond}, fr)
		fctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); f.Run(fctx) }()
		waitFor(t, "the follower to follow every index", func() bool {
			for _, name := range names {
				if st, ok := f.Status(name); !ok || st.State != client.ReplicationFollowing {
					return false
				}
			}
			return true
		})
		stop()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: Run did not return 20s after its context ended", round)
		}
	}
}
