// Package blackbox tests the real summa-server binary from the outside:
// through its command line, its HTTP API and its data directory, exactly as
// docs/server.md describes them. It uses
// nothing but net/http, encoding/json, the wire types of package client
// (one definition per wire type) and the shared harness of
// internal/testing/testserver, so it needs only the binary.
//
// The short suite runs by default; SUMMA_LONG=1 enables the long variants
// (200 kill -9 trials instead of 12, a larger corpus). A failed test logs
// the tail of every server's output; SUMMA_SERVER_LOGS=1 logs it always.
package blackbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"testing"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/internal/testing/harness"
	"github.com/summadev/summa/internal/testing/testserver"
)

// Timeouts of the harness.
const (
	// readyTimeout bounds how long a server may take to answer /readyz 200.
	readyTimeout = testserver.ReadyTimeout
	// shutdownDeadline is the contract's default --shutdown-deadline.
	shutdownDeadline = testserver.ShutdownDeadline
)

var (
	// binPath is the built summa-server, set by TestMain.
	binPath string
	// buildErr is why the binary could not be built, if it could not.
	buildErr error
	// moduleRoot is the directory of go.mod.
	moduleRoot string
)

// longMode reports whether the long variants run (SUMMA_LONG=1).
func longMode() bool { return os.Getenv("SUMMA_LONG") == "1" }

// buildServer builds ./cmd/summa-server from the module root into dir.
func buildServer(dir string) (err error) {
	binPath, moduleRoot, err = testserver.Build(dir)
	return err
}

// needBinary fails the test when the binary could not be built.
func needBinary(t testing.TB) {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("summa-server binary not available: %v", buildErr)
	}
}

// Server is one summa-server process (the shared harness) with the typed
// helpers of this package's contract types.
type Server struct {
	*testserver.Server
	t testing.TB
}

// Response is one HTTP answer.
type Response = testserver.Response

// ErrorBody is the contract's error answer.
type ErrorBody = testserver.ErrorBody

// tail returns the last n lines of s.
func tail(s string, n int) string { return harness.Tail(s, n) }

// cleanEnv is the test's environment without SUMMA_* variables.
func cleanEnv() []string { return testserver.CleanEnv() }

// spawn starts a server process without waiting for it to be ready. The
// process is killed when the test ends; its output is logged if the test
// failed.
func spawn(t testing.TB, dataDir string, extra ...string) *Server {
	t.Helper()
	needBinary(t)
	return &Server{Server: testserver.Spawn(t, binPath, dataDir, testserver.Options{}, extra...), t: t}
}

// startServer starts a server and waits until /readyz answers 200.
func startServer(t testing.TB, dataDir string, extra ...string) *Server {
	t.Helper()
	needBinary(t)
	return &Server{Server: testserver.Start(t, binPath, dataDir, testserver.Options{}, extra...), t: t}
}

// ---- contract types ----

// SegID is a segment or mask ID as it appears in JSON: the contract's
// lowercase hex string (a JSON number is converted to hex).
type SegID string

// UnmarshalJSON accepts a hex string or a number.
func (id *SegID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = SegID(s)
		return nil
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("segment id %s: %v", b, err)
	}
	*id = SegID(strconv.FormatUint(n, 16))
	return nil
}

// CommitResult is the answer to a commit.
type CommitResult struct {
	Generation uint64 `json:"generation"`
	Documents  int64  `json:"documents"`
}

// SearchHit is one hit.
type SearchHit struct {
	Score  float64                    `json:"score"`
	Fields map[string]json.RawMessage `json:"fields"`
}

// SearchResult is the answer to a search.
type SearchResult struct {
	TotalHits int         `json:"totalHits"`
	Hits      []SearchHit `json:"hits"`
}

// DrainStatus is the answer to GET /v1/admin/drain.
type DrainStatus struct {
	Draining             bool  `json:"draining"`
	Drained              bool  `json:"drained"`
	UncommittedDocuments int64 `json:"uncommittedDocuments"`
	ActiveOperations     int64 `json:"activeOperations"`
}

// DoctorReport is the report printed by --doctor.
type DoctorReport struct {
	Indexes []struct {
		Name             string  `json:"name"`
		CheckedSegments  int     `json:"checkedSegments"`
		RemovedSegments  []SegID `json:"removedSegments"`
		RemovedDocuments int64   `json:"removedDocuments"`
	} `json:"indexes"`
}

// ---- typed helpers ----

// CreateIndex creates an index and requires 201.
func (s *Server) CreateIndex(name string, schema json.RawMessage) {
	s.t.Helper()
	s.Expect(http.StatusCreated, "PUT", "/v1/indexes/"+name, map[string]any{"schema": schema}, nil)
}

// Status returns an index's STATUS and requires 200.
func (s *Server) Status(name string) client.IndexStatus {
	s.t.Helper()
	var st client.IndexStatus
	s.Expect(http.StatusOK, "GET", "/v1/indexes/"+name, nil, &st)
	return st
}

// Ingest posts docs as NDJSON and requires 200 {"accepted":len(docs)}.
func (s *Server) Ingest(name string, docs []Doc) {
	s.t.Helper()
	var out struct {
		Accepted int `json:"accepted"`
	}
	s.Expect(http.StatusOK, "POST", "/v1/indexes/"+name+"/documents", NDJSON(docs), &out)
	if out.Accepted != len(docs) {
		s.t.Fatalf("ingest into %s: accepted %d of %d documents", name, out.Accepted, len(docs))
	}
}

// Commit commits an index and requires 200.
func (s *Server) Commit(name string) CommitResult {
	s.t.Helper()
	var out CommitResult
	s.Expect(http.StatusOK, "POST", "/v1/indexes/"+name+"/commit", nil, &out)
	return out
}

// Search runs one query and requires 200.
func (s *Server) Search(name, query string, limit int) SearchResult {
	s.t.Helper()
	var out SearchResult
	s.Expect(http.StatusOK, "POST", "/v1/indexes/"+name+"/search",
		map[string]any{"query": query, "limit": limit, "offset": 0}, &out)
	return out
}

// maxWindow is the deepest page the tests ask for; the test corpora stay
// below it so one request lists every document.
const maxWindow = 10000

// LiveDocs lists every live document of an index through the tag every
// test document carries. It fails the test if a primary key appears twice
// or the hit count disagrees with totalHits.
func (s *Server) LiveDocs(name string) map[string]Doc {
	s.t.Helper()
	res := s.Search(name, allQuery, maxWindow)
	if res.TotalHits > maxWindow {
		s.t.Fatalf("index %s has %d documents, more than one page of %d", name, res.TotalHits, maxWindow)
	}
	if len(res.Hits) != res.TotalHits {
		s.t.Fatalf("search %q on %s: totalHits %d but %d hits returned", allQuery, name, res.TotalHits, len(res.Hits))
	}
	out := make(map[string]Doc, len(res.Hits))
	for i, h := range res.Hits {
		d, err := hitDoc(h)
		if err != nil {
			s.t.Fatalf("search %q on %s: hit %d: %v", allQuery, name, i, err)
		}
		if _, dup := out[d.ID]; dup {
			s.t.Fatalf("index %s: primary key %q appears twice among the live documents", name, d.ID)
		}
		out[d.ID] = d
	}
	return out
}
