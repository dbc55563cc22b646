package index

import (
	"context"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// ownedAtCreate checks, at every creation of a seg_ file, that its ID
// already has an owner: the engine's own writers claim before the first
// write.
type ownedAtCreate struct {
	mu      sync.Mutex
	idx     *Index
	created map[string]bool
	orphans []string
}

func (o *ownedAtCreate) MaybeError(op errorfs.Op) error {
	if op.Kind != errorfs.OpCreate {
		return nil
	}
	name := op.Path[len(testDir)+1:]
	id, suffix, ok := segid.ParseFileName(name)
	if !ok {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.idx == nil {
		return nil
	}
	o.created[suffix] = true
	if !o.idx.Manager().OwnersOf(id).Owned() {
		o.orphans = append(o.orphans, name)
	}
	return nil
}

func (o *ownedAtCreate) String() string { return "ownedAtCreate" }

// TestL07_EngineWritersClaimBeforeTheirFirstFile: indexing flushes (early
// and at commit), deletion masks, merge, compaction and reorder outputs
// each create their first file under an ID that is already claimed, so an
// orphan sweep at any moment cannot take a partial builder.
func TestL07_EngineWritersClaimBeforeTheirFirstFile(t *testing.T) {
	inj := &ownedAtCreate{created: map[string]bool{}}
	opts := testOptions()
	opts.WorkerBufferBytes = 64 << 10 // early flushes too
	idx, err := Create(errorfs.Wrap(vfs.NewMem(), inj), testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	inj.mu.Lock()
	inj.idx = idx
	inj.mu.Unlock()
	for _, r := range [][2]int{{0, 200}, {200, 300}, {300, 400}} {
		if err := idx.Add(docs(t, r[0], r[1], 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	deleteAndCommit(t, idx, "p0001", "p0002", "p0250")
	if _, err := idx.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	deleteAndCommit(t, idx, "p0003")
	if _, err := idx.Reorder(context.Background(), ReorderOptions{}); err != nil {
		t.Fatal(err)
	}
	inj.mu.Lock()
	defer inj.mu.Unlock()
	if len(inj.orphans) > 0 {
		t.Fatalf("files created before their ID was claimed: %v", inj.orphans)
	}
	if !inj.created["del"] || !inj.created[segment.SuffixCompound] {
		t.Fatalf("setup: created %v", inj.created)
	}
}

// TestQ08_FinishRechecksMetadataBeforeDeletingAnOutput: a rewrite that
// ends as failed although its output is already in metadata (an error
// reported after the commit point) must not delete that output: finish
// rechecks metadata under its lock and releases instead of abandoning.
func TestQ08_FinishRechecksMetadataBeforeDeletingAnOutput(t *testing.T) {
	fs, idx := threeSegments(t, testOptions())
	defer mustClose(t, idx)
	rw, err := idx.startRewrite("merge", func(s *Snapshot) []SnapshotSegment { return s.Segments })
	if err != nil {
		t.Fatal(err)
	}
	info, r, err := rw.build(context.Background(), func(int, uint32) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.publish(context.Background(), info, r, func(cur []metadata.Segment) (*roaring.Bitmap, error) {
		return rw.concatMasks(cur), nil
	}); err != nil {
		t.Fatal(err)
	}
	rw.finish(false) // the caller saw an error after the commit point
	if o := idx.Manager().OwnersOf(info.ID); !o.Live || o.Retired {
		t.Fatalf("the published output was given up as abandoned: %+v", o)
	}
	checkCommittedFilesExist(t, fs, idx.Metadata())
	checkOwned(t, fs, idx)
}
