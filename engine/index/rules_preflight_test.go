package index

import (
	"context"
	"errors"
	"os"
	"path"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// TestQ06_ConcurrentPreflightQuarantinesFirstCorruptSourceInOrder: the
// sources validate concurrently, yet each merge quarantines the first
// corrupt source in source order, as a one-by-one preflight would, and
// the merge after the last quarantine merges the healthy rest.
func TestQ06_ConcurrentPreflightQuarantinesFirstCorruptSourceInOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	fs := vfs.NewMem()
	idx, err := Create(fs, testDir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	for i := 0; i < 9; i++ {
		if err := idx.Add(docs(t, 10*i, 10*i+10, 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	segs := idx.Metadata().Segments
	bad := []int{3, 5, 6}
	for _, i := range bad {
		corruptPart(t, fs, segs[i].Info, segment.SuffixStore)
	}
	for k, i := range bad {
		_, err := idx.ForceMerge(context.Background(), 1)
		if !errors.Is(err, ErrSourceQuarantined) {
			t.Fatalf("merge %d: %v", k, err)
		}
		st := idx.Status()
		if len(st.Quarantined) != k+1 {
			t.Fatalf("merge %d: quarantine %+v", k, st.Quarantined)
		}
		if !idx.IsQuarantined(segs[i].ID) {
			t.Fatalf("merge %d quarantined %+v, want segment %d (%s) first", k, st.Quarantined, i, segs[i].ID)
		}
	}
	res, err := idx.ForceMerge(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sources) != len(segs)-len(bad) || res.Documents != 60 {
		t.Fatalf("final merge of %d sources, %d documents", len(res.Sources), res.Documents)
	}
	checkOwned(t, fs, idx)
}

// failSourceRead fails, once armed, the next read (or open, with open set)
// of one segment's files with EIO: a transient storage error, not
// corruption.
type failSourceRead struct {
	mu     sync.Mutex
	prefix string // "seg_<id>." of the segment
	open   bool
	armed  bool
	fired  int
}

func (f *failSourceRead) arm(id segid.ID, open bool) {
	f.mu.Lock()
	f.prefix, f.open, f.armed = segid.FileName(id, ""), open, true
	f.mu.Unlock()
}

func (f *failSourceRead) MaybeError(op errorfs.Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	want := errorfs.OpFileReadAt
	if f.open {
		want = errorfs.OpOpen
	}
	if !f.armed || op.Kind != want || !strings.HasPrefix(path.Base(op.Path), f.prefix) {
		return nil
	}
	f.armed = false
	f.fired++
	return &os.PathError{Op: "read", Path: op.Path, Err: syscall.EIO}
}
func (f *failSourceRead) String() string { return "failSourceRead" }

// TestQ06_TransientReadErrorFailsPreflightWithoutQuarantine: only a
// deterministic missing or corrupt source is quarantined. A transient
// storage error while preflight reads or opens a healthy source fails the
// merge (or reorder): nothing is quarantined, the source stays live and
// searchable, every claim is released, and once the disk answers again
// the same rewrite succeeds.
func TestQ06_TransientReadErrorFailsPreflightWithoutQuarantine(t *testing.T) {
	for _, c := range []struct {
		name        string
		open, merge bool
	}{
		{"merge/read", false, true},
		{"merge/open", true, true},
		{"reorder/read", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			inj := &failSourceRead{}
			fs := errorfs.Wrap(vfs.NewMem(), inj)
			idx, err := Create(fs, testDir, testSchema, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			defer mustClose(t, idx)
			for _, r := range [][2]int{{0, 10}, {10, 20}, {20, 30}} {
				if err := idx.Add(docs(t, r[0], r[1], 1)); err != nil {
					t.Fatal(err)
				}
				mustCommit(t, idx)
			}
			victim := idx.Metadata().Segments[1].ID
			before := visible(t, idx)
			rewrite := func() error {
				if c.merge {
					_, err := idx.ForceMerge(context.Background(), 1)
					return err
				}
				_, err := idx.ReorderSegment(context.Background(), victim, ReorderOptions{})
				return err
			}
			inj.arm(victim, c.open)
			err = rewrite()
			if inj.fired != 1 {
				t.Fatalf("the injected error fired %d times", inj.fired)
			}
			if err == nil || errors.Is(err, ErrSourceQuarantined) || !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "preflight") {
				t.Fatalf("rewrite over a transient read error: %v, want the EIO, not a quarantine", err)
			}
			if idx.IsQuarantined(victim) || len(idx.Status().Quarantined) != 0 {
				t.Fatalf("a transient read error quarantined %+v", idx.Status().Quarantined)
			}
			if !idx.Manager().OwnersOf(victim).Live {
				t.Fatal("the source left metadata")
			}
			if got := visible(t, idx); len(got) != len(before) {
				t.Fatalf("after the failed rewrite %d documents serve, want %d", len(got), len(before))
			}
			if res := idx.Status(); res.Documents != uint64(len(before)) {
				t.Fatalf("status counts %d documents, want %d", res.Documents, len(before))
			}
			if n := idx.Manager().ActiveOperations(); n != 0 {
				t.Fatalf("the failed rewrite kept %d claims", n)
			}
			checkOwned(t, fs, idx)
			// The disk answers again: the same rewrite takes the source.
			if err := rewrite(); err != nil {
				t.Fatalf("the rewrite after the transient error: %v", err)
			}
			if c.merge && len(idx.Metadata().Segments) != 1 {
				t.Fatalf("the retried merge left %d segments", len(idx.Metadata().Segments))
			}
			if got := visible(t, idx); len(got) != len(before) {
				t.Fatalf("after the retried rewrite %d documents serve, want %d", len(got), len(before))
			}
			checkOwned(t, fs, idx)
		})
	}
}
