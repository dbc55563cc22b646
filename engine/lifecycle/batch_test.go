package lifecycle

import (
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

// countingListFS counts directory listings.
type countingListFS struct {
	vfs.FS
	lists atomic.Int32
}

func (c *countingListFS) List(dir string) ([]string, error) {
	c.lists.Add(1)
	return c.FS.List(dir)
}

// TestL04_LastReaderOfManySourcesListsTheDirectoryOnce: a merge retiring
// many sources deletes all their files when its snapshot drops them, with
// one listing of the directory, not one per source (each listing reads
// every file name of the index).
func TestL04_LastReaderOfManySourcesListsTheDirectoryOnce(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var srcs []segid.ID
	for id := segid.ID(1); id <= 40; id++ {
		writeFiles(t, mem, id, "post", "terms", "store")
		srcs = append(srcs, id)
	}
	fs := &countingListFS{FS: mem}
	m := NewManager(fs, dir, srcs, 41, Options{})
	m.Ref(srcs...)
	claims, err := m.ClaimExisting("merge", srcs...)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := m.Claim("merge")
	writeFiles(t, mem, out.ID, "post")
	m.Publish([]segid.ID{out.ID})
	ReleaseAll(claims)
	out.Release()
	before := fs.lists.Load()
	m.Unref(srcs...)
	if n := fs.lists.Load() - before; n != 1 {
		t.Fatalf("deleting %d sources listed the directory %d times", len(srcs), n)
	}
	for _, id := range srcs {
		if hasFilesOf(t, mem, id) {
			t.Fatalf("source %s kept after the last reader", id)
		}
	}
	if !hasFilesOf(t, mem, out.ID) {
		t.Fatal("merge output deleted")
	}
}
