package index

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segment"
)

// commitCallers records which callers reached the commit point while a
// harness ran (Hooks.CommitPoint), so that each harness proves it covers
// its callers.
var commitCallers sync.Map

func recordCommitCaller(caller string) { commitCallers.Store(caller, true) }

// requireCommitCallers fails unless every caller reached the commit point.
func requireCommitCallers(t *testing.T, callers ...string) {
	t.Helper()
	for _, c := range callers {
		if _, ok := commitCallers.Load(c); !ok {
			t.Fatalf("the harness never reached the commit point through %q", c)
		}
	}
}

// doctorSetup builds, with no fault, an index of three committed segments
// and a mask, closes it and damages a byte of the middle segment's postings
// (sizes intact: only the doctor's full validation sees it). It returns the
// operation count so far and the documents visible before any repair.
func doctorSetup(t *testing.T, f *faultFS, fs vfs.FS) (int64, map[string]string) {
	t.Helper()
	idx, err := Create(fs, testDir, testSchema, harnessOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{0, 10}, {10, 25}, {25, 30}} {
		if err := idx.Add(docs(t, r[0], r[1], 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	if _, err := idx.Delete("p0011"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	before := visible(t, idx)
	mustClose(t, idx)
	meta, err := metadata.Load(f.mem, testDir)
	if err != nil {
		t.Fatal(err)
	}
	name, _, _ := partSpan(t, meta.Segments[1].Info, segment.SuffixPostings)
	corruptPart(t, f.mem, meta.Segments[1].Info, segment.SuffixPostings)
	file, err := f.mem.OpenReadWrite(f.mem.PathJoin(testDir, name), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if err := file.Sync(); err != nil { // the damage is on disk, in every crash image
		t.Fatal(err)
	}
	file.Close()
	return f.n.Load(), before
}

// checkDoctorImage opens a crash or fault image and returns what it shows;
// after the sweep every seg_ file has an owner and nothing is quarantined.
func checkDoctorImage(t *testing.T, fs vfs.FS, label string) map[string]string {
	t.Helper()
	idx, err := Open(fs, testDir, harnessOptions())
	if err != nil {
		t.Fatalf("%s: reopen: %v", label, err)
	}
	defer idx.Close(context.Background())
	if q := idx.Status().Quarantined; len(q) > 0 {
		t.Fatalf("%s: metadata references a missing or broken file: %+v", label, q)
	}
	checkOwned(t, fs, idx)
	return visible(t, idx)
}

// TestCrashAndFaultHarnessDoctor runs the doctor, the commit point's third
// caller, under the harness: a crash before each of its filesystem
// operations, then an injected error at each one followed by the client's
// retry. Every image shows either the index before the repair or the
// repaired one, never a mix, never an unowned file or a missing one.
func TestCrashAndFaultHarnessDoctor(t *testing.T) {
	opts := harnessOptions()
	opts.Hooks.CommitPoint = recordCommitCaller
	doctor := func(fs vfs.FS) error {
		_, err := Doctor(context.Background(), fs, testDir, opts)
		return err
	}

	counter, fs := newFaultFS(-1, false, 0, 0)
	base, before := doctorSetup(t, counter, fs)
	if err := doctor(fs); err != nil {
		t.Fatal(err)
	}
	requireCommitCallers(t, commitByDoctor)
	total := counter.n.Load() - base
	after := checkDoctorImage(t, counter.mem, "clean")
	if len(after) != len(before)-14 { // the middle segment held 15 rows, one deleted
		t.Fatalf("repair left %d of %d documents, want %d", len(after), len(before), len(before)-14)
	}

	points := 0
	for n := int64(0); n < total; n++ {
		if testing.Short() && n%4 != 0 {
			continue // -short (the race run): a quarter of the points
		}
		for _, crash := range []bool{true, false} {
			label := fmt.Sprintf("crash %v at doctor op %d", crash, n)
			f, fs := newFaultFS(-1, false, 0, n)
			doctorSetup(t, f, fs)
			f.mu.Lock()
			f.at, f.crash = base+n, crash
			f.mu.Unlock()
			err := doctor(fs)
			f.mu.Lock()
			image := f.image
			f.mu.Unlock()
			if !crash {
				if err != nil {
					if err := doctor(fs); err != nil { // the client runs it again
						t.Fatalf("%s: retried doctor: %v", label, err)
					}
				}
				if got := checkDoctorImage(t, f.mem, label); !maps.Equal(got, after) {
					t.Fatalf("%s: after the retry %d documents visible, want the repaired %d", label, len(got), len(after))
				}
				points++
				continue
			}
			if image == nil {
				image = f.mem // the operation was never reached
			}
			got := checkDoctorImage(t, image, label)
			if !maps.Equal(got, before) && !maps.Equal(got, after) {
				t.Fatalf("%s: %d documents visible, neither the %d before nor the %d after the repair", label, len(got), len(before), len(after))
			}
			points++
		}
	}
	t.Logf("doctor crash and fault points exercised: %d (over %d filesystem operations)", points, total)
}
