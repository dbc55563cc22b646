package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCountWrites counts the operator's requests of the window only, by
// verb and resource, from audit.k8s.io/v1 events as the API server writes
// them.
func TestCountWrites(t *testing.T) {
	log := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"update","user":{"username":"summa-operator","groups":["system:masters"]},"objectRef":{"resource":"summaindexes","namespace":"a","name":"x","subresource":"status"},"stageTimestamp":"2026-12-03T12:00:01.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"create","user":{"username":"summa-operator"},"objectRef":{"resource":"events","namespace":"a"},"stageTimestamp":"2026-12-03T12:00:02.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"create","user":{"username":"someone-else"},"objectRef":{"resource":"pods","namespace":"a"},"stageTimestamp":"2026-12-03T12:00:02.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"patch","user":{"username":"summa-operator"},"objectRef":{"resource":"summaindexes","namespace":"a","name":"x"},"stageTimestamp":"2026-12-03T12:00:09.000000Z"}
`
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	w, err := countWrites(path, from, from.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if w.total != 2 || w.byKind["update summaindexes/status"] != 1 || w.byKind["create events"] != 1 {
		t.Fatalf("got %d writes %s, want the status update and the event", w.total, w)
	}
}

// TestP99 takes the nearest rank.
func TestP99(t *testing.T) {
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = float64(200 - i)
	}
	if got := p99(xs); got != 198 {
		t.Fatalf("p99 of 1..200 = %v, want 198", got)
	}
	if got := p99([]float64{3, 1, 2}); got != 3 {
		t.Fatalf("p99 of three = %v, want the largest", got)
	}
}
