package index

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// failAfterRename fails every filesystem operation that follows the
// rename of a metadata generation, until disarmed.
type failAfterRename struct {
	mu sync.Mutex
	// armed enables the injection.
	armed bool
	// failing is set by the metadata rename.
	failing bool
	// failed counts the operations failed.
	failed int
}

func (f *failAfterRename) MaybeError(op errorfs.Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.armed {
		return nil
	}
	if f.failing {
		f.failed++
		return errorfs.ErrInjected
	}
	if op.Kind == errorfs.OpRename && strings.Contains(op.Path, "metadata.json") {
		f.failing = true
	}
	return nil
}

func (f *failAfterRename) String() string { return "failAfterRename" }

func (f *failAfterRename) arm(on bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed, f.failing = on, false
	n := f.failed
	f.failed = 0
	return n
}

// TestC12_EveryFailureAfterTheRenameStillReportsTheCommit: once the
// metadata rename happened, every later filesystem operation of the commit
// point (directory sync, deletion of retired masks and sources) fails, for
// a commit with upserts and for a merge; each is still reported as
// published (at most with degraded durability), the new generation is
// current, and a reopen shows it.
func TestC12_EveryFailureAfterTheRenameStillReportsTheCommit(t *testing.T) {
	inj := &failAfterRename{}
	mem := vfs.NewMem()
	fs := errorfs.Wrap(mem, inj)
	idx, err := Create(fs, testDir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := idx.Add(docs(t, i*10, i*10+10, 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	if err := idx.Add(docs(t, 0, 3, 2)); err != nil { // upserts: a new mask, the old rows hidden
		t.Fatal(err)
	}
	inj.arm(true)
	res, err := idx.Commit(context.Background())
	failed := inj.arm(false)
	if err != nil || failed == 0 {
		t.Fatalf("commit with every post-rename operation failing (%d failed): %v", failed, err)
	}
	if idx.Metadata().Generation != res.Generation {
		t.Fatalf("current generation %d, the commit reported %d", idx.Metadata().Generation, res.Generation)
	}
	inj.arm(true)
	mres, err := idx.ForceMerge(context.Background(), 1)
	failed = inj.arm(false)
	if err != nil || failed == 0 {
		t.Fatalf("merge with every post-rename operation failing (%d failed): %v", failed, err)
	}
	want := visible(t, idx)
	if len(want) != 20 || idx.Metadata().Generation != mres.Generation {
		t.Fatalf("after the merge: %d documents, generation %d (merge reported %d)", len(want), idx.Metadata().Generation, mres.Generation)
	}
	mustClose(t, idx)
	idx, err = Open(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if got := visible(t, idx); idx.Metadata().Generation != mres.Generation || len(got) != len(want) {
		t.Fatalf("reopened: generation %d with %d documents, want %d with %d", idx.Metadata().Generation, len(got), mres.Generation, len(want))
	}
	checkOwned(t, mem, idx)
}
