package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// bodyDeadline bounds the reading of a request's body by the server's
// read timeout: a client that trickles its body (one byte a second, say)
// gets its connection closed when the time is up, whatever the handler
// does. The deadline is lifted once the body is read to its end, so that
// a long commit or drain that follows is never cut short (http.Server's own
// ReadTimeout would cancel the request's context when it passes, even
// after the body was read). Requests without a body are not touched.
func (s *Server) bodyDeadline(next http.Handler) http.Handler {
	if s.readTimeout <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(s.readTimeout)); err != nil {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, timeout: s.readTimeout}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the connection's read deadline when the body ends, and
// turns a deadline error into errBodyTimeout.
type deadlineBody struct {
	io.ReadCloser
	// rc sets the connection's read deadline.
	rc *http.ResponseController
	// timeout is the read timeout, for the error message.
	timeout time.Duration
	// done is set once the deadline was lifted.
	done bool
}

// errBodyTimeout is the error of a body not read within the read timeout.
var errBodyTimeout = errors.New("the request body did not arrive within the read timeout")

// Read reads and lifts the deadline at the end of the body.
func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return n, &timeoutError{timeout: b.timeout}
	}
	return n, err
}

// timeoutError is a body read past the read timeout.
type timeoutError struct{ timeout time.Duration }

// Error says what happened.
func (e *timeoutError) Error() string {
	return errBodyTimeout.Error() + " (" + e.timeout.String() + ")"
}

// Unwrap makes errors.Is(err, errBodyTimeout) true.
func (e *timeoutError) Unwrap() error { return errBodyTimeout }
