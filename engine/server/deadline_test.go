package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
)

// deadlineServer serves h behind bodyDeadline with the given read timeout.
func deadlineServer(t *testing.T, timeout time.Duration, h handlerFunc) *httptest.Server {
	s := &Server{readTimeout: timeout, log: testr.New(t), metrics: newMetrics(nil, nil, nil)}
	ts := httptest.NewServer(s.bodyDeadline(s.adapt(h)))
	t.Cleanup(ts.Close)
	return ts
}

func TestReadTimeoutCutsATricklingBody(t *testing.T) {
	ts := deadlineServer(t, 300*time.Millisecond, func(w http.ResponseWriter, r *http.Request) error {
		if _, err := io.ReadAll(r.Body); err != nil {
			return bodyReadError(err)
		}
		writeJSON(w, http.StatusOK, map[string]string{"read": "all"})
		return nil
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
	// Trickle a byte at a time, as a slow client would, until the server
	// answers (or the test's own bound passes).
	answered := make(chan *http.Response, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			answered <- resp
		}
		close(answered)
	}()
	var resp *http.Response
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	bound := time.After(30 * time.Second)
loop:
	for {
		select {
		case resp = <-answered:
			break loop
		case <-tick.C:
			_, _ = conn.Write([]byte(" "))
		case <-bound:
			t.Fatal("a trickling body held the connection for 30 s")
		}
	}
	if resp == nil {
		t.Fatal("connection closed without an answer")
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), CodeRequestTimeout) {
		t.Fatalf("got %d %s; want 408 RequestTimeout", resp.StatusCode, body)
	}
}

func TestReadTimeoutDoesNotCutAHandlerOnceTheBodyIsIn(t *testing.T) {
	timeout := 200 * time.Millisecond
	ts := deadlineServer(t, timeout, func(w http.ResponseWriter, r *http.Request) error {
		if _, err := io.ReadAll(r.Body); err != nil {
			return bodyReadError(err)
		}
		// A long commit after the body: the request's context must live.
		select {
		case <-time.After(4 * timeout):
		case <-r.Context().Done():
			return fmt.Errorf("request context cancelled after the body was read: %w", r.Context().Err())
		}
		writeJSON(w, http.StatusOK, map[string]string{"ok": "yes"})
		return nil
	})
	for _, body := range []string{`{"a":1}`, ""} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/x", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("body %q: got %d %s", body, resp.StatusCode, b)
		}
	}
}
