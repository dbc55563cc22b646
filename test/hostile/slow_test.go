package hostile

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/internal/testing/testserver"
)

// slowClasses are slow, endless and idle clients and concurrent clients
// that race drain, resume and deletion against ingestion. The contract:
// slow or endless clients cannot hold the server (the header and read
// timeouts end them, 408 or a closed connection), connections past the cap
// wait or are refused and idle ones are closed so that probes get through,
// and no accepted and committed document is lost.
func slowClasses() []class {
	const docHead = "POST /v1/indexes/base/documents HTTP/1.1\r\nHost: hostile\r\nAuthorization: Bearer %s\r\n" +
		"Content-Type: application/x-ndjson\r\n"
	endedBy := func(statuses ...int) func(int) bool {
		return func(s int) bool {
			for _, x := range statuses {
				if s == x {
					return true
				}
			}
			return false
		}
	}
	closedOr408 := endedBy(0, http.StatusRequestTimeout)
	return []class{
		{name: "slow: headers trickled a byte at a time", run: func(e *env) error {
			return e.slowClient(slowSpec{head: "POST /v1/indexes/base/search HTTP/1.1\r\nHost: hostile\r\n",
				drip: "X-Slow: a\r\n", every: 150 * time.Millisecond, ok: closedOr408})
		}},
		{name: "slow: request line trickled", run: func(e *env) error {
			return e.slowClient(slowSpec{head: "G", drip: "E", every: 150 * time.Millisecond, ok: endedBy(0, 400, 408)})
		}},
		{name: "slow: body trickled a byte at a time", run: func(e *env) error {
			e.doc("")
			return e.slowClient(slowSpec{head: fmt.Sprintf(docHead+"Content-Length: 100000\r\n\r\n", e.tok[asWrite]) +
				`{"id":"evil","tag":"base","title":"`, drip: "a", every: 150 * time.Millisecond, ok: closedOr408})
		}},
		{name: "slow: chunked body trickled a chunk at a time", run: func(e *env) error {
			start := `{"id":"evil","tag":"base","title":"`
			e.doc("")
			return e.slowClient(slowSpec{head: fmt.Sprintf(docHead+"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n",
				e.tok[asWrite], len(start), start), drip: "1\r\na\r\n", every: 150 * time.Millisecond, ok: closedOr408})
		}},
		{name: "slow: body shorter than its Content-Length", run: func(e *env) error {
			e.doc("")
			return e.slowClient(slowSpec{head: fmt.Sprintf(docHead+"Content-Length: 1000\r\n\r\n", e.tok[asWrite]) +
				`{"id":"evil","tag":"base"}`, ok: closedOr408})
		}},
		{name: "slow: endless fast body", run: func(e *env) error {
			line := string(e.docKey("evil-0", `"body":"`+strings.Repeat("light ", 500)+`"`))
			return e.slowClient(slowSpec{head: fmt.Sprintf(docHead+"Transfer-Encoding: chunked\r\n\r\n", e.tok[asWrite]),
				drip: fmt.Sprintf("%x\r\n%s\r\n", len(line)*20, strings.Repeat(line, 20)), ok: endedBy(0, 408, 413)})
		}},
		{name: "slow: endless header lines", run: func(e *env) error {
			return e.slowClient(slowSpec{head: "GET /healthz HTTP/1.1\r\nHost: hostile\r\n",
				drip: "X-Pad: " + strings.Repeat("p", 1000) + "\r\n", ok: endedBy(0, 400, 408, 431)})
		}},
		{name: "slow: Content-Length of 10 GiB", run: func(e *env) error {
			e.doc("")
			return e.slowClient(slowSpec{head: fmt.Sprintf(docHead+"Content-Length: 10737418240\r\n\r\n", e.tok[asWrite]) +
				`{"id":"evil","tag":"base"}`, ok: endedBy(0, 408, 413)})
		}},
		{name: "slow: 40 trickling clients at once", run: func(e *env) error { return manySlow(e, 40) }},
		{name: "slow: 48 silent TCP connections past --max-connections", run: func(e *env) error {
			return floodIdle(e, 48, false)
		}},
		{name: "slow: 48 idle keep-alive TLS connections past --max-connections", run: func(e *env) error {
			return floodIdle(e, 48, true)
		}},
		{name: "slow: clients that never read their answers", run: slowReaders},
		{name: "drain: ingestion while draining is 503 Draining with Retry-After", run: drainRefusesWrites},
		{name: "concurrency: drain, resume and commits against ingestion", run: drainRace},
		{name: "concurrency: deletion of an index under ingestion", run: deleteRace},
	}
}

// slowSpec is one raw client: head is sent at once, then drip every
// interval (as fast as possible when every is 0, never when drip is
// empty) until the server ends the exchange; ok judges the status of
// its answer (0 when it closed without one).
type slowSpec struct {
	head, drip string
	every      time.Duration
	ok         func(status int) bool
}

// slowClient runs one slow client on a verified TLS connection. While it
// holds its connection, a probe and an authorized search must succeed;
// the server must end the exchange within the generous bound, with an
// answer ok accepts.
func (e *env) slowClient(s slowSpec) error {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: waitBound}, "tcp", e.srv.Addr, e.tlsConfig())
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitBound))
	if _, err := io.WriteString(c, s.head); err != nil {
		return fmt.Errorf("write the head: %v", err)
	}
	done := make(chan int, 1)
	go func() { done <- readStatus(c) }()
	healthErr := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // the client is well under way
		healthErr <- e.healthy()
	}()
	for {
		var wait <-chan time.Time
		if s.drip != "" {
			wait = time.After(s.every)
		}
		select {
		case status := <-done:
			e.note("the server ended the slow client's exchange with status %d (0: closed without an answer)", status)
			if err := <-healthErr; err != nil {
				return fmt.Errorf("while a slow client held a connection: %v", err)
			}
			if !s.ok(status) {
				return fmt.Errorf("the slow client's exchange ended with status %d", status)
			}
			return nil
		case <-wait:
			if _, err := io.WriteString(c, s.drip); err != nil {
				wait = nil // closed for writing; the answer or EOF follows
				s.drip = ""
			}
		case <-time.After(waitBound):
			return fmt.Errorf("the server held a slow client for more than %v", waitBound)
		}
	}
}

// readStatus reads an answer's status line and the rest until the
// connection closes; 0 when it closed without an answer.
func readStatus(c net.Conn) int {
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	status := 0
	if err == nil {
		fmt.Sscanf(line, "HTTP/1.1 %d", &status)
	}
	io.Copy(io.Discard, br)
	return status
}

// manySlow runs n header-trickling clients at once; the server must end
// them all and keep serving.
func manySlow(e *env, n int) error {
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			errs <- e.slowClient(slowSpec{head: "GET /v1/indexes HTTP/1.1\r\nHost: hostile\r\n", drip: "X",
				every: 200 * time.Millisecond, ok: func(s int) bool { return s == 0 || s == 400 || s == 408 }})
		}()
	}
	var first error
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// floodIdle opens n connections, more than --max-connections, that then
// sit idle: silent TCP connections that never start a handshake, or TLS
// connections kept alive after one request. Probes must get through while
// they hold every slot: the server closes idle connections.
func floodIdle(e *env, n int, keepAlive bool) error {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", e.srv.Addr, waitBound)
		if err != nil {
			return fmt.Errorf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	if !keepAlive {
		return e.healthy()
	}
	served := make(chan bool, n)
	for _, c := range conns {
		go func(c net.Conn) {
			tc := tls.Client(c, e.tlsConfig())
			tc.SetDeadline(time.Now().Add(waitBound))
			ok := false
			if _, err := io.WriteString(tc, "GET /healthz HTTP/1.1\r\nHost: hostile\r\n\r\n"); err == nil {
				if resp, err := http.ReadResponse(bufio.NewReader(tc), nil); err == nil {
					io.Copy(io.Discard, resp.Body)
					ok = resp.Body.Close() == nil
				}
			}
			served <- ok // and the connection stays open, idle
		}(c)
	}
	for k := 0; k < maxConnections; k++ {
		select {
		case <-served:
		case <-time.After(waitBound):
			return fmt.Errorf("only %d of %d kept-alive connections were served within %v", k, n, waitBound)
		}
	}
	// Every slot is now held by an idle connection and more wait behind.
	return e.healthy()
}

// slowReaders starts a sibling server capped at 4 connections and fills
// every slot with clients that ask for an answer of megabytes and never
// read it. A client that does not read is a slow client too: probes and
// an authorized search must still get through.
func slowReaders(e *env) error {
	dir := filepath.Join(e.sub.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sib := testserver.Start(e.sub, binPath, dir, testserver.Options{CACert: e.caPEM}, append(append([]string{}, e.accessArgs...),
		"--max-connections", "4", "--read-header-timeout", "1s", "--read-timeout", "2s", "--write-timeout", "2s", "--idle-timeout", "2s",
		"--optimizer-threads", "0")...)
	defer sib.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if _, err := e.clientOf(sib, asAdmin).CreateIndex(ctx, "bulky",
		json.RawMessage(`{"fields":[{"name":"id","type":"keyword","primary":true},{"name":"body","type":"text"}]}`)); err != nil {
		return err
	}
	w := e.clientOf(sib, asWrite)
	text := strings.Repeat("light ", 10000)
	for b := 0; b < 5; b++ {
		var body bytes.Buffer
		for i := 0; i < 30; i++ {
			fmt.Fprintf(&body, `{"id":"d%d-%d","body":%q}`+"\n", b, i, text)
		}
		if _, err := w.AddNDJSON(ctx, "bulky", &body); err != nil {
			return err
		}
	}
	if _, err := w.Commit(ctx, "bulky"); err != nil {
		return err
	}
	q := `{"query":"light","limit":150}`
	for i := 0; i < 6; i++ {
		c, err := net.DialTimeout("tcp", sib.Addr, waitBound)
		if err != nil {
			return err
		}
		defer c.Close()
		c.(*net.TCPConn).SetReadBuffer(4096)
		go func() {
			tc := tls.Client(c, e.tlsConfig())
			tc.SetDeadline(time.Now().Add(waitBound))
			fmt.Fprintf(tc, "POST /v1/indexes/bulky/search HTTP/1.1\r\nHost: hostile\r\nAuthorization: Bearer %s\r\n"+
				"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", e.tok[asRead], len(q), q)
			// ... and never read the answer of about 9 MB.
		}()
	}
	time.Sleep(time.Second) // let the non-readers take their slots; no assertion hangs on it
	status, err := probeOf(sib, e.tlsConfig(), "/healthz")
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("4 clients that never read their answers hold a server capped at 4 connections: "+
			"GET /healthz got status %d, %v (within %v)", status, err, waitBound)
	}
	if _, err := e.clientOf(sib, asRead).Search(ctx, "bulky", client.SearchRequest{Query: "light", Limit: 1}); err != nil {
		return fmt.Errorf("while clients do not read their answers: authorized search: %v", err)
	}
	if line := firstPanic(sib.Output(), 0); line != "" {
		return fmt.Errorf("panic in the sibling server's log: %s", line)
	}
	return nil
}

// drainRefusesWrites drains, checks that ingestion and commits are
// refused with 503 Draining and Retry-After (or commits nothing new),
// then resumes.
func drainRefusesWrites(e *env) error {
	steps := []struct {
		r    request
		want []answer
	}{
		{request{method: http.MethodPost, path: "/v1/admin/drain"}, []answer{{202, ""}}},
		{request{method: http.MethodPost, path: indexPath(baseIndex, "documents"), body: e.doc(`"title":"while draining"`), as: asWrite},
			[]answer{{503, "Draining"}}},
		{request{method: http.MethodDelete, path: indexPath(baseIndex, "documents/doc-003"), as: asWrite}, []answer{{503, "Draining"}}},
		{request{method: http.MethodPost, path: "/v1/admin/resume"}, okay},
	}
	for _, s := range steps {
		r, err := e.send(s.r)
		if err != nil {
			return err
		}
		if !matches(r, s.want) {
			return fmt.Errorf("%s %s: got %s, want %s", s.r.method, s.r.path, r, describe(s.want))
		}
	}
	return notDraining(e)
}
