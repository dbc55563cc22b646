package server_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/server"
)

// fakeFollower reports one followed index.
type fakeFollower struct{}

func (fakeFollower) Status(name string) (client.ReplicationStatus, bool) {
	if name != "books" {
		return client.ReplicationStatus{}, false
	}
	return client.ReplicationStatus{Leader: "https://leader:8082", State: client.ReplicationFollowing, LeaderGeneration: 1}, true
}

func (fakeFollower) Ready() bool { return true }

func (f fakeFollower) Statuses() map[string]client.ReplicationStatus {
	st, _ := f.Status("books")
	return map[string]client.ReplicationStatus{"books": st}
}

// TestF05_WritesOnAFollowerAnswerReadOnlyReplica: a server with a
// follower refuses every write route with 409 ReadOnlyReplica and changes
// nothing; reads answer, STATUS carries the replication object and
// /metrics the lag.
func TestF05_WritesOnAFollowerAnswerReadOnlyReplica(t *testing.T) {
	dir := t.TempDir()
	r, err := registry.Open(vfs.Default, dir, registry.Options{Index: index.Options{IndexingWorkers: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = r.Close(ctx)
	})
	sch := json.RawMessage(testSchema)
	leaderSide := client.New(httptest.NewServer(server.New(r, server.Options{})).URL, nil)
	if _, err := leaderSide.CreateIndex(context.Background(), "books", sch); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(server.New(r, server.Options{Follower: fakeFollower{}}))
	defer ts.Close()
	e := &env{t: t, dir: dir, r: r, ts: ts, c: client.New(ts.URL, ts.Client()), ctx: context.Background()}
	for _, w := range []struct{ method, path, body string }{
		{"POST", "/v1/indexes/books/documents", `{"id":"a","title":"t"}` + "\n"},
		{"DELETE", "/v1/indexes/books/documents/a", ""},
		{"POST", "/v1/indexes/books/commit", ""},
		{"POST", "/v1/indexes/books/merge", ""},
		{"POST", "/v1/indexes/books/reorder", ""},
		{"POST", "/v1/indexes/books/compact", ""},
		{"DELETE", "/v1/indexes/books", ""},
		{"PUT", "/v1/indexes/other", `{"schema":` + testSchema + `}`},
	} {
		var body client.ErrorBody
		var in any
		if w.body != "" {
			in = w.body
		}
		wireCall(t, e, w.method, w.path, in, 409, &body)
		if body.Error == nil || body.Error.Code != client.CodeReadOnlyReplica {
			t.Fatalf("%s %s on a follower: %+v", w.method, w.path, body.Error)
		}
	}
	var st client.IndexStatus
	wireCall(t, e, "GET", "/v1/indexes/books", nil, 200, &st)
	if st.Generation != 0 || st.UncommittedDocuments != 0 || st.Replication == nil || st.Replication.State != "following" {
		t.Fatalf("follower STATUS after refused writes: %+v (replication %+v)", st, st.Replication)
	}
	if names := r.Names(); len(names) != 1 {
		t.Fatalf("indexes after refused writes: %v", names)
	}
	_, _, metrics := rawCall(t, e, "GET", "/metrics")
	if !strings.Contains(string(metrics), `summa_replication_lag_seconds{index="books"} 0`) {
		t.Fatal("no summa_replication_lag_seconds of books in /metrics")
	}
}
