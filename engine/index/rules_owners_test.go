package index

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/search"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

func TestL03_IndexingOutputOwnedAtEveryStep(t *testing.T) {
	fs, idx := createMem(t)
	if err := idx.Add(docs(t, 0, 10, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	// An upsert and a delete publish mask generations through the same
	// finalizer: their claims too are released only after Publish.
	if err := idx.Add(docs(t, 0, 2, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.Delete("p0005"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	checkOwned(t, fs, idx)
	if idx.Manager().ActiveOperations() != 0 {
		t.Fatal("claims not released after publication")
	}
	for id := range segFiles(t, fs) {
		if !idx.Manager().OwnersOf(id).Live {
			t.Fatalf("segment %s is not metadata-owned after commit", id)
		}
	}
	// The committed generation's files are all still there: a claim
	// released before metadata took ownership would have let the
	// lifecycle manager delete a committed segment or mask.
	checkCommittedFilesExist(t, fs, idx.Metadata())
	want := visible(t, idx)
	mustClose(t, idx)
	re, err := Open(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, re)
	if q := re.Status().Quarantined; len(q) != 0 {
		t.Fatalf("reopen quarantined committed segments: %+v", q)
	}
	if got := visible(t, re); len(got) != 9 || !reflect.DeepEqual(got, want) {
		t.Fatalf("reopen shows %d documents, want the 9 committed", len(got))
	}
}

// checkCommittedFilesExist fails when a file of a committed segment or
// mask is missing or has another size than metadata records.
func checkCommittedFilesExist(t *testing.T, fs vfs.FS, meta *metadata.Metadata) {
	t.Helper()
	for _, s := range meta.Segments {
		for _, f := range s.Files {
			st, err := fs.Stat(fs.PathJoin(testDir, segid.FileName(s.ID, f.Suffix)))
			if err != nil || st.Size() != f.Size {
				t.Fatalf("committed file %s of segment %s: %v", f.Suffix, s.ID, err)
			}
		}
		if s.Deletes != nil && s.Deletes.ID != 0 {
			if _, err := fs.Stat(fs.PathJoin(testDir, segid.FileName(s.Deletes.ID, "del"))); err != nil {
				t.Fatalf("committed mask %s of segment %s: %v", s.Deletes.ID, s.ID, err)
			}
		}
	}
}

func TestL09_SnapshotRetainsSegmentAndExactMask(t *testing.T) {
	fs, idx := createMem(t)
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 10, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	if _, err := idx.Delete("p0001"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	old, err := idx.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Closed before the index on every path: a failure below must fail the
	// test, not leave the close waiting for this snapshot.
	var closeOld sync.Once
	defer closeOld.Do(old.Close)
	oldMask := old.Segments[0].Meta.Deletes
	if oldMask == nil {
		t.Fatal("delete did not create a mask generation")
	}
	if oldMask.ID == old.Segments[0].Meta.ID {
		t.Fatal("mask shares the data segment's ID")
	}
	if _, err := idx.Delete("p0002"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	// The new generation has a new mask ID; the old one is retired but
	// retained by the old snapshot, which still sees p0002.
	if _, ok := segFiles(t, fs)[oldMask.ID]; !ok {
		t.Fatal("old mask deleted while a snapshot holds it")
	}
	if !old.isLive(0, 2) || old.isLive(0, 1) {
		t.Fatal("old snapshot does not see its exact mask")
	}
	closeOld.Do(old.Close)
	if _, ok := segFiles(t, fs)[oldMask.ID]; ok {
		t.Fatal("old mask kept after the last reader")
	}
	checkOwned(t, fs, idx)
}

func TestL11_RowstatsBelongsToSegmentFileSet(t *testing.T) {
	fs, idx := createMem(t)
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 3, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	var id segid.ID
	for _, seg := range idx.Metadata().Segments {
		id = seg.ID
		found := false
		for _, p := range seg.PartSizes() {
			found = found || p.Suffix == segment.SuffixRowStats
		}
		if sufs := segFiles(t, fs)[seg.ID]; !found || len(sufs) != len(seg.Files) {
			t.Fatalf("segment %s has no rowstats part (%v) or its files on disk are %v", seg.ID, seg.PartSizes(), sufs)
		}
	}
	// Deleting every row retires the segment; rowstats goes with it.
	for _, pk := range []string{"p0000", "p0001", "p0002"} {
		if _, err := idx.Delete(pk); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, idx)
	if sufs, ok := segFiles(t, fs)[id]; ok {
		t.Fatalf("retired segment left files %v", sufs)
	}
}

func TestQ03_ReadOnlyOpenMutatesNothing(t *testing.T) {
	fs, idx := createMem(t)
	if err := idx.Add(docs(t, 0, 5, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	mustClose(t, idx)
	// An orphan and a crashed save's temporary file: the writer's open
	// removes both, a read-only open neither.
	for _, name := range []string{"seg_ff.post", metadata.TempFileName} {
		f, err := fs.Create(fs.PathJoin(testDir, name), vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	before := fs.String()
	ro, err := OpenReadOnly(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(visible(t, ro)); got != 5 {
		t.Fatalf("read-only open sees %d docs", got)
	}
	if err := ro.Add(docs(t, 5, 6, 1)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Add on read-only index: %v", err)
	}
	if err := ro.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := fs.String(); after != before {
		t.Fatalf("read-only open changed the directory:\n%s\nwas:\n%s", after, before)
	}
}

// lockTrace records whether the lock was taken before metadata was read.
type lockTrace struct{ ops []string }

func (l *lockTrace) MaybeError(op errorfs.Op) error {
	switch {
	case op.Kind == errorfs.OpLock:
		l.ops = append(l.ops, "lock")
	case op.Kind == errorfs.OpOpen && strings.HasSuffix(op.Path, metadata.FileName):
		l.ops = append(l.ops, "read-metadata")
	case op.Kind == errorfs.OpList:
		l.ops = append(l.ops, "list")
	}
	return nil
}
func (l *lockTrace) String() string { return "lockTrace" }

func TestQ04_WriterLocksBeforeReadingMetadata(t *testing.T) {
	mem, idx := createMem(t)
	if _, err := Open(mem, testDir, testOptions()); !errors.Is(err, ErrLocked) {
		t.Fatalf("second writer: %v", err)
	}
	mustClose(t, idx)
	tr := &lockTrace{}
	idx, err := Open(errorfs.Wrap(mem, tr), testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if want := []string{"lock", "read-metadata", "list"}; !reflect.DeepEqual(tr.ops[:3], want) {
		t.Fatalf("open order %v, want %v", tr.ops, want)
	}
}

func TestQ05_MissingFileQuarantinesNotDrops(t *testing.T) {
	fs, idx := createMem(t)
	if err := idx.Add(docs(t, 0, 5, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	if err := idx.Add(docs(t, 5, 9, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	// A deletion in the victim gives it a mask file that outlives the
	// removal of its segment file.
	deleteAndCommit(t, idx, "p0000")
	mustClose(t, idx)
	meta, _ := metadata.Load(fs, testDir)
	victim := meta.Segments[0]
	if victim.Deletes == nil {
		t.Fatal("setup: the victim has no deletion mask")
	}
	if err := fs.Remove(fs.PathJoin(testDir, segid.FileName(victim.ID, segment.SuffixCompound))); err != nil {
		t.Fatal(err)
	}
	idx, err := Open(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	st := idx.Status()
	if len(st.Quarantined) != 1 || st.Quarantined[0].Segment != victim.ID || st.Quarantined[0].Reason == "" {
		t.Fatalf("quarantine %+v", st.Quarantined)
	}
	if st.Documents != uint64(9-victim.Documents) || len(st.Segments) != 2 {
		t.Fatalf("status %+v", st)
	}
	if _, ok := segFiles(t, fs)[victim.Deletes.ID]; !ok {
		t.Fatal("the sweep deleted the remaining files of a quarantined live segment")
	}
	// Still in metadata after another commit.
	if err := idx.Add(docs(t, 9, 10, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	found := false
	for _, s := range idx.Metadata().Segments {
		found = found || s.ID == victim.ID
	}
	if !found {
		t.Fatal("a later commit dropped the quarantined segment from metadata")
	}
}

func TestUpsertReplacesOldVersionAcrossAndWithinGenerations(t *testing.T) {
	_, idx := createMem(t)
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 20, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	// v2 of 0..9, then v3 of 0..4 in the same generation.
	if err := idx.Add(docs(t, 0, 10, 2)); err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(docs(t, 0, 5, 3)); err != nil {
		t.Fatal(err)
	}
	res := mustCommit(t, idx)
	if res.Documents != 20 {
		t.Fatalf("%d docs after upserts, want 20", res.Documents)
	}
	vis := visible(t, idx)
	for pk, stored := range vis {
		var d struct{ N int }
		if err := json.Unmarshal([]byte(stored), &d); err != nil {
			t.Fatal(err)
		}
		var i int
		if _, err := fmtSscan(pk, &i); err != nil {
			t.Fatal(err)
		}
		want := 1
		switch {
		case i < 5:
			want = 3
		case i < 10:
			want = 2
		}
		if d.N != want {
			t.Fatalf("%s has version %d, want %d", pk, d.N, want)
		}
	}
}

func TestDeleteByPrimaryKey(t *testing.T) {
	_, idx := createMem(t)
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 10, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	for _, c := range []struct {
		pk   string
		want bool
	}{{"p0003", true}, {"p0003", false}, {"nope", false}} {
		got, err := idx.Delete(c.pk)
		if err != nil || got != c.want {
			t.Fatalf("Delete(%s) = %v, %v; want %v", c.pk, got, err, c.want)
		}
	}
	// Added then deleted in one generation: never visible.
	if err := idx.Add(docs(t, 10, 11, 1)); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Delete("p0010"); !got {
		t.Fatal("delete of a pending add reported nothing deleted")
	}
	mustCommit(t, idx)
	vis := visible(t, idx)
	if _, ok := vis["p0003"]; ok || len(vis) != 9 {
		t.Fatalf("after deletes %d visible, p0003 present=%v", len(vis), ok)
	}
	res, err := searchQ(t, idx, `+id:p0003`)
	if err != nil || res.TotalHits != 0 {
		t.Fatalf("deleted doc found by search: %+v %v", res, err)
	}
}

func searchQ(t testing.TB, idx *Index, q string) (search.Result, error) {
	snap, err := idx.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	raw, _ := json.Marshal(q)
	return snap.Search(context.Background(), search.Request{Query: raw, Limit: 10})
}

func TestSearchAfterReopen(t *testing.T) {
	fs, idx := createMem(t)
	if err := idx.Add(docs(t, 0, 200, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	before, err := searchQ(t, idx, `light "refraction of" -colours`)
	if err != nil || before.TotalHits == 0 {
		t.Fatalf("search: %+v %v", before, err)
	}
	mustClose(t, idx)
	idx, err = Open(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	after, err := searchQ(t, idx, `light "refraction of" -colours`)
	if err != nil || after.TotalHits != before.TotalHits || len(after.Hits) != len(before.Hits) {
		t.Fatalf("after reopen %+v, before %+v (%v)", after.TotalHits, before.TotalHits, err)
	}
	for i := range after.Hits {
		if string(after.Hits[i].Fields) != string(before.Hits[i].Fields) {
			t.Fatalf("hit %d differs after reopen", i)
		}
	}
}

func TestIDsNeverReused(t *testing.T) {
	fs, idx := createMem(t)
	seen := map[segid.ID]bool{}
	for round := 0; round < 4; round++ {
		if err := idx.Add(docs(t, 0, 5, round)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
		for id := range segFiles(t, fs) {
			seen[id] = true
		}
	}
	mustClose(t, idx)
	// An orphan with a high ID appears; the next IDs go past it.
	f, _ := fs.Create(fs.PathJoin(testDir, "seg_40.post"), vfs.WriteCategoryUnspecified)
	f.Close()
	idx, err := Open(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 5, 9)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	var ids []segid.ID
	for id := range segFiles(t, fs) {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if ids[len(ids)-1] <= 0x40 {
		t.Fatalf("new ids %v did not go past the swept orphan 40", ids)
	}
}

// TestQ06_QuarantineDuringCloseKeepsSnapshotRefcountsExact: a rewrite's
// preflight may quarantine a source while Close waits for a running
// commit. The current snapshot then belongs to close: quarantine must not
// release it, or its reference count ends below zero and its tracker
// references are dropped while the commit still reads it.
func TestQ06_QuarantineDuringCloseKeepsSnapshotRefcountsExact(t *testing.T) {
	armed := make(chan struct{})
	reached, release := make(chan struct{}), make(chan struct{})
	opts := testOptions()
	opts.Hooks.BeforePublish = func() error {
		select {
		case <-armed:
			close(reached)
			<-release
		default:
		}
		return nil
	}
	fs := vfs.NewMem()
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(docs(t, 0, 10, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	victim := idx.Metadata().Segments[0].ID
	if err := idx.Add(docs(t, 10, 20, 1)); err != nil {
		t.Fatal(err)
	}
	close(armed)
	committed := make(chan error, 1)
	go func() { _, err := idx.Commit(context.Background()); committed <- err }()
	<-reached
	idx.mu.Lock()
	snap := idx.mu.current
	idx.mu.Unlock()
	closed := make(chan error, 1)
	go func() { closed <- idx.Close(context.Background()) }()
	eventually(t, "close to begin", func() bool {
		idx.mu.Lock()
		defer idx.mu.Unlock()
		return idx.mu.closed
	})
	idx.quarantine(victim, "corrupt source found by a rewrite preflight")
	if n := snap.refs.Load(); n != 2 {
		t.Fatalf("quarantine during close released the current snapshot: refs %d, want 2 (index and commit)", n)
	}
	close(release)
	if err := <-committed; err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	if n := snap.refs.Load(); n != 0 {
		t.Fatalf("snapshot refcount %d after close, want 0", n)
	}
	checkOwned(t, fs, idx)
}

// TestL03_DegradedCommitStillOwnsItsOutputs: a commit whose directory
// fsync after the rename failed is committed (C04): metadata takes
// ownership of its segments and masks before their claims are released,
// as after a clean save, so none of its files is deleted.
func TestL03_DegradedCommitStillOwnsItsOutputs(t *testing.T) {
	inj := &failDirSync{}
	fs := errorfs.Wrap(vfs.NewMem(), inj)
	idx, err := Create(fs, testDir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 10, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	if err := idx.Add(docs(t, 0, 2, 2)); err != nil { // upserts: a new mask
		t.Fatal(err)
	}
	inj.armed = true
	res, err := idx.Commit(context.Background())
	inj.armed = false
	if err != nil || !res.DurabilityDegraded {
		t.Fatalf("setup: commit %+v %v, want a degraded commit", res, err)
	}
	meta := idx.Metadata()
	for _, id := range meta.IDs() {
		if !idx.Manager().OwnersOf(id).Live {
			t.Fatalf("committed %s is not metadata-owned after a degraded commit", id)
		}
	}
	checkCommittedFilesExist(t, fs, meta)
	checkOwned(t, fs, idx)
}
