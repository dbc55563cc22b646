package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// TestPanicBecomesInternal checks that a panicking handler answers 500
// Internal without leaking the panic value, and counts in the metrics.
func TestPanicBecomesInternal(t *testing.T) {
	s := &Server{limits: Limits{}.withDefaults(), metrics: newMetrics(nil, nil, nil)}
	s.log = discard()
	h := s.instrument(s.recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("secret panic value")
	})))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/boom", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"code":"Internal"`) || strings.Contains(rec.Body.String(), "secret") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// TestRetryAfterOnEvery503 checks that a 503 without an explicit pause
// still carries Retry-After.
func TestRetryAfterOnEvery503(t *testing.T) {
	rec := httptest.NewRecorder()
	writeError(rec, newError(http.StatusServiceUnavailable, CodeShuttingDown, "x"))
	if rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q", rec.Header().Get("Retry-After"))
	}
	rec = httptest.NewRecorder()
	StartingHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != 503 || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("starting readyz: %d %v", rec.Code, rec.Header())
	}
	rec = httptest.NewRecorder()
	StartingHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 {
		t.Fatalf("starting healthz: %d", rec.Code)
	}
}

func discard() logr.Logger { return logr.Discard() }
