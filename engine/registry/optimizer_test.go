package registry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/optimizer"
)

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOptimizerMergesInTheBackground(t *testing.T) {
	fs := vfs.NewMem()
	r := openTest(t, fs, Options{Optimizer: optimizer.Config{Threads: 1, ScanInterval: 10 * time.Millisecond}})
	defer r.Close(context.Background())
	h := mustCreate(t, r, "articles")
	defer h.Release()
	for i := 0; i < 10; i++ {
		if err := h.Add(context.Background(), docs(t, i*5, i*5+5)); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a background merge", func() bool { return len(h.Status().Segments) < 10 })
	if st := h.Status(); st.Documents != 50 {
		t.Fatalf("background merge changed the document count: %d", st.Documents)
	}
}

func TestDrainBringsMaintenanceToRest(t *testing.T) {
	fs := vfs.NewMem()
	r := openTest(t, fs, Options{Optimizer: optimizer.Config{Threads: 1, ScanInterval: time.Hour}})
	defer r.Close(context.Background())
	h := mustCreate(t, r, "articles")
	defer h.Release()
	for i := 0; i < 3; i++ {
		if err := h.Add(context.Background(), docs(t, i*50, i*50+50)); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := h.Merge(context.Background(), 1); done <- err }()
	if err := r.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.maintenanceRunning() != 0 {
		t.Fatal("drained while maintenance still runs")
	}
	if err := <-done; err != nil && !errors.Is(err, ErrDraining) {
		t.Fatalf("explicit merge during drain: %v", err)
	}
}
