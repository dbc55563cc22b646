package blackbox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/summadev/summa/client"
)

// waitAnswer is one answer of a status long poll.
type waitAnswer struct {
	status client.IndexStatus
	code   int
	body   string
	err    error
}

// longPoll starts GET /v1/indexes/{index} with query q in the background.
func longPoll(s *Server, index, q string) <-chan waitAnswer {
	out := make(chan waitAnswer, 1)
	go func() {
		r, err := s.Do(s.t.Context(), "GET", "/v1/indexes/"+index+"?"+q, nil)
		if err != nil {
			out <- waitAnswer{err: err}
			return
		}
		a := waitAnswer{code: r.Status, body: r.String()}
		if r.Status == http.StatusOK {
			a.err = json.Unmarshal(r.Body, &a.status)
		}
		out <- a
	}()
	return out
}

// TestStatusLongPoll: GET /v1/indexes/{index}?waitGeneration=G&wait=S
// answers once the generation is no longer G (a commit), with the STATUS
// of the new generation; a wait that runs out answers the unchanged
// STATUS; waitQuarantined answers at once when the count differs; a
// deletion ends a wait; bad parameters are 400.
func TestStatusLongPoll(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	s := startServer(t, t.TempDir())
	const index = "waits"
	s.CreateIndex(index, testSchema)
	g0 := s.Status(index).Generation

	// A commit ends the wait: the answer is the committed generation. Had
	// the server answered at once, it would show g0 and no documents.
	poll := longPoll(s, index, fmt.Sprintf("waitGeneration=%d&wait=30", g0))
	s.Ingest(index, makeDocs(ps, "w", 0, 50))
	res := s.Commit(index)
	a := <-poll
	if a.err != nil || a.code != http.StatusOK {
		t.Fatalf("long poll across a commit: %v %s", a.err, a.body)
	}
	if a.status.Generation != res.Generation || a.status.Documents != 50 {
		t.Errorf("long poll across a commit answered generation %d documents %d, want %d and 50 (the commit's)",
			a.status.Generation, a.status.Documents, res.Generation)
	}

	// Nothing changes: the wait runs out and answers the same STATUS.
	a = <-longPoll(s, index, fmt.Sprintf("waitGeneration=%d&waitQuarantined=0&wait=0.3", res.Generation))
	if a.err != nil || a.code != http.StatusOK || a.status.Generation != res.Generation || a.status.Documents != 50 {
		t.Errorf("a wait that runs out: %v %s", a.err, a.body)
	}
	// Another generation or quarantine count than the index's: at once.
	for _, q := range []string{"waitGeneration=0&wait=30", fmt.Sprintf("waitGeneration=%d&waitQuarantined=3&wait=30", res.Generation)} {
		a = <-longPoll(s, index, q)
		if a.err != nil || a.code != http.StatusOK || a.status.Generation != res.Generation {
			t.Errorf("?%s: %v %s", q, a.err, a.body)
		}
	}

	for _, q := range []string{"wait=5", "waitGeneration=-1&wait=1", "waitGeneration=x", "waitQuarantined=1.5", "waitGeneration=1&wait=soon"} {
		if r := s.MustDo("GET", "/v1/indexes/"+index+"?"+q, nil); r.Status != http.StatusBadRequest || r.ErrCode() != "BadRequest" {
			t.Errorf("?%s: want 400 BadRequest, got %s", q, r)
		}
	}

	// An index deletion ends the wait.
	poll = longPoll(s, index, fmt.Sprintf("waitGeneration=%d&waitQuarantined=0&wait=30", res.Generation))
	time.Sleep(100 * time.Millisecond) // let the poll reach the server (either order passes)
	s.Expect(http.StatusAccepted, "DELETE", "/v1/indexes/"+index, nil, nil)
	a = <-poll
	if a.err != nil || (a.code != http.StatusOK && a.code != http.StatusNotFound) {
		t.Fatalf("long poll across a deletion: %v %s", a.err, a.body)
	}
	if a.code == http.StatusOK && a.status.State != "deleting" {
		t.Errorf("long poll across a deletion answered state %q, want deleting", a.status.State)
	}
}

// TestStatusLongPollShutdown: a status long poll in flight does not hold
// the ordered shutdown. The wait (30 s) is longer than the shutdown
// deadline: a server whose HTTP shutdown waited for it would miss the
// deadline and exit non-zero.
func TestStatusLongPollShutdown(t *testing.T) {
	needBinary(t)
	s := startServer(t, t.TempDir(), "--shutdown-deadline", "10s")
	const index = "waitterm"
	s.CreateIndex(index, testSchema)
	st := s.Status(index)
	poll := longPoll(s, index, fmt.Sprintf("waitGeneration=%d&waitQuarantined=0&wait=30", st.Generation))
	time.Sleep(100 * time.Millisecond) // let the poll reach the server
	code, took := s.Term(shutdownDeadline + 5*time.Second)
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM with a status long poll open, want 0 (took %v)\n%s", code, took, tail(s.Output(), 30))
	}
	if a := <-poll; a.err == nil && a.code == http.StatusOK && a.status.Generation < st.Generation {
		t.Errorf("the long poll answered generation %d, older than %d", a.status.Generation, st.Generation)
	}
}

// TestReplicationLongPollEndsAtShutdown: a follower's long poll of the
// replication route (GET /v1/indexes/{index}/replication?after=G&wait=30)
// does not hold the leader's shutdown: after SIGTERM it ends with 503
// NotReady (the follower backs off and asks again), and the leader exits
// in order, code 0, well within a 10 s --shutdown-deadline.
func TestReplicationLongPollEndsAtShutdown(t *testing.T) {
	needBinary(t)
	s := startServer(t, t.TempDir(), "--shutdown-deadline", "10s")
	const index = "replterm"
	s.CreateIndex(index, testSchema)
	g := s.Status(index).Generation
	poll := make(chan waitAnswer, 1)
	go func() {
		r, err := s.Do(s.t.Context(), "GET", fmt.Sprintf("/v1/indexes/%s/replication?after=%d&wait=30", index, g), nil)
		if err != nil {
			poll <- waitAnswer{err: err}
			return
		}
		poll <- waitAnswer{code: r.Status, body: r.String()}
	}()
	time.Sleep(100 * time.Millisecond) // let the poll reach the server
	code, took := s.Term(shutdownDeadline + 5*time.Second)
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM with a replication long poll open, want 0 (took %v)\n%s", code, took, tail(s.Output(), 30))
	}
	if a := <-poll; a.err == nil && a.code != http.StatusServiceUnavailable {
		t.Errorf("the replication long poll answered %d at shutdown, want 503 NotReady: %s", a.code, a.body)
	}
}
