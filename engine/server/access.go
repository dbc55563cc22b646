package server

import (
	"errors"
	"net/http"

	"github.com/summadev/summa/engine/auth"
)

// Error codes of access control (engine contract, "Access control").
const (
	// CodeUnauthorized (401): no token, an unknown token, or another form
	// of Authorization than "Bearer TOKEN".
	CodeUnauthorized = "Unauthorized"
	// CodeForbidden (403): a known token of too low a scope, or a
	// cross-origin browser request.
	CodeForbidden = "Forbidden"
	// CodeRequestTimeout (408): the body did not arrive within the read
	// timeout; the connection is closed and nothing was applied.
	CodeRequestTimeout = "RequestTimeout"
)

// openScope marks the routes that need no token: the probes and metrics.
const openScope = auth.ScopeNone

// authorize wraps h so that it runs only for a request whose bearer token
// has at least scope need. Without token files (a loopback-only server)
// every request passes. A refused request is answered before its body is
// read and changes nothing.
func (s *Server) authorize(need auth.Scope, h handlerFunc) handlerFunc {
	if need == openScope || !s.tokens.Enabled() {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		got, err := s.tokens.Authenticate(r.Header.Values("Authorization"))
		if err != nil {
			s.metrics.AuthFailures.WithLabelValues(authFailureReason(err)).Inc()
			w.Header().Set("WWW-Authenticate", "Bearer")
			// The body will not be read: close rather than drain it.
			w.Header().Set("Connection", "close")
			return newError(http.StatusUnauthorized, CodeUnauthorized, "%v", err)
		}
		if !got.Allows(need) {
			s.metrics.AuthFailures.WithLabelValues("scope").Inc()
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+need.String()+`"`)
			w.Header().Set("Connection", "close")
			return newError(http.StatusForbidden, CodeForbidden,
				"this token has the %s scope; %s %s needs %s", got, r.Method, r.URL.Path, need)
		}
		return h(w, r)
	}
}

// authFailureReason is the metric label of a refused token.
func authFailureReason(err error) string {
	switch {
	case errors.Is(err, auth.ErrNoCredentials):
		return "missing"
	case errors.Is(err, auth.ErrMalformedCredentials):
		return "malformed"
	}
	return "unknown"
}

// crossOrigin refuses state-changing requests that a browser sends from
// another origin (Sec-Fetch-Site, or an Origin that is not the Host): a
// web page must not be able to ingest or drain through a user's browser,
// whatever the content type it posts. Clients that are not browsers send
// neither header and pass.
func (s *Server) crossOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(s.adapt(func(w http.ResponseWriter, r *http.Request) error {
		s.metrics.AuthFailures.WithLabelValues("cross-origin").Inc()
		return newError(http.StatusForbidden, CodeForbidden,
			"cross-origin browser requests are refused (Origin %q, Sec-Fetch-Site %q)",
			r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site"))
	}))
	return cop.Handler(next)
}
