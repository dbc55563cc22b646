// Package server is the engine's HTTP API (docs/server.md) over a
// registry: index management, NDJSON ingestion, commits, search, drain and
// lifecycle, health probes and Prometheus metrics. Every error is answered as
// {"error":{"code","message","retryable"}} with a fitting status, and every
// 503 carries Retry-After.
package server

import (
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/auth"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/replication"
)

// Options configure a Server.
type Options struct {
	// Logger receives one line per request and every server fault.
	Logger logr.Logger
	// Limits bound requests; zero fields take their defaults.
	Limits Limits
	// Tokens are the bearer tokens of access control. Nil (or no token
	// file) serves every request without authentication: the command line
	// allows that only on loopback or with --insecure-no-auth.
	Tokens *auth.Tokens
	// Certificate is the TLS certificate served, for its expiry metric;
	// nil with plain HTTP.
	Certificate *auth.Certificate
	// ReadTimeout bounds the reading of a request body (0: none); see
	// bodyDeadline.
	ReadTimeout time.Duration
	// WriteTimeout bounds the sending of an answer from its first byte
	// (0: none); see recorder.startAnswer.
	WriteTimeout time.Duration
	// Backups configure online backups to object storage.
	Backups BackupOptions
	// Follower is set when the server is a read follower: every write
	// route answers 409 ReadOnlyReplica and STATUS shows "replication".
	Follower Follower
	// HoldTTL is the time to live of a replication hold (default
	// replication.DefaultHoldTTL).
	HoldTTL time.Duration
}

// Server serves the API of one registry.
type Server struct {
	// r is the served registry.
	r *registry.Registry
	// limits are the effective limits.
	limits Limits
	// log receives request and fault logs.
	log logr.Logger
	// metrics holds the Prometheus registry and the server's metrics.
	metrics *Metrics
	// handler is the routed and instrumented handler.
	handler http.Handler
	// shuttingDown is set once process shutdown began: /readyz answers 503
	// and resume is refused.
	shuttingDown atomic.Bool
	// shutdown is closed with shuttingDown set: long polls end on it.
	shutdown chan struct{}
	// shutdownOnce closes shutdown once.
	shutdownOnce sync.Once
	// tokens decide who may do what (nil: everyone may do everything).
	tokens *auth.Tokens
	// readTimeout bounds the reading of a request body.
	readTimeout time.Duration
	// writeTimeout bounds the sending of an answer.
	writeTimeout time.Duration
	// backups runs the online backups.
	backups *backups
	// follower is the follower loop (nil on a leader).
	follower Follower
	// holds are the replication holds followers download through.
	holds *replication.Holds
}

// handlerFunc is an API handler; a returned error is answered with the
// contract's error body.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// route is one registered method and path, and the scope a token needs
// for it (engine contract, "Access control").
type route struct {
	method, path string
	scope        auth.Scope
	h            handlerFunc
}

// New returns a server of r, ready to serve: r is open.
func New(r *registry.Registry, opts Options) *Server {
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	s := &Server{r: r, limits: opts.Limits.withDefaults(), log: opts.Logger, tokens: opts.Tokens,
		readTimeout: opts.ReadTimeout, writeTimeout: opts.WriteTimeout,
		follower: opts.Follower, holds: replication.NewHolds(opts.HoldTTL), shutdown: make(chan struct{})}
	s.metrics = newMetrics(r, opts.Tokens, opts.Certificate)
	if opts.Follower != nil {
		s.metrics.reg.MustRegister(&replicationCollector{f: opts.Follower})
	}
	s.backups = newBackups(opts.Backups, s.metrics.reg)
	s.handler = s.instrument(s.recoverPanics(s.crossOrigin(s.bodyDeadline(s.routes()))))
	return s
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Metrics returns the server's metrics, for the hooks of other components
// (background maintenance).
func (s *Server) Metrics() *Metrics { return s.metrics }

// SetShuttingDown marks the start of process shutdown: /readyz answers 503
// from now on and POST /v1/admin/resume is refused.
func (s *Server) SetShuttingDown() {
	s.shuttingDown.Store(true)
	s.shutdownOnce.Do(func() { close(s.shutdown) })
}

// ShuttingDown reports whether SetShuttingDown was called.
func (s *Server) ShuttingDown() bool { return s.shuttingDown.Load() }

// Ready reports whether the server should receive traffic: not draining,
// not shutting down, and on a follower with what to serve.
func (s *Server) Ready() bool {
	return !s.shuttingDown.Load() && !s.r.Draining() && (s.follower == nil || s.follower.Ready())
}

// metricsPath is the Prometheus route's path (GET), served outside the
// route table by the metrics handler.
const metricsPath = "/metrics"

// table is the API's routes (the metrics route aside).
func (s *Server) table() []route {
	const ix = "/v1/indexes/{index}"
	const open, read, write, admin = openScope, auth.ScopeRead, auth.ScopeWrite, auth.ScopeAdmin
	return []route{
		{"GET", "/healthz", open, s.healthz},
		{"GET", "/readyz", open, s.readyz},
		{"GET", "/v1/indexes", read, s.listIndexes},
		{"PUT", ix, admin, s.readOnly(s.createIndex)},
		{"GET", ix, read, s.getIndex},
		{"DELETE", ix, admin, s.readOnly(s.deleteIndex)},
		{"POST", ix + "/documents", write, s.readOnly(s.addDocuments)},
		{"DELETE", ix + "/documents/{primaryKey}", write, s.readOnly(s.deleteDocument)},
		{"POST", ix + "/commit", write, s.readOnly(s.commit)},
		{"POST", ix + "/search", read, s.search},
		{"POST", ix + "/merge", admin, s.readOnly(s.merge)},
		{"POST", ix + "/reorder", admin, s.readOnly(s.reorder)},
		{"POST", ix + "/compact", admin, s.readOnly(s.compact)},
		{"GET", ix + "/replication", read, s.replicationState},
		{"GET", ix + "/replication/holds/{hold}/files/{file}", read, s.replicationFile},
		{"DELETE", ix + "/replication/holds/{hold}", read, s.releaseHold},
		{"POST", ix + "/backups", admin, s.startBackup},
		{"GET", ix + "/backups", admin, s.listBackups},
		{"GET", ix + "/backups/{id}", admin, s.getBackup},
		{"POST", "/v1/admin/drain", admin, s.startDrain},
		{"GET", "/v1/admin/drain", admin, s.drainStatus},
		{"POST", "/v1/admin/resume", admin, s.resume},
		{"GET", "/v1/admin/lifecycle", admin, s.lifecycle},
		{"GET", "/v1/admin/doctor-reports/{id}", admin, s.doctorReport},
	}
}

// routes builds the router. Every path also gets a method-less pattern
// answering 405 MethodNotAllowed with Allow, and "/" answers 404 NotFound,
// so that no answer escapes the error format.
func (s *Server) routes() *http.ServeMux {
	table := s.table()
	mux := http.NewServeMux()
	methods := map[string][]string{}
	scopes := map[string]auth.Scope{}
	for _, rt := range table {
		mux.Handle(rt.method+" "+rt.path, s.adapt(s.authorize(rt.scope, rt.h)))
		methods[rt.path] = append(methods[rt.path], rt.method)
		if prev, ok := scopes[rt.path]; !ok || rt.scope < prev {
			scopes[rt.path] = rt.scope
		}
	}
	mux.Handle("GET "+metricsPath, s.metrics.handler())
	methods[metricsPath] = []string{"GET"}
	for path, ms := range methods {
		if slices.Contains(ms, "GET") {
			ms = append(ms, "HEAD")
		}
		sort.Strings(ms)
		allow := strings.Join(ms, ", ")
		// A wrong method needs the least scope of the path, so that the
		// API's shape is told only to a known token.
		mux.Handle(path, s.adapt(s.authorize(scopes[path], func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("Allow", allow)
			return newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
				"%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow)
		})))
	}
	mux.Handle("/", s.adapt(s.authorize(auth.ScopeRead, func(w http.ResponseWriter, r *http.Request) error {
		return newError(http.StatusNotFound, CodeNotFound, "no route for %s %s", r.Method, r.URL.Path)
	})))
	return mux
}

// adapt turns an API handler into an http.Handler that answers its error.
func (s *Server) adapt(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			e := writeError(w, err)
			if rec, ok := w.(*recorder); ok {
				rec.errCode = e.code
				if e.status >= 500 && e.status != http.StatusServiceUnavailable && e.status != http.StatusNotImplemented {
					rec.err = err
				}
			}
		}
	})
}

// healthz is liveness: 200 while the process serves, also during drain
// and long maintenance.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, client.Health{Status: "ok"})
	return nil
}

// readyz is readiness: 503 while draining or shutting down.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	switch {
	case s.shuttingDown.Load():
		return unavailable(CodeNotReady, retryDraining, "shutting down")
	case s.r.Draining():
		return unavailable(CodeNotReady, retryDraining, "draining")
	case s.follower != nil && !s.follower.Ready():
		return unavailable(CodeNotReady, retryDraining, "a follower making its first copy of the leader's indexes")
	}
	writeJSON(w, http.StatusOK, client.Health{Status: "ready"})
	return nil
}

// StartingHandler serves while the data directory opens, before a Server
// exists: /healthz answers 200, /readyz 503 NotReady and everything else
// 503 Starting, all with Retry-After.
func StartingHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			writeJSON(w, http.StatusOK, client.Health{Status: "ok"})
		case "/readyz":
			writeError(w, unavailable(CodeNotReady, retryDefault, "starting: opening the data directory"))
		default:
			writeError(w, unavailable(CodeStarting, retryDefault, "starting: opening the data directory"))
		}
	})
}
