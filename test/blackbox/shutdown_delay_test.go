package blackbox

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMShutdownDelayKeepsServing sends SIGTERM to a server started
// with --shutdown-delay and requires, during the delay, /readyz 503 while
// searches are still answered, each with "Connection: close" (so that a
// client's kept-alive connection ends after an answer and is never closed
// under a request), then a clean exit no sooner than the delay.
func TestSIGTERMShutdownDelayKeepsServing(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	const index, delay = "linger", 3 * time.Second
	s := startServer(t, t.TempDir(), "--shutdown-delay", delay.String())
	s.CreateIndex(index, testSchema)
	s.Ingest(index, makeDocs(ps, "c", 0, 50))
	s.Commit(index)
	// A kept-alive connection before the signal.
	if res := s.Search(index, "+id:"+pk("c", 1), 10); res.TotalHits != 1 {
		t.Fatalf("before SIGTERM: %d hits", res.TotalHits)
	}
	start := time.Now()
	if err := syscall.Kill(s.PID(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	hc := s.HTTPClient()
	sawUnready := false
	answered := 0
	for time.Since(start) < delay-time.Second {
		resp, err := hc.Get(s.URL("/readyz"))
		if err != nil {
			t.Fatalf("%v after SIGTERM: /readyz: %v (the server must keep answering during --shutdown-delay)", time.Since(start), err)
		}
		_ = resp.Body.Close()
		sawUnready = sawUnready || resp.StatusCode == http.StatusServiceUnavailable
		body := `{"query":"+id:` + pk("c", 2) + `","limit":10}`
		resp, err = hc.Post(s.URL("/v1/indexes/"+index+"/search"), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("%v after SIGTERM: search: %v (the server must keep answering during --shutdown-delay)", time.Since(start), err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%v after SIGTERM: search answered %s", time.Since(start), resp.Status)
		}
		// The signal is handled asynchronously: a search sent right after
		// it may be answered before the server knows. Once /readyz says
		// 503, every answer closes its connection.
		if sawUnready && !resp.Close {
			t.Errorf("search during the shutdown delay: the answer keeps the connection open (want Connection: close)")
		}
		answered++
		time.Sleep(100 * time.Millisecond)
	}
	if !sawUnready {
		t.Error("/readyz never answered 503 after SIGTERM")
	}
	// Not s.Term: a second signal exits at once.
	select {
	case <-s.Done():
	case <-time.After(shutdownDeadline + 5*time.Second):
		t.Fatalf("no exit within %v of SIGTERM", shutdownDeadline+5*time.Second)
	}
	code, took := s.ExitCode(), time.Since(start)
	t.Logf("SIGTERM with --shutdown-delay %v: %d searches answered while unready; exit %d after %v", delay, answered, code, took)
	if code != 0 {
		t.Errorf("exit code %d, want 0\n%s", code, tail(s.Output(), 30))
	}
	if took < delay {
		t.Errorf("exited after %v, before the %v shutdown delay", took, delay)
	}
}
