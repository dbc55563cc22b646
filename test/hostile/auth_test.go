package hostile

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/summadev/summa/internal/pki"
)

// authed is a class of one request with explicit Authorization values.
func authed(name, method, path, body string, auth []string, want []answer) class {
	r := request{method: method, path: path, auth: auth}
	if body != "" {
		r.body = []byte(body)
	}
	return class{name: name, want: want, req: get(r)}
}

// scoped is a class of one request with the token of scope as; it must be
// refused with want, and then must hold afterwards.
func scoped(name, method, path, body string, as scope, want []answer, then func(*env) error) class {
	return class{name: name, want: want, then: then, req: func(e *env) request {
		r := request{method: method, path: path, as: as}
		if body == "evil" {
			r.body = e.doc(`"title":"refused"`)
		} else if body != "" {
			r.body = []byte(body)
		}
		return r
	}}
}

// authClasses are missing, unknown and malformed credentials, tokens of
// too low a scope and cross-origin browser requests. The contract: no or
// an unknown token, or any other form than "Bearer TOKEN", is 401
// Unauthorized with WWW-Authenticate: Bearer; a known token of too low a
// scope is 403 Forbidden; neither changes anything.
func authClasses() []class {
	search := indexPath(baseIndex, "search")
	docs := indexPath(baseIndex, "documents")
	q := `{"query":"light"}`
	tokenOf := func(s scope, f func(tok string) []string) func(e *env) request {
		return func(e *env) request {
			return request{method: http.MethodPost, path: search, body: []byte(q), auth: f(e.tok[s])}
		}
	}
	basic := func(tok string) []string {
		return []string{"Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+tok))}
	}
	return []class{
		authed("auth: no Authorization header", "POST", search, q, []string{}, noAuth),
		authed("auth: unknown token", "POST", search, q, []string{"Bearer unknown-0123456789abcdef"}, noAuth),
		authed("auth: empty Bearer", "POST", search, q, []string{"Bearer "}, noAuth),
		authed("auth: Bearer without a space", "POST", search, q, []string{"Bearer"}, noAuth),
		authed("auth: empty header", "POST", search, q, []string{""}, noAuth),
		{name: "auth: Basic scheme with the admin token", want: noAuth, req: tokenOf(asAdmin, basic)},
		{name: "auth: admin token without Bearer", want: noAuth, req: tokenOf(asAdmin, func(t string) []string { return []string{t} })},
		{name: "auth: two Authorization headers", want: noAuth,
			req: tokenOf(asRead, func(t string) []string { return []string{"Bearer " + t, "Bearer " + t} })},
		{name: "auth: read token plus an appended admin token", want: noAuth,
			req: func(e *env) request {
				return request{method: http.MethodPost, path: "/v1/admin/drain", auth: []string{"Bearer " + e.tok[asRead] + "," + e.tok[asAdmin]}}
			}, then: notDraining},
		{name: "auth: token with a space inside", want: noAuth,
			req: tokenOf(asAdmin, func(t string) []string { return []string{"Bearer " + t + " " + t} })},
		{name: "auth: token with a tab inside", want: noAuth,
			req: tokenOf(asAdmin, func(t string) []string { return []string{"Bearer " + t + "\t" + t} })},
		{name: "auth: prefix of the admin token", want: noAuth,
			req: tokenOf(asAdmin, func(t string) []string { return []string{"Bearer " + t[:len(t)-1]} })},
		{name: "auth: admin token with a trailing =", want: noAuth,
			req: tokenOf(asAdmin, func(t string) []string { return []string{"Bearer " + t + "="} })},
		{name: "auth: token in the query string", want: noAuth, req: func(e *env) request {
			return request{method: http.MethodPost, path: search + "?access_token=" + e.tok[asAdmin], body: []byte(q), auth: []string{}}
		}},
		authed("auth: Authorization of 100 KiB", "POST", search, q, []string{"Bearer " + strings.Repeat("a", 100<<10)},
			either(noAuth, []answer{{431, ""}})),
		{name: "auth: no token on ingestion", want: noAuth, req: func(e *env) request {
			return request{method: http.MethodPost, path: docs, body: e.doc(""), auth: []string{}}
		}},
		authed("auth: unknown token deleting the baseline", "DELETE", indexPath(baseIndex, ""), "",
			[]string{"Bearer deadbeefdeadbeef"}, noAuth),
		{name: "auth: no token on drain", want: noAuth, then: notDraining,
			req: get(request{method: http.MethodPost, path: "/v1/admin/drain", auth: []string{}})},
		authed("auth: no token on the index list", "GET", "/v1/indexes", "", []string{}, noAuth),
		authed("auth: no token on an unknown route", "GET", "/v1/secret", "", []string{}, noAuth),
		// Scopes: read ⊂ write ⊂ admin.
		scoped("scope: read token ingests", "POST", docs, "evil", asRead, forbidden, nil),
		scoped("scope: read token deletes a document", "DELETE", indexPath(baseIndex, "documents/doc-001"), "", asRead, forbidden, nil),
		scoped("scope: read token commits", "POST", indexPath(baseIndex, "commit"), "", asRead, forbidden, nil),
		scoped("scope: read token creates an index", "PUT", indexPath("hx-by-read", ""), validSchema, asRead, forbidden, notFound("hx-by-read")),
		scoped("scope: read token deletes the baseline", "DELETE", indexPath(baseIndex, ""), "", asRead, forbidden, nil),
		scoped("scope: read token merges", "POST", indexPath(baseIndex, "merge"), `{"maxSegments":1}`, asRead, forbidden, nil),
		scoped("scope: read token drains", "POST", "/v1/admin/drain", "", asRead, forbidden, notDraining),
		scoped("scope: write token creates an index", "PUT", indexPath("hx-by-write", ""), validSchema, asWrite, forbidden, notFound("hx-by-write")),
		scoped("scope: write token deletes the baseline", "DELETE", indexPath(baseIndex, ""), "", asWrite, forbidden, nil),
		scoped("scope: write token merges", "POST", indexPath(baseIndex, "merge"), "", asWrite, forbidden, nil),
		scoped("scope: write token reorders", "POST", indexPath(baseIndex, "reorder"), "", asWrite, forbidden, nil),
		scoped("scope: write token compacts", "POST", indexPath(baseIndex, "compact"), "", asWrite, forbidden, nil),
		scoped("scope: write token drains", "POST", "/v1/admin/drain", "", asWrite, forbidden, notDraining),
		scoped("scope: write token resumes", "POST", "/v1/admin/resume", "", asWrite, forbidden, nil),
		scoped("scope: write token reads the lifecycle", "GET", "/v1/admin/lifecycle", "", asWrite, forbidden, nil),
		scoped("scope: read token with a wrong method on documents", "PUT", docs, "evil", asRead, forbidden, nil),
		// Cross-origin browser requests.
		{name: "origin: cross-origin text/plain POST of documents", want: forbidden, req: func(e *env) request {
			return request{method: http.MethodPost, path: docs, body: e.doc(""), as: asWrite,
				header: map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}}
		}},
		{name: "origin: cross-site drain without a token", want: forbidden, then: notDraining,
			req: get(request{method: http.MethodPost, path: "/v1/admin/drain", auth: []string{},
				header: map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}})},
		{name: "origin: cross-origin deletion of the baseline with the admin token", want: forbidden,
			req: get(request{method: http.MethodDelete, path: indexPath(baseIndex, ""),
				header: map[string]string{"Origin": "http://evil.example"}})},
		{name: "origin: null origin commit", want: forbidden, req: get(request{method: http.MethodPost,
			path: indexPath(baseIndex, "commit"), as: asWrite, header: map[string]string{"Origin": "null"}})},
	}
}

// tlsClasses are mistakes at the TLS layer: plain HTTP to the TLS port,
// an untrusted or outdated client, garbage instead of a handshake, and an
// expired server certificate replaced without a restart.
func tlsClasses() []class {
	return []class{
		{name: "tls: plain HTTP drain with the admin token", run: func(e *env) error {
			return plainHTTP(e, "POST /v1/admin/drain HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: 0\r\n\r\n")
		}},
		{name: "tls: plain HTTP index list with the admin token", run: func(e *env) error {
			return plainHTTP(e, "GET /v1/indexes HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n")
		}},
		{name: "tls: client trusting another CA", run: otherCA},
		{name: "tls: client offering at most TLS 1.1", run: func(e *env) error {
			cfg := e.tlsConfig()
			cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
			if _, err := dialTLS(e, cfg); err == nil {
				return errors.New("a TLS 1.1 handshake succeeded; the server's minimum is TLS 1.2")
			}
			return nil
		}},
		{name: "tls: garbage instead of a handshake", run: func(e *env) error {
			c, err := net.DialTimeout("tcp", e.srv.Addr, waitBound)
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(waitBound))
			if _, err := c.Write([]byte(strings.Repeat("\x16\x03\x01\xff\xff garbage ", 400))); err != nil {
				return nil // closed already
			}
			buf := make([]byte, 4096)
			for {
				if _, err := c.Read(buf); err != nil {
					return nil // the server closed the connection
				}
			}
		}},
		{name: "tls: expired certificate refused, a fresh one served without restart", run: expiredCert},
	}
}

// plainHTTP sends a plain-text request (format with the address and the
// admin token) to the TLS port: the answer, if any, is never a 2xx.
func plainHTTP(e *env, format string) error {
	c, err := net.DialTimeout("tcp", e.srv.Addr, waitBound)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitBound))
	fmt.Fprintf(c, format, e.srv.Addr, e.tok[asAdmin])
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return notDraining(e) // closed without an answer
	}
	f := strings.Fields(line)
	if len(f) >= 2 && strings.HasPrefix(f[1], "2") {
		return fmt.Errorf("plain HTTP to the TLS port answered %q", strings.TrimSpace(line))
	}
	return notDraining(e)
}

// otherCA talks to the server with a client that trusts only another CA:
// the handshake must fail on the certificate.
func otherCA(e *env) error {
	ca, err := pki.NewCA("not-the-servers-ca", time.Hour, time.Now())
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	_, err = dialTLS(e, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		return fmt.Errorf("a client trusting another CA: handshake error %v, want an unknown-authority error", err)
	}
	return nil
}

// dialTLS makes one verified TLS handshake and returns the server's leaf
// certificate.
func dialTLS(e *env, cfg *tls.Config) (*x509.Certificate, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: waitBound}, "tcp", e.srv.Addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0], nil
}

// expiredCert installs an expired certificate, waits until a verifying
// client refuses the server for it, then installs a fresh one and waits
// until the same client is served again, without a restart.
func expiredCert(e *env) error {
	if err := e.installCert(time.Now().Add(-3*time.Hour), time.Hour); err != nil {
		return err
	}
	var last error
	expired := waitUntil(func() bool {
		_, last = dialTLS(e, e.tlsConfig())
		var inv x509.CertificateInvalidError
		return errors.As(last, &inv) && inv.Reason == x509.Expired
	})
	fresh := time.Now()
	if err := e.installCert(fresh, 24*time.Hour); err != nil {
		return err
	}
	var leaf *x509.Certificate
	renewed := waitUntil(func() bool {
		leaf, last = dialTLS(e, e.tlsConfig())
		return last == nil && leaf.NotAfter.After(fresh)
	})
	switch {
	case !expired:
		return fmt.Errorf("no verifying client refused the expired certificate within %v (last handshake: %v)", waitBound, last)
	case !renewed:
		return fmt.Errorf("the fresh certificate was not served within %v (last handshake: %v)", waitBound, last)
	}
	if status, err := e.probe("/healthz"); err != nil || status != http.StatusOK {
		return fmt.Errorf("a new verified connection after the renewal: status %d, %v", status, err)
	}
	return nil
}

// waitUntil polls cond until it holds or the generous bound passes.
func waitUntil(cond func() bool) bool {
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}
