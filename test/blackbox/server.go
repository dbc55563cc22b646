// Package blackbox tests the real summa-server binary from the outside:
// through its command line, its HTTP API and its data directory, exactly as
// the engine contract (shared/contracts/engine.md) describes them. It uses
// nothing but net/http and encoding/json, so it needs only the binary.
//
// The short suite runs by default; SUMMA_LONG=1 enables the long variants
// (200 kill -9 trials instead of 12, a larger corpus). A failed test logs
// the tail of every server's output; SUMMA_SERVER_LOGS=1 logs it always.
package blackbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Timeouts of the harness.
const (
	// readyTimeout bounds how long a server may take to answer /readyz 200.
	readyTimeout = 60 * time.Second
	// requestTimeout bounds one HTTP request of a test.
	requestTimeout = 60 * time.Second
	// shutdownDeadline is the contract's default --shutdown-deadline.
	shutdownDeadline = 25 * time.Second
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
func buildServer(dir string) error {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return errors.New("go env GOMOD: not inside a module")
	}
	moduleRoot = filepath.Dir(gomod)
	binPath = filepath.Join(dir, "summa-server")
	cmd := exec.Command("go", "build", "-o", binPath, "./cmd/summa-server")
	cmd.Dir = moduleRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/summa-server: %v\n%s", err, out)
	}
	return nil
}

// needBinary fails the test when the binary could not be built.
func needBinary(t testing.TB) {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("summa-server binary not available: %v", buildErr)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// Server is one summa-server process.
type Server struct {
	t       testing.TB
	DataDir string
	Addr    string // host:port
	Args    []string
	cmd     *exec.Cmd
	log     *syncBuffer
	started time.Time

	done    chan struct{} // closed when the process has exited
	exitErr error         // cmd.Wait's result, valid after done
	client  *http.Client
}

// syncBuffer collects a process's output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d earlier lines)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// spawn starts a server process without waiting for it to be ready. The
// process is killed when the test ends; its output is logged if the test
// failed.
func spawn(t testing.TB, dataDir string, extra ...string) *Server {
	t.Helper()
	needBinary(t)
	port := freePort(t)
	s := &Server{
		t:       t,
		DataDir: dataDir,
		Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		log:     &syncBuffer{},
		done:    make(chan struct{}),
		client: &http.Client{
			Timeout:   requestTimeout,
			Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true},
		},
	}
	s.Args = append([]string{"--data-dir", dataDir, "--listen", s.Addr}, extra...)
	s.cmd = exec.Command(binPath, s.Args...)
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	s.cmd.Env = cleanEnv()
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start summa-server: %v", err)
	}
	s.started = time.Now()
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		if s.Running() {
			s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() || os.Getenv("SUMMA_SERVER_LOGS") == "1" {
			t.Logf("summa-server %s output:\n%s", strings.Join(s.Args, " "), tail(s.log.String(), 60))
		}
	})
	return s
}

// cleanEnv is the test's environment without SUMMA_* variables, so a
// developer's settings do not change the flags under test.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SUMMA_") {
			env = append(env, kv)
		}
	}
	return env
}

// startServer starts a server and waits until /readyz answers 200. If the
// process dies before that because its port was taken in the meantime, it
// retries on another port.
func startServer(t testing.TB, dataDir string, extra ...string) *Server {
	t.Helper()
	for attempt := 0; ; attempt++ {
		s := spawn(t, dataDir, extra...)
		err := s.WaitReady(readyTimeout)
		if err == nil {
			return s
		}
		if !s.Running() && attempt < 3 && strings.Contains(s.Output(), "address already in use") {
			continue
		}
		t.Fatalf("summa-server %s not ready: %v\noutput:\n%s", strings.Join(s.Args, " "), err, tail(s.Output(), 60))
	}
}

// Running reports whether the process has not exited yet.
func (s *Server) Running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Output returns everything the process wrote so far.
func (s *Server) Output() string { return s.log.String() }

// URL returns the server URL of path.
func (s *Server) URL(path string) string { return "http://" + s.Addr + path }

// WaitReady polls /readyz until it answers 200, the process exits or the
// timeout passes.
func (s *Server) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := &http.Client{Timeout: 2 * time.Second}
	for {
		if !s.Running() {
			return fmt.Errorf("process exited before ready: %v", s.exitErr)
		}
		resp, err := c.Get(s.URL("/readyz"))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/readyz not 200 after %v (last error %v)", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill sends SIGKILL and waits for the process to exit.
func (s *Server) Kill() {
	s.t.Helper()
	if s.Running() {
		s.cmd.Process.Signal(syscall.SIGKILL)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.t.Fatalf("summa-server did not exit 30s after SIGKILL")
	}
	s.client.CloseIdleConnections()
}

// Term sends SIGTERM and waits up to timeout for the process to exit. It
// returns the exit code (-1 when killed by a signal) and how long the exit
// took; on timeout it kills the process and fails the test.
func (s *Server) Term(timeout time.Duration) (code int, took time.Duration) {
	s.t.Helper()
	start := time.Now()
	if s.Running() {
		s.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-s.done:
	case <-time.After(timeout):
		s.cmd.Process.Kill()
		<-s.done
		s.t.Fatalf("summa-server did not exit within %v of SIGTERM", timeout)
	}
	s.client.CloseIdleConnections()
	return s.ExitCode(), time.Since(start)
}

// Stop sends SIGTERM and requires a clean exit (code 0) within the
// shutdown deadline plus slack.
func (s *Server) Stop() {
	s.t.Helper()
	code, took := s.Term(shutdownDeadline + 10*time.Second)
	if code != 0 {
		s.t.Fatalf("summa-server exited with code %d after SIGTERM (took %v)\noutput:\n%s", code, took, tail(s.Output(), 40))
	}
}

// ExitCode returns the exit code once the process exited (-1 if a signal
// ended it).
func (s *Server) ExitCode() int {
	<-s.done
	if s.cmd.ProcessState == nil {
		return -1
	}
	return s.cmd.ProcessState.ExitCode()
}

// ---- HTTP ----

// Response is one HTTP answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// ErrorBody is the contract's error answer.
type ErrorBody struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
	} `json:"error"`
}

// ErrCode returns the error code of an error answer ("" if none).
func (r *Response) ErrCode() string {
	var e ErrorBody
	if json.Unmarshal(r.Body, &e) != nil {
		return ""
	}
	return e.Error.Code
}

func (r *Response) String() string {
	b := r.Body
	if len(b) > 600 {
		b = append(b[:600:600], "..."...)
	}
	return fmt.Sprintf("%d %s", r.Status, bytes.TrimSpace(b))
}

// Do sends one request; body is sent as is when it is []byte or string,
// otherwise JSON-encoded. A transport error is returned, not fatal.
func (s *Server) Do(ctx context.Context, method, path string, body any) (*Response, error) {
	var rd io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
		ctype = "application/x-ndjson"
	case string:
		rd = strings.NewReader(b)
		ctype = "application/x-ndjson"
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL(path), rd)
	if err != nil {
		return nil, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// MustDo sends one request and fails the test on a transport error.
func (s *Server) MustDo(method, path string, body any) *Response {
	s.t.Helper()
	r, err := s.Do(context.Background(), method, path, body)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// Expect sends one request and requires the given status; if out is not
// nil the body is decoded into it.
func (s *Server) Expect(status int, method, path string, body, out any) *Response {
	s.t.Helper()
	r := s.MustDo(method, path, body)
	if r.Status != status {
		s.t.Fatalf("%s %s: want status %d, got %s", method, path, status, r)
	}
	if out != nil {
		if err := json.Unmarshal(r.Body, out); err != nil {
			s.t.Fatalf("%s %s: decode %s: %v", method, path, r, err)
		}
	}
	return r
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

// SegmentStatus is one segment of STATUS.
type SegmentStatus struct {
	ID               SegID `json:"id"`
	Documents        int64 `json:"documents"`
	DeletedDocuments int64 `json:"deletedDocuments"`
	SizeBytes        int64 `json:"sizeBytes"`
}

// QuarantineStatus is one quarantined segment of STATUS.
type QuarantineStatus struct {
	Segment SegID  `json:"segment"`
	Reason  string `json:"reason"`
}

// IndexStatus is the contract's STATUS.
type IndexStatus struct {
	Name                 string             `json:"name"`
	State                string             `json:"state"`
	Generation           uint64             `json:"generation"`
	Documents            int64              `json:"documents"`
	Segments             []SegmentStatus    `json:"segments"`
	Quarantined          []QuarantineStatus `json:"quarantined"`
	DurabilityDegraded   bool               `json:"durabilityDegraded"`
	UncommittedDocuments int64              `json:"uncommittedDocuments"`
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
func (s *Server) Status(name string) IndexStatus {
	s.t.Helper()
	var st IndexStatus
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
