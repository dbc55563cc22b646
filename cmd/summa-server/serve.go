package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/optimizer"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/s3backup"
	"github.com/summadev/summa/engine/server"
)

// serve runs the server until SIGTERM/SIGINT, then drains and shuts down
// in order within --shutdown-deadline.
func serve(cfg Config, log logr.Logger, stderr io.Writer) int {
	acc, store, code := prepareServe(cfg, log, stderr)
	if code != exitOK {
		return code
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	go acc.watch(watchCtx, cfg.Access)
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	front, err := startFront(cfg.Listen, cfg.Access, acc, log)
	if err != nil {
		fmt.Fprintf(stderr, "summa-server: %v\n", err)
		return exitFailure
	}
	hs := front.hs
	log.Info("Listening; opening the data directory", "address", front.addr(), "dataDir", cfg.DataDir,
		"tls", acc.cert != nil, "tokens", acc.tokens.Enabled(), "version", version)

	// Background maintenance reports into the server's metrics, which exist
	// only once the registry is open.
	var metrics atomic.Pointer[server.Metrics]
	reg, code := openRegistry(cfg, log, &metrics, stderr)
	if code != exitOK {
		_ = hs.Close()
		return code
	}
	fol, err := startFollower(cfg, log, reg)
	if err != nil {
		_ = hs.Close()
		_ = reg.Close(context.Background())
		fmt.Fprintf(stderr, "summa-server: %v\n", err)
		return exitUsage
	}
	srv := server.New(reg, server.Options{Follower: fol.server(), HoldTTL: cfg.Follow.HoldTTL, Logger: log.WithName("http"), Limits: server.Limits{
		MaxRequestBytes: cfg.MaxRequestBytes, MaxDocumentBytes: int(cfg.MaxDocumentBytes),
	}, Tokens: acc.tokens, Certificate: acc.cert, ReadTimeout: cfg.Access.ReadTimeout,
		WriteTimeout: cfg.Access.WriteTimeout, Backups: server.BackupOptions{Store: store, EngineVersion: versionString()}})
	metrics.Store(srv.Metrics())
	front.set(srv)
	autoCtx, stopAuto := context.WithCancel(context.Background())
	autoDone := make(chan struct{})
	go func() { defer close(autoDone); srv.RunAutoCommit(autoCtx, cfg.AutocommitInterval) }()
	fol.run()
	log.Info("Serving", "address", front.addr(), "indexes", len(reg.Names()),
		"autocommitInterval", cfg.AutocommitInterval.String(), "version", version)

	failed := false
	select {
	case sig := <-signals:
		log.Info("Signal received; draining and shutting down", "signal", sig.String(),
			"deadline", cfg.ShutdownDeadline.String())
	case err := <-front.errc:
		log.Error(err, "HTTP server failed; shutting down")
		failed = true
	}
	go func() {
		sig := <-signals
		log.Info("Second signal; exiting now without an ordered shutdown (commits are atomic)", "signal", sig.String())
		os.Exit(exitFailure)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownDeadline)
	defer cancel()
	front.closing.Store(true)
	lingerUntil := time.Now().Add(cfg.ShutdownDelay)
	if err := shutdown(ctx, log, srv, reg, hs, lingerUntil, func() { stopAuto(); <-autoDone; fol.stop() }); err != nil {
		log.Error(err, "Shutdown did not finish in order; exiting (nothing partial was published: commits are atomic)")
		return exitFailure
	}
	log.Info("Shut down")
	if failed {
		return exitFailure
	}
	return exitOK
}

// prepareServe does the checks that fail fast, before the port is bound:
// the data directory's lock, the access files and the object store's
// configuration. A code other than exitOK is the exit code.
func prepareServe(cfg Config, log logr.Logger, stderr io.Writer) (*access, *s3backup.Store, int) {
	// Fail fast beside another server or doctor, before binding the port.
	if err := probeLock(cfg.DataDir); err != nil {
		fmt.Fprintf(stderr, "summa-server: %v; refusing to start (nothing was touched)\n", err)
		if errors.Is(err, registry.ErrDataDirLocked) {
			return nil, nil, exitUsage
		}
		return nil, nil, exitFailure
	}
	acc, err := loadAccess(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "summa-server: %v\n", err)
		return nil, nil, exitUsage
	}
	if !cfg.S3.Configured() {
		return acc, nil, exitOK
	}
	store, err := s3backup.New(cfg.S3)
	if err != nil {
		fmt.Fprintf(stderr, "summa-server: %v\n", err)
		return nil, nil, exitUsage
	}
	// Fail fast on an unreadable key file; the store itself may be
	// down now and back later (each backup reads the file again).
	if _, _, err := s3backup.ReadCredentials(cfg.S3.CredentialsFile); err != nil {
		fmt.Fprintf(stderr, "summa-server: %v\n", err)
		return nil, nil, exitUsage
	}
	return acc, store, exitOK
}

// openRegistry opens the data directory with the server's options;
// background maintenance reports into *metrics once it is set. A code
// other than exitOK is the exit code.
func openRegistry(cfg Config, log logr.Logger, metrics *atomic.Pointer[server.Metrics], stderr io.Writer) (*registry.Registry, int) {
	opts := registryOptions(cfg, log)
	if cfg.Follow.Leader != "" {
		// A follower publishes only the leader's generations: no
		// maintenance of its own (merges reach it from the leader).
		opts.Optimizer.Threads = 0
	}
	opts.Optimizer.OnTask = func(kind, outcome string) {
		if m := metrics.Load(); m != nil {
			m.RecordMaintenance("", kind, outcome)
		}
	}
	reg, err := registry.Open(vfs.Default, cfg.DataDir, opts)
	if err == nil {
		return reg, exitOK
	}
	if errors.Is(err, registry.ErrDataDirLocked) {
		fmt.Fprintf(stderr, "summa-server: %v; refusing to start (nothing was touched)\n", err)
		return nil, exitUsage
	}
	fmt.Fprintf(stderr, "summa-server: open data directory %s: %v\n", cfg.DataDir, err)
	return nil, exitFailure
}

// shutdown is the ordered shutdown: not ready, drain (commit everything
// accepted), keep serving until lingerUntil (--shutdown-delay from the
// signal: readiness is already 503, so Kubernetes removes the endpoint
// while requests that kube-proxy still routes here are answered; each
// response closes its connection, so clients reconnect elsewhere), stop
// serving HTTP, stop autocommit, close the registry. Each step is bounded
// by ctx (the shutdown deadline, measured from the signal).
func shutdown(ctx context.Context, log logr.Logger, srv *server.Server, reg *registry.Registry,
	hs *http.Server, lingerUntil time.Time, stopAutocommit func()) error {
	srv.SetShuttingDown()
	start := time.Now()
	for {
		err := reg.Drain(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			_ = hs.Close()
			return fmt.Errorf("drain: %w (status %+v)", err, reg.DrainStatus())
		}
		// A resume request that raced SetShuttingDown cancelled the
		// drain; drain again.
		log.Info("Drain was cancelled by a resume; draining again")
	}
	log.Info("Drained", "duration", time.Since(start).String())
	if wait := time.Until(lingerUntil); wait > 0 {
		log.Info("Serving unready until load balancers dropped this endpoint", "for", wait.String())
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	if err := hs.Shutdown(ctx); err != nil {
		_ = hs.Close()
		return fmt.Errorf("stop serving HTTP: %w", err)
	}
	// A follower's replication loop stops too: bounded by the deadline
	// like every other step (a loop that does not end must not keep the
	// process past it).
	if err := within(ctx, stopAutocommit); err != nil {
		return fmt.Errorf("stop autocommit and the replication loop: %w", err)
	}
	// Running backups end unfinished (no manifest) and release their
	// tracker references and handles before the registry closes.
	if err := srv.StopBackups(ctx); err != nil {
		return fmt.Errorf("stop backups: %w", err)
	}
	srv.StopHolds()
	if err := reg.Close(ctx); err != nil {
		return fmt.Errorf("close the registry: %w", err)
	}
	return nil
}

// registryOptions maps the command line to the registry's options.
func registryOptions(cfg Config, log logr.Logger) registry.Options {
	m := cfg.Maintenance
	policy := optimizer.DefaultPolicy()
	if m.OptimizerMaxUnconvergedPasses > 0 {
		policy.MaxUnconvergedPasses = m.OptimizerMaxUnconvergedPasses
	}
	return registry.Options{
		Logger:       log.WithName("registry"),
		MinFreeBytes: cfg.MinFreeBytes,
		Index: index.Options{
			Logger:                log.WithName("index"),
			IndexingWorkers:       cfg.IndexingWorkers,
			CommitFlushTimeout:    cfg.CommitFlushTimeout,
			WorkerBufferBytes:     cfg.IndexingBufferBytes,
			PublicationRetryMin:   cfg.PublicationRetryMin,
			PublicationRetryMax:   cfg.PublicationRetryMax,
			PublicationRetryLimit: cfg.PublicationRetryLimit,
		},
		Optimizer: optimizer.Config{
			Threads:      m.OptimizerThreads,
			ScanInterval: m.OptimizerScanInterval,
			BackoffMin:   m.OptimizerBackoffMin,
			BackoffMax:   m.OptimizerBackoffMax,
			Policy:       policy,
			Logger:       log.WithName("optimizer"),
		},
		Reorder: index.ReorderOptions{
			TimeBudget:        m.BPTimeBudget,
			MemoryBudgetBytes: int64(m.BPMemoryBudgetMB) << 20,
		},
	}
}

// logrWriter turns the HTTP server's own log lines into structured logs.
type logrWriter struct {
	// log receives the lines.
	log logr.Logger
}

// Write logs one line.
func (w logrWriter) Write(p []byte) (int, error) {
	w.log.Info("HTTP server message", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}

// front is the HTTP listener: it serves the starting handler while the
// data directory opens, then the API.
type front struct {
	// hs serves ln.
	hs *http.Server
	// ln is the bound listener.
	ln net.Listener
	// handler is the current handler.
	handler atomic.Pointer[http.Handler]
	// errc receives the error that ended serving.
	errc chan error
	// closing is set once shutdown began: every response then carries
	// "Connection: close", so that a client's kept-alive connection ends
	// after an answer rather than being closed under a request it sends.
	closing atomic.Bool
}

// startFront binds addr and serves the starting handler, over TLS when
// acc has a certificate, with at most cfg.MaxConnections connections.
// Headers must arrive within ReadHeaderTimeout and idle connections close
// after IdleTimeout; the body's ReadTimeout is the server's (it must not
// cancel a long commit once the body is in: see server.Options).
func startFront(addr string, cfg AccessConfig, acc *access, log logr.Logger) (*front, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	f := &front{ln: ln, errc: make(chan error, 1)}
	f.set(server.StartingHandler())
	f.hs = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if f.closing.Load() {
				w.Header().Set("Connection", "close")
			}
			(*f.handler.Load()).ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          stdlog.New(logrWriter{log.WithName("http")}, "", 0),
	}
	served := acc.listener(ln, cfg)
	go func() { f.errc <- f.hs.Serve(served) }()
	return f, nil
}

// set switches the handler.
func (f *front) set(h http.Handler) { f.handler.Store(&h) }

// addr is the bound address.
func (f *front) addr() string { return f.ln.Addr().String() }

// within runs f and waits for it until ctx ends.
func within(ctx context.Context, f func()) error {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
