package blackbox

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/summadev/summa/client"
)

// convergeTimeout bounds how long a follower may take to show the
// leader's committed generation (generous: the machine is shared).
const convergeTimeout = 90 * time.Second

// ReplicationStatus is the "replication" object of a follower's STATUS.
type ReplicationStatus struct {
	Leader           string  `json:"leader"`
	State            string  `json:"state"`
	LeaderGeneration uint64  `json:"leaderGeneration"`
	LagSeconds       float64 `json:"lagSeconds"`
}

// followerStatus is a follower's STATUS with its replication object.
type followerStatus struct {
	client.IndexStatus
	Replication *ReplicationStatus `json:"replication"`
}

// startFollower starts a follower of leaderURL on dataDir.
func startFollower(t testing.TB, dataDir, leaderURL string, extra ...string) *Server {
	t.Helper()
	return startServer(t, dataDir, append([]string{"--follow", leaderURL}, extra...)...)
}

// replStatus returns an index's STATUS on a follower, ok false on 404.
func replStatus(t testing.TB, s *Server, name string) (followerStatus, bool) {
	t.Helper()
	r := s.MustDo("GET", "/v1/indexes/"+name, nil)
	if r.Status == http.StatusNotFound {
		return followerStatus{}, false
	}
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s on the follower: %s", name, r)
	}
	var st followerStatus
	if err := json.Unmarshal(r.Body, &st); err != nil {
		t.Fatalf("decode STATUS: %v", err)
	}
	return st, true
}

// sameDocs reports whether two document sets have the same keys and
// versions.
func sameDocs(a, b map[string]Doc) bool {
	if len(a) != len(b) {
		return false
	}
	for k, d := range a {
		if e, ok := b[k]; !ok || e.N != d.N {
			return false
		}
	}
	return true
}

// waitConverged polls until the follower serves the leader's committed
// generation of name with the same documents, and returns that STATUS.
func waitConverged(t testing.TB, leader, follower *Server, name string) followerStatus {
	t.Helper()
	deadline := time.Now().Add(convergeTimeout)
	for {
		want := leader.Status(name)
		got, ok := replStatus(t, follower, name)
		if ok && got.Generation == want.Generation && got.Documents == want.Documents &&
			sameDocs(leader.LiveDocs(name), follower.LiveDocs(name)) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("follower did not converge on %s: leader generation %d (%d docs), follower %+v (found %v)",
				name, want.Generation, want.Documents, got, ok)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// proxy is a reverse proxy between a follower and its leader that can
// corrupt or slow the file downloads of replication.
type proxy struct {
	srv *httptest.Server
	// corrupt, while set, flips one byte in the middle of every file
	// download; corrupted counts them.
	corrupt   atomic.Bool
	corrupted atomic.Int64
	// delay, when positive (nanoseconds), is slept before each file
	// download is answered; files counts them.
	delay atomic.Int64
	files atomic.Int64
}

// newProxy starts a proxy of the leader at target.
func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		if !strings.Contains(resp.Request.URL.Path, "/replication/holds/") || resp.Request.Method != "GET" ||
			resp.StatusCode != http.StatusOK {
			return nil
		}
		p.files.Add(1)
		if d := p.delay.Load(); d > 0 {
			time.Sleep(time.Duration(d))
		}
		if !p.corrupt.Load() {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if len(body) > 0 {
			body[len(body)/2] ^= 0x5a
			p.corrupted.Add(1)
		}
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		return nil
	}
	p.srv = httptest.NewServer(rp)
	t.Cleanup(p.srv.Close)
	return p
}

// segNames lists the seg_ files of an index directory with their
// modification times.
func segNames(t testing.TB, dir string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "seg_") {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil {
			out[e.Name()] = fi.ModTime()
		}
	}
	return out
}
