package index

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/metadata"
)

// leaderGen is one committed generation of a leader as a follower copies
// it: its metadata, the bytes of every file it names, and what it shows.
type leaderGen struct {
	meta  *metadata.Metadata
	files map[string][]byte
	state map[string]string
}

// leaderHistory runs the crash harness's scenario (commits, a merge, a
// compaction, a reorder) on a leader and keeps every committed generation.
func leaderHistory(t *testing.T) []leaderGen {
	t.Helper()
	fs := vfs.NewMem()
	idx, err := Create(fs, testDir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	var out []leaderGen
	keep := func() {
		snap, meta, err := idx.PinCommitted()
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		g := leaderGen{meta: meta, files: map[string][]byte{}, state: visible(t, idx)}
		for _, f := range CommittedFiles(meta) {
			r, err := fs.Open(fs.PathJoin(testDir, f.Name))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			g.files[f.Name] = b
		}
		out = append(out, g)
	}
	for si, s := range scenarioSteps(t) {
		if !applyStep(t, idx, s, func() bool { return false }) {
			t.Fatal("apply step")
		}
		mustCommit(t, idx)
		keep()
		if si == 2 {
			for _, op := range []func() error{
				func() error { _, err := idx.ForceMerge(context.Background(), 1); return err },
				func() error { _, err := idx.Compact(context.Background()); return err },
			} {
				if err := op(); err != nil {
					t.Fatal(err)
				}
				keep()
			}
		}
	}
	return out
}

// copyGeneration installs g on the follower: false when the process died.
func copyGeneration(idx *Index, g leaderGen, dead func() bool) (published, degraded bool, err error) {
	in, err := idx.PrepareIncoming(g.meta)
	if err != nil {
		return false, false, err
	}
	for i, f := range in.Files() {
		w, err := in.Create(f.Name)
		if err == nil {
			// A copy: io.Writer must not modify its argument, but the
			// in-memory filesystem scrambles it under -race (pebble's
			// invariants) to catch callers that reuse it; the leader's
			// bytes are shared by every run of the harness.
			_, err = w.Write(bytes.Clone(g.files[f.Name]))
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}
		if err == nil && i%2 == 0 {
			in.Closed(f.Name) // one file in two has its fsync started early
		}
		if err == nil && i%3 == 0 {
			err = in.Check(context.Background(), f.Name) // and one in three its segment checked early
		}
		if err != nil {
			in.Abandon()
			return false, false, err
		}
	}
	deg, err := in.Publish(context.Background())
	if err != nil {
		in.Abandon()
		return false, false, err
	}
	return true, deg, nil
}

// runFollowerScenario copies every generation of history in order, as a
// follower does, with a restart in the middle; a failed copy is retried.
func runFollowerScenario(t *testing.T, fs vfs.FS, f *faultFS, history []leaderGen, rec *record) {
	dead := func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.crashed }
	var idx *Index
	var err error
	for attempt := 0; attempt < 3 && idx == nil; attempt++ {
		if idx, err = Create(fs, testDir, testSchema, harnessOptions()); err != nil && dead() {
			return // crashed before the index existed
		}
	}
	if idx == nil {
		t.Fatalf("create the follower's index: %v", err)
	}
	defer func() {
		if idx != nil {
			_ = idx.Close(context.Background())
		}
	}()
	for gi, g := range history {
		if gi == len(history)/2 {
			_ = idx.Close(context.Background())
			for attempt := 0; attempt < 3; attempt++ {
				if idx, err = Open(fs, testDir, harnessOptions()); err == nil {
					break
				}
				if dead() {
					idx = nil
					return
				}
			}
			if err != nil {
				idx = nil
				t.Fatalf("reopen the follower: %v", err)
			}
		}
		rec.pending = gi
		for attempt := 0; ; attempt++ {
			ok, deg, err := copyGeneration(idx, g, dead)
			if ok {
				rec.ack(g.meta.Generation, gi, deg)
				break
			}
			if dead() {
				return
			}
			if attempt > 3 {
				t.Fatalf("copy of generation %d keeps failing (fault at op %d, crash %v): %v", g.meta.Generation, f.at, f.crash, err)
			}
		}
	}
}

// checkFollower opens fs and checks that it serves a whole generation of
// the leader, not older than the last acknowledged copy, and that every
// seg_ file has an owner.
func checkFollower(t *testing.T, fs vfs.FS, history []leaderGen, rec *record, label string) {
	t.Helper()
	idx, err := Open(fs, testDir, harnessOptions())
	if err != nil {
		if len(rec.acked) == 0 {
			return // crashed before the index existed
		}
		t.Fatalf("%s: reopen: %v", label, err)
	}
	defer idx.Close(context.Background())
	st := idx.Status()
	if len(st.Quarantined) > 0 {
		t.Fatalf("%s: the follower's metadata names a missing or broken file: %+v", label, st.Quarantined)
	}
	var last uint64
	for g := range rec.acked {
		if !rec.degraded[g] {
			last = max(last, g)
		}
	}
	if st.Generation < last {
		t.Fatalf("%s: the follower serves generation %d, older than the acknowledged %d", label, st.Generation, last)
	}
	vis := visible(t, idx)
	found := st.Generation == 0 && len(vis) == 0
	for _, g := range history {
		if g.meta.Generation == st.Generation {
			found = maps.Equal(vis, g.state)
		}
	}
	if !found {
		t.Fatalf("%s: the follower serves generation %d with %d documents, not the leader's", label, st.Generation, len(vis))
	}
	checkOwned(t, fs, idx)
}

// TestF03_CrashAndFaultHarnessOnTheFollowersPublication: the follower's
// copy of a leader's generations (commits, a merge, a compaction) is
// crashed before, and fails at, every filesystem operation; each reopened
// image serves a whole committed generation of the leader, never one with
// a missing file, and every seg_ file has an owner after the sweep.
func TestF03_CrashAndFaultHarnessOnTheFollowersPublication(t *testing.T) {
	history := leaderHistory(t)
	counter, fs := newFaultFS(-1, false, 0, 0)
	rec := newRecord()
	runFollowerScenario(t, fs, counter, history, rec)
	if len(rec.acked) != len(history) {
		t.Fatalf("clean run copied %d of %d generations", len(rec.acked), len(history))
	}
	checkFollower(t, fs, history, rec, "clean")
	total := counter.n.Load()
	points := 0
	for n := int64(0); n < total; n++ {
		_, write := counter.writes.Load(n)
		for _, mode := range []string{"crash", "crash-torn", "error"} {
			unsynced := 0
			switch {
			case mode != "error" && !write:
				continue
			case mode == "crash-torn" && n%5 != 0:
				continue
			case mode == "crash-torn":
				unsynced = 50
			case mode == "error" && !write && n%3 != 0:
				continue
			case testing.Short() && n%4 != 0:
				continue
			}
			label := fmt.Sprintf("%s at op %d", mode, n)
			f, fs := newFaultFS(n, mode != "error", unsynced, n)
			rec := newRecord()
			runFollowerScenario(t, fs, f, history, rec)
			image := f.mem
			if mode != "error" {
				f.mu.Lock()
				if f.image != nil {
					image = f.image
				}
				f.mu.Unlock()
			} else if len(rec.acked) != len(history) {
				t.Fatalf("%s: the follower could not copy every generation (%d of %d)", label, len(rec.acked), len(history))
			}
			checkFollower(t, image, history, rec, label)
			points++
		}
	}
	t.Logf("follower crash points exercised: %d (over %d filesystem operations)", points, total)
}
