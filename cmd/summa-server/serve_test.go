package main

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/server"
)

// TestShutdownDeadline blocks the drain's commit: the ordered shutdown
// gives up at the deadline with an error (the process then exits 1)
// instead of hanging, and publishes nothing partial.
func TestShutdownDeadline(t *testing.T) {
	release := make(chan struct{})
	dir := t.TempDir()
	reg, err := registry.Open(vfs.Default, dir, registry.Options{Index: index.Options{
		IndexingWorkers: 1,
		Hooks:           index.Hooks{BeforeWorkerFlush: func(int) { <-release }},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := schema.Parse([]byte(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Create(ctx, "blocked", s); err != nil {
		t.Fatal(err)
	}
	h, err := reg.Acquire("blocked")
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.ParseDocument([]byte(`{"id":"a","body":"light"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Add(ctx, []*schema.Document{d}); err != nil {
		t.Fatal(err)
	}
	h.Release()
	srv, hs := serveRegistry(t, reg)

	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = shutdown(sctx, logr.Discard(), srv, reg, hs, time.Time{}, func() {})
	if err == nil {
		t.Fatal("shutdown finished although the drain's commit is blocked")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %v past a 300ms deadline", d)
	}
	if srv.Ready() {
		t.Fatal("ready during shutdown")
	}
	close(release)
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	if err := reg.Close(cctx); err != nil {
		t.Fatal(err)
	}
}

// TestShutdownDeadlineBoundsTheStopOfTheLoops: a replication loop (or
// autocommit) that does not stop cannot keep the process past the
// shutdown deadline: the ordered shutdown gives up with an error.
func TestShutdownDeadlineBoundsTheStopOfTheLoops(t *testing.T) {
	reg, err := registry.Open(vfs.Default, t.TempDir(), registry.Options{Index: index.Options{IndexingWorkers: 1}})
	if err != nil {
		t.Fatal(err)
	}
	srv, hs := serveRegistry(t, reg)
	release := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := shutdown(ctx, logr.Discard(), srv, reg, hs, time.Time{}, func() { <-release }); err == nil {
		t.Fatal("shutdown finished although the loops never stopped")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %v past a 300ms deadline", d)
	}
	close(release)
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	if err := reg.Close(cctx); err != nil {
		t.Fatal(err)
	}
}

// serveRegistry serves reg's API on a loopback port, as serve does, for
// a test of the ordered shutdown.
func serveRegistry(t *testing.T, reg *registry.Registry) (*server.Server, *http.Server) {
	t.Helper()
	srv := server.New(reg, server.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go func() { _ = hs.Serve(ln) }()
	return srv, hs
}
