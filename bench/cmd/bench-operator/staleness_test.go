package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestStalenessSplit reads the operator's status writes from an audit log
// and splits a commit's staleness at the write the bench saw: earlier
// writes of the index, later ones and other users' do not count.
func TestStalenessSplit(t *testing.T) {
	log := `{"stage":"ResponseComplete","verb":"update","user":{"username":"summa-operator"},"objectRef":{"resource":"summaindexes","namespace":"a","name":"x","subresource":"status"},"requestReceivedTimestamp":"2026-12-03T12:00:00.000000Z","stageTimestamp":"2026-12-03T12:00:00.100000Z"}
{"stage":"ResponseComplete","verb":"update","user":{"username":"summa-operator"},"objectRef":{"resource":"summaindexes","namespace":"a","name":"x","subresource":"status"},"requestReceivedTimestamp":"2026-12-03T12:00:11.500000Z","stageTimestamp":"2026-12-03T12:00:11.750000Z"}
{"stage":"ResponseComplete","verb":"update","user":{"username":"someone-else"},"objectRef":{"resource":"summaindexes","namespace":"a","name":"x","subresource":"status"},"requestReceivedTimestamp":"2026-12-03T12:00:11.800000Z","stageTimestamp":"2026-12-03T12:00:11.850000Z"}
{"stage":"ResponseComplete","verb":"update","user":{"username":"summa-operator"},"objectRef":{"resource":"summaindexes","namespace":"a","name":"x","subresource":"status"},"requestReceivedTimestamp":"2026-12-03T12:00:13.000000Z","stageTimestamp":"2026-12-03T12:00:13.100000Z"}
{"stage":"ResponseComplete","verb":"create","user":{"username":"summa-operator"},"objectRef":{"resource":"events","namespace":"a"},"requestReceivedTimestamp":"2026-12-03T12:00:11.000000Z","stageTimestamp":"2026-12-03T12:00:11.010000Z"}
`
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	ws, err := statusWrites(path, t0)
	if err != nil {
		t.Fatal(err)
	}
	x := client.ObjectKey{Namespace: "a", Name: "x"}
	if len(ws) != 1 || len(ws[x]) != 3 {
		t.Fatalf("status writes %v, want the operator's three of a/x", ws)
	}
	r := newStaleRound(2)
	r.committed[0], r.want[0], r.seen[0] = t0.Add(10*time.Second), 1, t0.Add(12*time.Second)
	r.committed[1], r.want[1] = t0.Add(10*time.Second), 1 // never seen
	op, api, watch := r.split([]client.ObjectKey{x, {Namespace: "a", Name: "y"}}, ws)
	near := func(got []float64, want float64) bool { return len(got) == 1 && math.Abs(got[0]-want) < 1e-6 }
	if !near(op, 1.5) || !near(api, 0.25) || !near(watch, 0.25) {
		t.Fatalf("split %v %v %v, want 1.5 s to the operator's write, 0.25 s in the API server, 0.25 s to the watch", op, api, watch)
	}
	if got, _ := r.seconds(time.Minute, time.Time{}); got[0] != 2 || got[1] != 60 {
		t.Fatalf("staleness %v, want 2 s and the bound for the one never seen", got)
	}
	slow := r.slowest([]client.ObjectKey{x, {Namespace: "a", Name: "y"}}, ws, 2)
	want := []string{"y never seen, writes:", "x 2.00s, writes: at +1.50s took 0.25s; at +3.00s took 0.10s;"}
	if len(slow) != 2 || slow[0] != want[0] || slow[1] != want[1] {
		t.Fatalf("slowest %q, want %q (the one never seen first, then x with its writes from 2 s before its commit)", slow, want)
	}
}
