package index

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/metadata"
)

// saveWatchFS calls onSave as a metadata save begins (metadata.json.tmp is
// created).
type saveWatchFS struct {
	vfs.FS
	// onSave runs before the create.
	onSave func()
}

func (f saveWatchFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	if f.PathBase(name) == metadata.TempFileName {
		f.onSave()
	}
	return f.FS.Create(name, cat)
}

// TestC01_EveryMetadataSaveHoldsTheMetadataLock: every generation an open
// index saves (commit, upsert and delete masks, merge, compaction, reorder)
// is written while Index.metaMu is held, the lock that serializes metadata
// mutations; a save found with the lock free fails. (Concurrent commits and
// rewrites are TestC01_MetadataMutationsSerialized.)
func TestC01_EveryMetadataSaveHoldsTheMetadataLock(t *testing.T) {
	var idx atomic.Pointer[Index]
	var saves, unlocked atomic.Int32
	fs := saveWatchFS{FS: vfs.NewMem(), onSave: func() {
		ix := idx.Load()
		if ix == nil {
			return // Create's first generation: no index yet
		}
		saves.Add(1)
		if ix.metaMu.TryLock() {
			ix.metaMu.Unlock()
			unlocked.Add(1)
		}
	}}
	ix, err := Create(fs, testDir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	idx.Store(ix)
	defer mustClose(t, ix)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := ix.Add(docs(t, i*10, i*10+10, 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, ix)
	}
	if err := ix.Add(docs(t, 0, 5, 2)); err != nil { // upserts: masks
		t.Fatal(err)
	}
	if _, err := ix.Delete("p0012"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, ix)
	if _, err := ix.ForceMerge(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Delete("p0013"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, ix)
	if _, err := ix.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.ReorderSegment(ctx, ix.Metadata().Segments[0].ID, ReorderOptions{}); err != nil {
		t.Fatal(err)
	}
	if saves.Load() < 7 {
		t.Fatalf("only %d metadata saves observed", saves.Load())
	}
	if n := unlocked.Load(); n > 0 {
		t.Fatalf("%d of %d metadata saves ran without the metadata lock", n, saves.Load())
	}
}
