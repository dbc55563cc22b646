package blackbox

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/summadev/summa/internal/pki"
)

// accessFiles are the token and certificate files of a server with access
// control on.
type accessFiles struct {
	dir                     string
	admin, write, read      string
	cert, key               string
	ca                      *pki.CA
	adminTok, writeTok, rdT string
}

// newAccessFiles writes one token per scope and, with tls, a certificate
// for 127.0.0.1 signed by a fresh CA.
func newAccessFiles(t *testing.T, withTLS bool) *accessFiles {
	t.Helper()
	dir := t.TempDir()
	a := &accessFiles{dir: dir, adminTok: "admin-" + randHex(t), writeTok: "write-" + randHex(t), rdT: "read-" + randHex(t)}
	a.admin = writeTokenFile(t, dir, "admin-token", a.adminTok)
	a.write = writeTokenFile(t, dir, "write-token", a.writeTok)
	a.read = writeTokenFile(t, dir, "read-token", a.rdT)
	if withTLS {
		ca, err := pki.NewCA("blackbox-ca", time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		a.ca = ca
		a.cert, a.key = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		a.issue(t, time.Now(), time.Hour)
	}
	return a
}

// issue writes a certificate for 127.0.0.1 valid from now-1m to now+validity.
func (a *accessFiles) issue(t *testing.T, now time.Time, validity time.Duration) {
	t.Helper()
	leaf, err := a.ca.Issue([]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, validity, now)
	if err != nil {
		t.Fatal(err)
	}
	// Key first, then certificate, each by rename: the server must not
	// serve the half-written pair in between.
	writeAtomic(t, a.key, leaf.KeyPEM)
	writeAtomic(t, a.cert, leaf.CertPEM)
}

// args are the server flags of these files.
func (a *accessFiles) args() []string {
	args := []string{"--admin-token-file", a.admin, "--write-token-file", a.write, "--read-token-file", a.read,
		"--access-reload-interval", "100ms"}
	if a.ca != nil {
		args = append(args, "--tls-cert-file", a.cert, "--tls-key-file", a.key)
	}
	return args
}

// httpsClient verifies servers against ca (the system roots when nil).
func httpsClient(ca *pki.CA) *http.Client {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != nil {
		pool := x509.NewCertPool()
		pool.AddCert(ca.Cert)
		cfg.RootCAs = pool
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
}

// call sends one request with a bearer token (none when tok is empty) and
// returns the status and body.
func call(t *testing.T, c *http.Client, method, url, tok, body string) (int, string) {
	t.Helper()
	status, out, err := tryCall(c, method, url, tok, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return status, out
}

// tryCall is call returning transport errors.
func tryCall(c *http.Client, method, url, tok, body string) (int, string, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, "", err
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), nil
}

// waitFor polls cond every 50 ms until it holds or 30 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startAccessServer starts a server with these files and waits for
// /readyz (over HTTPS when a certificate is given).
func startAccessServer(t *testing.T, a *accessFiles, extra ...string) (*Server, string, *http.Client) {
	t.Helper()
	s := spawn(t, t.TempDir(), append(a.args(), extra...)...)
	scheme, c := "http://", &http.Client{Timeout: 10 * time.Second}
	if a.ca != nil {
		scheme, c = "https://", httpsClient(a.ca)
	}
	base := scheme + s.Addr
	waitFor(t, "readyz", func() bool {
		if !s.Running() {
			t.Fatalf("server exited: %s", tail(s.Output(), 30))
		}
		st, _, err := tryCall(c, "GET", base+"/readyz", "", "")
		return err == nil && st == http.StatusOK
	})
	return s, base, c
}

const accessSchema = `{"schema":{"fields":[{"name":"id","type":"text","primary":true},{"name":"body","type":"text","stored":true}]}}`

// TestAccessScopesNest checks each scope against one endpoint of each
// kind: a refused request answers 401 or 403 with the contract's body and
// changes nothing; /healthz, /readyz and /metrics need no token.
func TestAccessScopesNest(t *testing.T) {
	a := newAccessFiles(t, false)
	s, base, c := startAccessServer(t, a)
	if st, body := call(t, c, "PUT", base+"/v1/indexes/books", a.adminTok, accessSchema); st != http.StatusCreated {
		t.Fatalf("create: %d %s", st, body)
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if st, _ := call(t, c, "GET", base+p, "", ""); st != http.StatusOK {
			t.Errorf("%s without a token: %d", p, st)
		}
	}
	type step struct {
		method, path, body string
		need               string
		// found is the status with enough scope when not 2xx.
		found int
	}
	steps := []step{
		{"GET", "/v1/indexes", "", "read", 0},
		{"GET", "/v1/indexes/books", "", "read", 0},
		{"POST", "/v1/indexes/books/search", `{"query":"light"}`, "read", 0},
		{"POST", "/v1/indexes/books/documents", `{"id":"d1","body":"light and colours"}`, "write", 0},
		{"POST", "/v1/indexes/books/commit", "", "write", 0},
		{"DELETE", "/v1/indexes/books/documents/nope", "", "write", 0},
		{"POST", "/v1/indexes/books/merge", "", "admin", 0},
		{"GET", "/v1/admin/lifecycle", "", "admin", 0},
		{"GET", "/v1/admin/drain", "", "admin", 0},
		{"GET", "/v1/admin/doctor-reports/r1", "", "admin", http.StatusNotFound},
		{"PUT", "/v1/indexes/other", accessSchema, "admin", 0},
	}
	rank := map[string]int{"read": 1, "write": 2, "admin": 3}
	tokens := map[string]string{"read": a.rdT, "write": a.writeTok, "admin": a.adminTok}
	for _, st := range steps {
		for _, who := range []string{"", "read", "write", "admin"} {
			status, body := call(t, c, st.method, base+st.path, tokens[who], st.body)
			switch {
			case who == "":
				if status != http.StatusUnauthorized || !strings.Contains(body, `"Unauthorized"`) {
					t.Errorf("%s %s without a token: %d %s", st.method, st.path, status, body)
				}
			case rank[who] < rank[st.need]:
				if status != http.StatusForbidden || !strings.Contains(body, `"Forbidden"`) {
					t.Errorf("%s %s with a %s token: %d %s", st.method, st.path, who, status, body)
				}
			case st.found != 0:
				if status != st.found {
					t.Errorf("%s %s with a %s token: %d %s, want %d", st.method, st.path, who, status, body, st.found)
				}
			default:
				if status >= 300 {
					t.Errorf("%s %s with a %s token: %d %s", st.method, st.path, who, status, body)
				}
			}
		}
	}
	// The refused writes changed nothing: exactly the one document the
	// allowed writes committed, and index "other" exists only once.
	if st, body := call(t, c, "POST", base+"/v1/indexes/books/commit", a.writeTok, ""); st != 200 || !strings.Contains(body, `"documents":1`) {
		t.Errorf("after the scope checks: %d %s", st, body)
	}
	_ = s
}

// TestAccessTokenRotationWithoutRestart rewrites the admin token file: the
// new token works and the removed one stops working, in the same process.
func TestAccessTokenRotationWithoutRestart(t *testing.T) {
	a := newAccessFiles(t, false)
	s, base, c := startAccessServer(t, a)
	pid := s.PID()
	newTok := "rotated-" + randHex(t)
	writeAtomic(t, a.admin, []byte(a.adminTok+"\n"+newTok+"\n"))
	waitFor(t, "the added token works", func() bool {
		st, _ := call(t, c, "GET", base+"/v1/admin/lifecycle", newTok, "")
		return st == http.StatusOK
	})
	if st, _ := call(t, c, "GET", base+"/v1/admin/lifecycle", a.adminTok, ""); st != http.StatusOK {
		t.Errorf("during the overlap the old token answers %d", st)
	}
	writeAtomic(t, a.admin, []byte(newTok+"\n"))
	waitFor(t, "the removed token stops working", func() bool {
		st, _ := call(t, c, "GET", base+"/v1/admin/lifecycle", a.adminTok, "")
		return st == http.StatusUnauthorized
	})
	if st, _ := call(t, c, "GET", base+"/v1/admin/lifecycle", newTok, ""); st != http.StatusOK {
		t.Errorf("the new token answers %d", st)
	}
	if !s.Running() || s.PID() != pid {
		t.Fatal("the server restarted")
	}
	if strings.Contains(s.Output(), a.adminTok) || strings.Contains(s.Output(), newTok) {
		t.Error("a token appears in the server's log")
	}
	_, metrics := call(t, c, "GET", base+"/metrics", "", "")
	if strings.Contains(metrics, newTok) || strings.Contains(metrics, a.adminTok) {
		t.Error("a token appears in /metrics")
	}
}

// TestAccessRefusesNonLoopbackWithoutTokens: no token file and a wildcard
// address is refused with a clear message and exit 2, touching nothing;
// --insecure-no-auth serves.
func TestAccessRefusesNonLoopbackWithoutTokens(t *testing.T) {
	needBinary(t)
	dir := filepath.Join(t.TempDir(), "data")
	out, code := runBinary(t, "--data-dir", dir, "--listen", "0.0.0.0:0")
	if code != exitUsageCode || !strings.Contains(out, "--insecure-no-auth") || !strings.Contains(out, "token") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the refused server created its data directory: %v", err)
	}
	s := spawn(t, t.TempDir(), "--insecure-no-auth")
	waitFor(t, "insecure server ready", func() bool {
		st, _, err := tryCall(http.DefaultClient, "GET", "http://"+s.Addr+"/v1/indexes", "", "")
		return err == nil && st == http.StatusOK
	})
}

// TestAccessTLSOnlyAndCertificateReload: HTTPS only (plain HTTP never gets
// a 2xx), the server's certificate verifies against its CA and not another,
// and a renewed certificate is served without a restart.
func TestAccessTLSOnlyAndCertificateReload(t *testing.T) {
	a := newAccessFiles(t, true)
	s, base, c := startAccessServer(t, a)
	plain := &http.Client{Timeout: 5 * time.Second}
	for _, p := range []string{"/healthz", "/v1/indexes"} {
		if st, body, err := tryCall(plain, "GET", "http://"+s.Addr+p, a.rdT, ""); err == nil && st < 300 {
			t.Errorf("plain HTTP %s answered %d %s", p, st, body)
		}
	}
	other, _ := pki.NewCA("other", time.Hour, time.Now())
	if _, _, err := tryCall(httpsClient(other), "GET", base+"/healthz", "", ""); err == nil {
		t.Error("a client trusting another CA connected")
	}
	serial := func() string {
		conn, err := tls.Dial("tcp", s.Addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	first := serial()
	// An expired certificate is installed: verifying clients refuse it.
	a.issue(t, time.Now().Add(-2*time.Hour), time.Hour)
	waitFor(t, "expired certificate served", func() bool { return serial() != first })
	if _, _, err := tryCall(c, "GET", base+"/healthz", "", ""); err == nil {
		t.Error("a verifying client accepted an expired certificate")
	}
	expired := serial()
	a.issue(t, time.Now(), time.Hour)
	waitFor(t, "renewed certificate served", func() bool { return serial() != expired })
	if st, _ := call(t, c, "GET", base+"/v1/indexes", a.rdT, ""); st != http.StatusOK {
		t.Errorf("after renewal: %d", st)
	}
	if !s.Running() {
		t.Fatal("server exited")
	}
}

// TestAccessIdleConnectionsPastTheCapDoNotStarveProbes: with
// --max-connections 4, four silent connections hold every slot; they are
// closed by the header timeout and a probe gets through.
func TestAccessIdleConnectionsPastTheCapDoNotStarveProbes(t *testing.T) {
	a := newAccessFiles(t, false)
	s, base, _ := startAccessServer(t, a, "--max-connections", "4", "--read-header-timeout", "1s", "--idle-timeout", "1s")
	var conns []net.Conn
	for i := 0; i < 8; i++ {
		conn, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n") // headers never finished
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	st, _, err := tryCall(c, "GET", base+"/healthz", "", "")
	t.Logf("probe answered after %v", time.Since(start))
	if err != nil || st != http.StatusOK {
		t.Fatalf("probe behind silent connections: %d %v", st, err)
	}
	// The probe got a slot only because the server closed silent
	// connections that held the cap: at least the first four are closed.
	closed := 0
	for _, conn := range conns {
		_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		var b [1]byte
		if _, err := conn.Read(b[:]); err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			closed++
		}
	}
	if closed < 4 {
		t.Errorf("only %d of 8 silent connections were closed by the time the probe was served: the cap of 4 was not held", closed)
	}
	if !s.Running() {
		t.Fatal("server exited")
	}
}

// exitUsageCode is summa-server's exit code for a refused command line.
const exitUsageCode = 2

// runBinary runs summa-server with args to its end (at most a minute) and
// returns its combined output and exit code.
func runBinary(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run summa-server: %v", err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// randHex is 16 random bytes in hex: a token's body.
func randHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// writeTokenFile writes one token into dir/name.
func writeTokenFile(t *testing.T, dir, name, tok string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	writeAtomic(t, p, []byte(tok+"\n"))
	return p
}

// writeAtomic replaces path with data by rename, as the kubelet updates a
// mounted Secret.
func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
