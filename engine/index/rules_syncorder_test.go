package index

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/metadata"
)

// imageAtRename keeps, as each metadata.json.tmp is about to be renamed
// over metadata.json, a crash image of the disk holding only what was
// synced by then (files and directory entries alike).
type imageAtRename struct {
	mem    *vfs.MemFS
	mu     sync.Mutex
	images []*vfs.MemFS
}

func (f *imageAtRename) MaybeError(op errorfs.Op) error {
	if op.Kind == errorfs.OpRename && strings.HasSuffix(op.Path, "/"+metadata.TempFileName) {
		image := f.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
		f.mu.Lock()
		f.images = append(f.images, image)
		f.mu.Unlock()
	}
	return nil
}
func (f *imageAtRename) String() string { return "imageAtRename" }

// TestC02_PublishedFilesSyncedBeforeMetadataRename: every file a
// generation publishes, segment and deletion mask alike, is synced (and
// its directory entry too) before metadata.json.tmp is renamed over
// metadata.json. The disk is imaged as each rename is about to happen,
// keeping only synced data; the rename is then applied to the image,
// which must open with every segment and mask fully valid and the
// generation's documents: a crash right after the rename loses nothing.
// The generations cover a worker's buffer-full output (synced by the
// commit's sync round), commit-flush outputs (syncs started by the
// worker), new deletion masks of an upsert and a delete, and a merge's
// output.
func TestC02_PublishedFilesSyncedBeforeMetadataRename(t *testing.T) {
	mem := vfs.NewCrashableMem()
	// The parent directory is durable, as on a real volume.
	if err := mem.MkdirAll("data", 0o755); err != nil {
		t.Fatal(err)
	}
	root, _ := mem.OpenDir("")
	root.Sync()
	root.Close()
	inj := &imageAtRename{mem: mem}
	fs := errorfs.Wrap(mem, inj)
	opts := testOptions()
	// A 64-document batch fills a worker's buffer, a 5-document one does
	// not: both kinds of output.
	opts.WorkerBufferBytes = 64 << 10
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			mustClose(t, idx)
		}
	}()
	var results []CommitResult
	commit := func() { results = append(results, mustCommit(t, idx)) }

	if err := idx.Add(docs(t, 0, 64, 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the buffer-full flush", func() bool { return earlyFlushes(idx) == 1 })
	if err := idx.Add(docs(t, 64, 69, 1)); err != nil {
		t.Fatal(err)
	}
	commit()
	if n := len(idx.Metadata().Segments); n != 2 {
		t.Fatalf("the first commit published %d segments, want a buffer-full and a commit flush", n)
	}
	// An upsert and a delete: new masks of committed segments.
	if err := idx.Add(docs(t, 0, 1, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.Delete("p0066"); err != nil {
		t.Fatal(err)
	}
	commit()
	masks := 0
	for _, s := range idx.Metadata().Segments {
		if s.Deletes != nil {
			masks++
		}
	}
	if masks != 2 {
		t.Fatalf("the second commit published %d masks, want 2", masks)
	}
	if _, err := idx.ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	merged := idx.Metadata()
	closed = true
	mustClose(t, idx)

	inj.mu.Lock()
	images := inj.images
	inj.mu.Unlock()
	// Create's empty generation, two commits and the merge.
	if len(images) != 4 {
		t.Fatalf("%d renames of %s, want 4", len(images), metadata.TempFileName)
	}
	want := []uint64{0, results[0].Documents, results[1].Documents, results[1].Documents}
	for i, image := range images {
		tmp := image.PathJoin(testDir, metadata.TempFileName)
		if err := image.Rename(tmp, image.PathJoin(testDir, metadata.FileName)); err != nil {
			t.Fatalf("rename %d: %s not durable before its rename: %v", i, metadata.TempFileName, err)
		}
		ro, err := OpenReadOnly(image, testDir, testOptions())
		if err != nil {
			t.Fatalf("rename %d: open the image: %v", i, err)
		}
		bad, err := ro.Validate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(bad) != 0 {
			t.Fatalf("rename %d (generation %d): published files not synced before the rename: %v",
				i, ro.Metadata().Generation, bad)
		}
		if st := ro.Status(); st.Documents != want[i] || len(st.Quarantined) != 0 {
			t.Fatalf("rename %d: %d documents (quarantined %v), want %d", i, st.Documents, st.Quarantined, want[i])
		}
		if i == len(images)-1 && ro.Metadata().Generation != merged.Generation {
			t.Fatalf("the last image has generation %d, want the merge's %d", ro.Metadata().Generation, merged.Generation)
		}
		mustClose(t, ro)
	}
}
