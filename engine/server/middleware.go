package server

import (
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"
)

// recorder captures the status and size of an answer for logs and
// metrics, and whether the header went out (a panic after that cannot be
// answered any more).
type recorder struct {
	http.ResponseWriter
	// status is the answered status (0 until WriteHeader).
	status int
	// bytes counts body bytes written.
	bytes int64
	// errCode is the API error code answered, if any.
	errCode string
	// err is a server fault worth an error log.
	err error
	// writeTimeout bounds the sending of the answer, from its first byte
	// (0: no bound).
	writeTimeout time.Duration
}

// startAnswer sets the write deadline when the answer starts: a client
// that never reads its answer (its TCP window full) has its connection
// closed then, rather than holding one of --max-connections for ever. The
// deadline is set only now, so that a long commit or merge before the
// answer is never cut.
func (rec *recorder) startAnswer() {
	if rec.writeTimeout > 0 {
		_ = http.NewResponseController(rec.ResponseWriter).SetWriteDeadline(time.Now().Add(rec.writeTimeout))
	}
}

// WriteHeader records the status.
func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
		rec.startAnswer()
	}
	rec.ResponseWriter.WriteHeader(status)
}

// Write records the size.
func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
		rec.startAnswer()
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.bytes += int64(n)
	return n, err
}

// ReadFrom sends src through the underlying writer's ReadFrom, so that
// net/http can hand a file to sendfile on a plain TCP connection (a TLS
// connection copies it through a buffer), and records the size like
// Write. Without it a file would always be copied through user space.
func (rec *recorder) ReadFrom(src io.Reader) (int64, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
		rec.startAnswer()
	}
	var n int64
	var err error
	if rf, ok := rec.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(writerOnly{rec.ResponseWriter}, src)
	}
	rec.bytes += n
	return n, err
}

// writerOnly hides every method of a writer but Write (io.Copy would
// call ReadFrom again).
type writerOnly struct{ io.Writer }

// Unwrap lets http.ResponseController reach the underlying writer.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// Flush forwards to the underlying writer when it can flush.
func (rec *recorder) Flush() {
	if f, ok := rec.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// probes are logged at V(1): they arrive every few seconds.
var probes = map[string]bool{"GET /healthz": true, "GET /readyz": true, "GET /metrics": true}

// instrument logs every request once it is answered and counts it by
// route and status.
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w, writeTimeout: s.writeTimeout}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		elapsed := time.Since(start)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		s.metrics.observeRequest(route, strconv.Itoa(rec.status), elapsed)
		kv := []any{"method", r.Method, "path", r.URL.Path, "route", route, "status", rec.status,
			"bytes", rec.bytes, "durationMs", float64(elapsed.Microseconds()) / 1000, "remote", r.RemoteAddr}
		if rec.errCode != "" {
			kv = append(kv, "code", rec.errCode)
		}
		switch {
		case rec.err != nil:
			s.log.Error(rec.err, "Request failed", kv...)
		case probes[route]:
			s.log.V(1).Info("Request served", kv...)
		default:
			s.log.Info("Request served", kv...)
		}
	})
}

// recoverPanics turns a handler panic into 500 Internal with a generic
// message: the panic value and stack go to the log, never to the client.
// http.ErrAbortHandler keeps its meaning (abort the connection).
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			err := fmt.Errorf("server: panic serving %s %s: %v\n%s", r.Method, r.URL.Path, v, debug.Stack())
			rec, ok := w.(*recorder)
			if !ok || rec.status != 0 {
				s.log.Error(err, "Handler panicked")
			}
			if ok && rec.status != 0 {
				// The answer is already on its way; cut the connection so
				// the client sees a failure rather than a truncated success.
				panic(http.ErrAbortHandler)
			}
			if ok {
				rec.err = err
			}
			e := writeError(w, newError(http.StatusInternalServerError, CodeInternal, "internal error; see the server log"))
			if ok {
				rec.errCode = e.code
			}
		}()
		next.ServeHTTP(w, r)
	})
}
