package index

import (
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
)

// TestQ01_WriterOpenSweepsOnlyOrphans: the writer's open sweeps the IDs
// no owner holds, and only them: every file of a committed segment and of
// its committed deletion mask stays, and the index shows what it did.
func TestQ01_WriterOpenSweepsOnlyOrphans(t *testing.T) {
	fs, idx := createMem(t)
	if err := idx.Add(docs(t, 0, 10, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	deleteAndCommit(t, idx, "p0001", "p0002")
	want := visible(t, idx)
	mustClose(t, idx)
	meta, err := metadata.Load(fs, testDir)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Segments[0].Deletes == nil {
		t.Fatal("setup: no committed deletion mask")
	}
	orphan := segid.ID(0xff)
	f, err := fs.Create(fs.PathJoin(testDir, segid.FileName(orphan, "post")), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	re, err := Open(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, re)
	files := segFiles(t, fs)
	if _, ok := files[orphan]; ok {
		t.Fatal("the writer's open left an orphan")
	}
	for _, id := range meta.IDs() {
		if _, ok := files[id]; !ok {
			t.Fatalf("the writer's open swept %s, which metadata owns", id)
		}
	}
	checkCommittedFilesExist(t, fs, meta)
	if got := visible(t, re); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the sweep %d documents visible, want the %d committed", len(got), len(want))
	}
}
