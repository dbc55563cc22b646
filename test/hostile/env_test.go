package hostile

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/internal/pki"
	"github.com/summadev/summa/internal/testing/testserver"
)

// Limits the server under test is started with; the size classes are
// built around them.
const (
	// maxDocumentBytes is --max-document-bytes.
	maxDocumentBytes = 64 << 10
	// maxRequestBytes is --max-request-bytes.
	maxRequestBytes = 2 << 20
	// maxConnections is --max-connections.
	maxConnections = 32
	// maxQueryBytes is the contract's bound of a query string (16 KiB).
	maxQueryBytes = 16 << 10
)

// Indexes of the suite.
const (
	// baseIndex holds the baseline; no class may change its committed data.
	baseIndex = "base"
	// scratchIndex has the baseline's schema; classes whose input the
	// contract may accept send it there.
	scratchIndex = "scratch"
)

// waitBound is the generous bound of every wait of the suite: it only
// keeps a broken server from hanging the test, it measures nothing.
const waitBound = 30 * time.Second

// scope is the token a request carries.
type scope int

const (
	asAdmin scope = iota // the default: admin ⊇ write ⊇ read
	asWrite
	asRead
	asNone // no Authorization header
)

// env is the server under test and what the classes share.
type env struct {
	t   *testing.T
	srv *testserver.Server
	// dataDir is the server's data directory.
	dataDir string
	// ca signed the server's certificate; caPEM is its PEM.
	ca    *pki.CA
	caPEM []byte
	// certFile and keyFile are the files the server re-reads.
	certFile, keyFile string
	// accessArgs are the token and TLS flags, for sibling servers.
	accessArgs []string
	// sub is the subtest of the class that runs (for sibling servers).
	sub *testing.T
	// tok are the bearer tokens by scope.
	tok map[scope]string
	// hc verifies the server and never follows redirects.
	hc *http.Client
	// reader, writer and admin are typed clients of each scope.
	reader, writer, admin *client.Client
	// baseline is every baseline document's stored fields by primary key;
	// baseLines are the documents as sent (NDJSON lines), for repair.
	baseline  map[string]json.RawMessage
	baseLines [][]byte
	// evil are the primary keys of the hostile documents sent to the
	// baseline index (removed again should one be accepted).
	evil map[string]bool
	// broken is set when the baseline could not be restored: the suite
	// stops.
	broken bool
	// rec is what the current class's requests were answered; mu guards
	// it (concurrent classes send from several goroutines).
	rec record
	mu  sync.Mutex
}

// record collects the answers of one class.
type record struct {
	// statuses are every HTTP status answered.
	statuses []int
	// violations are contract breaches seen in any answer (a 503 without
	// Retry-After, a 401 without WWW-Authenticate).
	violations []string
	// notes tell what a multi-step class saw (logged with -v).
	notes []string
}

// note records what a class saw, for the verbose log.
func (e *env) note(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rec.notes = append(e.rec.notes, fmt.Sprintf(format, args...))
}

// newEnv makes a CA, a server certificate and token files, and starts one
// server with TLS, the three scopes and short timeouts.
func newEnv(t *testing.T) *env {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("summa-server binary not available: %v", buildErr)
	}
	dir := t.TempDir()
	e := &env{t: t, dataDir: filepath.Join(dir, "data"), evil: map[string]bool{},
		certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key"),
		tok: map[scope]string{asAdmin: "adm-" + randHex(16), asWrite: "wri-" + randHex(16), asRead: "rea-" + randHex(16)}}
	ca, err := pki.NewCA("hostile-suite-ca", 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e.ca, e.caPEM = ca, ca.CertPEM
	if err := e.installCert(time.Now(), 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	files := map[scope]string{}
	for s, name := range map[scope]string{asAdmin: "admin", asWrite: "write", asRead: "read"} {
		files[s] = filepath.Join(dir, name+".tokens")
		// A comment and blank lines around the token, as the format allows.
		if err := os.WriteFile(files[s], []byte("# hostile suite\n\n"+e.tok[s]+"\n\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(e.dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	e.accessArgs = []string{"--admin-token-file", files[asAdmin], "--write-token-file", files[asWrite],
		"--read-token-file", files[asRead], "--tls-cert-file", e.certFile, "--tls-key-file", e.keyFile,
		"--access-reload-interval", "200ms"}
	e.srv = testserver.Start(t, binPath, e.dataDir, testserver.Options{CACert: e.caPEM, Token: e.tok[asAdmin]},
		append(e.accessArgs, "--read-header-timeout", "1s", "--read-timeout", "2s", "--write-timeout", "2s", "--idle-timeout", "2s",
			"--max-connections", fmt.Sprint(maxConnections),
			"--max-document-bytes", fmt.Sprint(maxDocumentBytes), "--max-request-bytes", fmt.Sprint(maxRequestBytes),
			"--shutdown-deadline", "10s")...)
	if e.hc, err = client.NewHTTPClient(e.caPEM, "", waitBound); err != nil {
		t.Fatal(err)
	}
	e.hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	e.reader = e.client(asRead)
	e.writer = e.client(asWrite)
	e.admin = e.client(asAdmin)
	return e
}

// client returns a typed client of the server with the token of scope s.
func (e *env) client(s scope) *client.Client { return e.clientOf(e.srv, s) }

// clientOf returns a typed client of srv with the token of scope s.
func (e *env) clientOf(srv *testserver.Server, s scope) *client.Client {
	c, err := client.NewWithOptions(srv.URL(""), client.Options{Token: e.tok[s], CACert: e.caPEM, Timeout: waitBound})
	if err != nil {
		panic(err) // the suite's own CA is always valid PEM
	}
	return c
}

// randHex is n random bytes in hex.
func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// installCert writes a server certificate for 127.0.0.1 valid from now
// for validity (key first, then certificate, each by rename) for the
// server to re-read.
func (e *env) installCert(now time.Time, validity time.Duration) error {
	leaf, err := e.ca.Issue([]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, validity, now)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{e.keyFile, leaf.KeyPEM}, {e.certFile, leaf.CertPEM}} {
		if err := os.WriteFile(f.path+".new", f.data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(f.path+".new", f.path); err != nil {
			return err
		}
	}
	return nil
}

// tlsConfig is a client TLS configuration that verifies the server
// against the suite's CA.
func (e *env) tlsConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.caPEM)
	return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// request is one hostile HTTP request.
type request struct {
	// method and path; the path (with any query) is sent verbatim: no
	// cleaning, no escaping.
	method, path string
	// body, if not nil, is sent with its length, or chunked when chunked
	// is set.
	body    []byte
	chunked bool
	// as is the token sent; auth, when not nil, replaces it by these
	// Authorization header values (none when empty).
	as   scope
	auth []string
	// header are further headers (Content-Type defaults to JSON).
	header map[string]string
}

// send sends r and reads the whole answer, recording it for the class.
func (e *env) send(r request) (*testserver.Response, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
		if r.chunked {
			body = io.MultiReader(body) // hides the length: chunked encoding
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.method, e.srv.URL("/"), body)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(r.path, "//") {
		req.URL.Path, req.URL.RawPath = r.path, "" // Opaque would turn "//x" into a host
	} else {
		req.URL.Opaque = r.path
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case r.auth != nil:
		for _, v := range r.auth {
			req.Header.Add("Authorization", v)
		}
	case r.as != asNone:
		req.Header.Set("Authorization", "Bearer "+e.tok[r.as])
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	var resp *http.Response
	if len(r.body) > rawBodyBytes {
		resp, err = e.sendRaw(req)
	} else {
		resp, err = e.hc.Do(req)
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	out := &testserver.Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
	e.observe(r.method, clip(r.path, 80), out)
	return out, nil
}

// rawBodyBytes is the body size from which send writes and reads on a
// connection of its own, concurrently: the server answers an oversized
// body (413) before reading it whole and then closes, and net/http's
// client may report the reset of its unfinished write instead of that
// early answer (golang.org/issue/11745).
const rawBodyBytes = 256 << 10

// sendRaw sends req on a new TLS connection, reading the answer while the
// request is still being written.
func (e *env) sendRaw(req *http.Request) (*http.Response, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: waitBound}, "tcp", e.srv.Addr, e.tlsConfig())
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(waitBound))
	go req.Write(c) // a write cut short by the server's answer is expected
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		c.Close()
		return nil, err
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{resp.Body, c}
	return resp, nil
}

// observe records an answer and any breach of the contract's rules that
// hold for every answer.
func (e *env) observe(method, path string, r *testserver.Response) {
	e.mu.Lock()
	defer e.mu.Unlock()
	what := method + " " + path
	e.rec.statuses = append(e.rec.statuses, r.Status)
	if r.Status == http.StatusServiceUnavailable && r.Header.Get("Retry-After") == "" {
		e.rec.violations = append(e.rec.violations, fmt.Sprintf("%s: 503 without Retry-After: %s", what, r))
	}
	if r.Status == http.StatusUnauthorized && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
		e.rec.violations = append(e.rec.violations, fmt.Sprintf("%s: 401 without WWW-Authenticate: Bearer: %s", what, r))
	}
	if r.Status >= 400 && method != http.MethodHead && strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") && r.ErrCode() == "" {
		e.rec.violations = append(e.rec.violations, fmt.Sprintf("%s: error answer without an error code: %s", what, r))
	}
}

// clip shortens s for messages.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:n], len(s))
}

// healthy checks that the server serves: /healthz answers 200 (within
// the generous bound: a class may leave connections that only the idle
// timeout closes) and an authorized search finds the baseline.
func (e *env) healthy() error {
	deadline := time.Now().Add(waitBound)
	for {
		if !e.srv.Running() {
			return fmt.Errorf("the server exited: %v", e.srv.ExitErr())
		}
		r, err := e.probe("/healthz")
		if err == nil && r == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/healthz not 200 within %v: status %d, %v", waitBound, r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	res, err := e.reader.Search(ctx, baseIndex, client.SearchRequest{Query: "light", Limit: 3})
	if err != nil {
		return fmt.Errorf("authorized search: %v", err)
	}
	if res.TotalHits == 0 {
		return errors.New("authorized search for \"light\" found nothing")
	}
	return nil
}

// probe GETs an open path on a new connection and returns the status.
func (e *env) probe(path string) (int, error) { return probeOf(e.srv, e.tlsConfig(), path) }

// probeOf GETs an open path of srv on a new connection and returns the
// status.
func probeOf(srv *testserver.Server, cfg *tls.Config, path string) (int, error) {
	tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: waitBound}).Get(srv.URL(path))
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// panicRE finds a panic or a goroutine dump in the server's output.
var panicRE = regexp.MustCompile(`(?i)panic|goroutine \d+ \[|fatal error:`)

// panicSince returns the first line of the server's output after offset
// that shows a panic, or "".
func (e *env) panicSince(offset int) string { return firstPanic(e.srv.Output(), offset) }

// firstPanic returns the first line of out after offset that shows a
// panic, or "".
func firstPanic(out string, offset int) string {
	if offset > len(out) {
		offset = len(out)
	}
	for _, line := range strings.Split(out[offset:], "\n") {
		if panicRE.MatchString(line) {
			return clip(line, 300)
		}
	}
	return ""
}
