// Package testserver runs the real summa-server binary for tests that
// judge it from the outside (test/blackbox, test/hostile): it builds the
// binary, starts processes on free loopback ports, waits for readiness,
// collects their output and sends HTTP requests, over HTTPS with a bearer
// token when asked. It uses nothing of the engine's own packages.
package testserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/summadev/summa/internal/testing/harness"
)

// Timeouts of the harness.
const (
	// ReadyTimeout bounds how long a server may take to answer /readyz 200.
	ReadyTimeout = 60 * time.Second
	// RequestTimeout bounds one HTTP request of a test.
	RequestTimeout = 60 * time.Second
	// ShutdownDeadline is the contract's default --shutdown-deadline.
	ShutdownDeadline = 25 * time.Second
)

// Build builds ./cmd/summa-server of the module the test runs in into dir
// and returns the binary's path and the module root.
func Build(dir string) (bin, moduleRoot string, err error) {
	if moduleRoot, err = harness.ModuleRoot(); err != nil {
		return "", "", err
	}
	bin, err = harness.BuildServer(context.Background(), moduleRoot, dir)
	return bin, moduleRoot, err
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ports, err := harness.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// CleanEnv is the test's environment without SUMMA_* variables, so a
// developer's settings do not change the flags under test.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SUMMA_") {
			env = append(env, kv)
		}
	}
	return env
}

// Options say how the harness talks to a server.
type Options struct {
	// CACert (PEM), when set, makes the harness speak HTTPS and verify the
	// server's certificate against it. The server's TLS flags are the
	// caller's to pass.
	CACert []byte
	// Token, when set, is sent as "Authorization: Bearer TOKEN" by Do
	// (never by WaitReady: the probes are open).
	Token string
}

// Server is one summa-server process.
type Server struct {
	// DataDir is the data directory; Addr is host:port; Args the command
	// line after the binary.
	DataDir string
	Addr    string
	Args    []string
	// Started is when the process was started.
	Started time.Time

	t       testing.TB
	cmd     *exec.Cmd
	log     *harness.Output
	scheme  string
	token   string
	tr      *http.Transport
	client  *http.Client
	done    chan struct{} // closed when the process has exited
	exitErr error         // cmd.Wait's result, valid after done
}

// Spawn starts the server binary bin on a free port without waiting for
// it to be ready. The process is killed when the test ends; its output is
// logged if the test failed (always with SUMMA_SERVER_LOGS=1).
func Spawn(t testing.TB, bin, dataDir string, opts Options, extra ...string) *Server {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}
	scheme := "http"
	if len(opts.CACert) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(opts.CACert) {
			t.Fatalf("testserver: the CA certificate holds no PEM certificate")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		scheme = "https"
	}
	s := &Server{
		t:       t,
		DataDir: dataDir,
		Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t))),
		log:     &harness.Output{},
		scheme:  scheme,
		token:   opts.Token,
		tr:      tr,
		client:  &http.Client{Timeout: RequestTimeout, Transport: tr},
		done:    make(chan struct{}),
	}
	s.Args = append([]string{"--data-dir", dataDir, "--listen", s.Addr}, extra...)
	s.cmd = exec.Command(bin, s.Args...)
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	s.cmd.Env = CleanEnv()
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start summa-server: %v", err)
	}
	s.Started = time.Now()
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		if s.Running() {
			s.cmd.Process.Kill()
			<-s.done
		}
		s.tr.CloseIdleConnections()
		if t.Failed() || os.Getenv("SUMMA_SERVER_LOGS") == "1" {
			t.Logf("summa-server %s output:\n%s", strings.Join(s.Args, " "), harness.Tail(s.log.String(), 60))
		}
	})
	return s
}

// Start starts a server and waits until /readyz answers 200. If the
// process dies before that because its port was taken in the meantime, it
// retries on another port.
func Start(t testing.TB, bin, dataDir string, opts Options, extra ...string) *Server {
	t.Helper()
	for attempt := 0; ; attempt++ {
		s := Spawn(t, bin, dataDir, opts, extra...)
		err := s.WaitReady(ReadyTimeout)
		if err == nil {
			return s
		}
		if !s.Running() && attempt < 3 && strings.Contains(s.Output(), "address already in use") {
			continue
		}
		t.Fatalf("summa-server %s not ready: %v\noutput:\n%s", strings.Join(s.Args, " "), err, harness.Tail(s.Output(), 60))
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

// Done is closed when the process has exited.
func (s *Server) Done() <-chan struct{} { return s.done }

// PID is the process's ID.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// ExitErr is cmd.Wait's result once the process has exited.
func (s *Server) ExitErr() error {
	<-s.done
	return s.exitErr
}

// Output returns everything the process wrote so far.
func (s *Server) Output() string { return s.log.String() }

// URL returns the server URL of path.
func (s *Server) URL(path string) string { return s.scheme + "://" + s.Addr + path }

// HTTPClient is the harness's client: it trusts the server's CA (when
// HTTPS) and sends no token by itself.
func (s *Server) HTTPClient() *http.Client { return s.client }

// WaitReady polls /readyz until it answers 200, the process exits or the
// timeout passes.
func (s *Server) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := &http.Client{Timeout: 2 * time.Second, Transport: s.tr}
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
	s.tr.CloseIdleConnections()
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
	s.tr.CloseIdleConnections()
	return s.ExitCode(), time.Since(start)
}

// Stop sends SIGTERM and requires a clean exit (code 0) within the
// shutdown deadline plus slack.
func (s *Server) Stop() {
	s.t.Helper()
	code, took := s.Term(ShutdownDeadline + 10*time.Second)
	if code != 0 {
		s.t.Fatalf("summa-server exited with code %d after SIGTERM (took %v)\noutput:\n%s", code, took, harness.Tail(s.Output(), 40))
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

// Send sends req with the harness's client as it is (no token added) and
// reads the whole answer. A transport error is returned, not fatal.
func (s *Server) Send(req *http.Request) (*Response, error) {
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

// Do sends one request with the Options' token; body is sent as is (as
// NDJSON) when it is []byte or string, otherwise JSON-encoded.
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
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	return s.Send(req)
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
