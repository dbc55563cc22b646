package lifecycle

import (
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

const dir = "idx"

func newTestManager(t *testing.T, live []segid.ID, next segid.ID) (*Manager, vfs.FS) {
	t.Helper()
	fs := vfs.NewMem()
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return NewManager(fs, dir, live, next, Options{}), fs
}

func writeFiles(t *testing.T, fs vfs.FS, id segid.ID, suffixes ...string) {
	t.Helper()
	for _, s := range suffixes {
		f, err := fs.Create(fs.PathJoin(dir, segid.FileName(id, s)), vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("x"))
		f.Close()
	}
}

func listDir(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

func hasFilesOf(t *testing.T, fs vfs.FS, id segid.ID) bool {
	for _, n := range listDir(t, fs) {
		if fid, _, ok := segid.ParseFileName(n); ok && fid == id {
			return true
		}
	}
	return false
}

func TestL01_EveryFileSetHasAnOwnerThroughIndexing(t *testing.T) {
	m, fs := newTestManager(t, nil, 1)
	c, err := m.Claim("indexing")
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, fs, c.ID, "post", "terms")
	for _, step := range []string{"claimed", "published", "released"} {
		switch step {
		case "published":
			m.Publish([]segid.ID{c.ID})
		case "released":
			c.Release()
		}
		if !m.OwnersOf(c.ID).Owned() {
			t.Fatalf("%s: files of %s have no owner", step, c.ID)
		}
		if res, _ := m.Sweep(); len(res.Deleted) != 0 {
			t.Fatalf("%s: sweep deleted owned files %v", step, res.Deleted)
		}
	}
}

func TestL02_CleanupDeletesOnlyUnownedIDs(t *testing.T) {
	m, fs := newTestManager(t, []segid.ID{1}, 2)
	writeFiles(t, fs, 1, "post")
	m.Ref(1)
	m.Publish(nil) // retired, but a reader holds it
	if !hasFilesOf(t, fs, 1) {
		t.Fatal("retired segment deleted while a reader holds it")
	}
	m.Unref(1)
	if hasFilesOf(t, fs, 1) {
		t.Fatal("retired segment kept after its last reader dropped")
	}
	// An active operation is an owner too: a rewrite source retired while
	// the rewrite still holds its claim, with no reader, stays.
	writeFiles(t, fs, 2, "post")
	m.Publish([]segid.ID{2})
	claims, err := m.ClaimExisting("merge", 2)
	if err != nil {
		t.Fatal(err)
	}
	m.Publish(nil)
	if !hasFilesOf(t, fs, 2) {
		t.Fatal("retired segment deleted while an operation holds its claim")
	}
	ReleaseAll(claims)
	if hasFilesOf(t, fs, 2) {
		t.Fatal("retired segment kept after its claim was released")
	}
}

func TestL03_NextOwnerInstalledBeforeRelease(t *testing.T) {
	m, fs := newTestManager(t, nil, 1)
	c, _ := m.Claim("indexing")
	writeFiles(t, fs, c.ID, "post")
	m.Publish([]segid.ID{c.ID})
	c.Release()
	if !hasFilesOf(t, fs, c.ID) || !m.OwnersOf(c.ID).Live {
		t.Fatal("published output lost its files after releasing the claim")
	}
	// Releasing before publishing deletes: the order matters.
	c2, _ := m.Claim("indexing")
	writeFiles(t, fs, c2.ID, "post")
	c2.Release()
	if hasFilesOf(t, fs, c2.ID) {
		t.Fatal("unpublished, released output kept its files")
	}
}

func TestL04_RewriteRetiresSourcesAfterLastReader(t *testing.T) {
	m, fs := newTestManager(t, []segid.ID{1, 2}, 3)
	writeFiles(t, fs, 1, "post")
	writeFiles(t, fs, 2, "post")
	m.Ref(1, 2) // a snapshot
	srcs, err := m.ClaimExisting("merge", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := m.Claim("merge")
	writeFiles(t, fs, out.ID, "post")
	m.Publish([]segid.ID{out.ID})
	ReleaseAll(srcs)
	out.Release()
	if !hasFilesOf(t, fs, 1) || !hasFilesOf(t, fs, 2) {
		t.Fatal("sources deleted while a reader holds them")
	}
	m.Unref(1, 2)
	if hasFilesOf(t, fs, 1) || hasFilesOf(t, fs, 2) {
		t.Fatal("sources kept after the last reader")
	}
	if !hasFilesOf(t, fs, out.ID) {
		t.Fatal("merge output deleted")
	}
}

func TestL05_AbortDeletesThroughTracker(t *testing.T) {
	m, fs := newTestManager(t, nil, 1)
	c, _ := m.Claim("indexing")
	writeFiles(t, fs, c.ID, "post", "store")
	c.Abandon()
	if hasFilesOf(t, fs, c.ID) {
		t.Fatal("abandoned output kept its files")
	}
	if o := m.OwnersOf(c.ID); o.Owned() || o.Retired {
		t.Fatalf("abandoned output still tracked: %+v", o)
	}
}

func TestL06_PanicCleanupIsIdempotent(t *testing.T) {
	m, fs := newTestManager(t, nil, 1)
	c, _ := m.Claim("indexing")
	func() {
		defer func() { recover() }()
		defer c.Abandon()
		writeFiles(t, fs, c.ID, "post")
		panic("builder crashed")
	}()
	c.Abandon()
	c.Release()
	if hasFilesOf(t, fs, c.ID) || m.ActiveOperations() != 0 {
		t.Fatal("panic left files or an active claim")
	}
}

func TestL07_OutputClaimedBeforeFirstWrite(t *testing.T) {
	m, fs := newTestManager(t, nil, 1)
	c, _ := m.Claim("indexing")
	// A partial builder: files exist, nothing published.
	writeFiles(t, fs, c.ID, "post")
	if res, _ := m.Sweep(); len(res.Deleted) != 0 || !hasFilesOf(t, fs, c.ID) {
		t.Fatal("sweep deleted a claimed partial output")
	}
}

func TestL08_OverlappingRewritesImpossible(t *testing.T) {
	m, _ := newTestManager(t, []segid.ID{1, 2, 3}, 4)
	if _, err := m.ClaimExisting("merge", 1, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ClaimExisting("reorder", 3, 2); err == nil {
		t.Fatal("a second rewrite claimed a source already held")
	}
	if o := m.OwnersOf(3); o.Active != "" {
		t.Fatal("a failed claim left a partial claim behind")
	}
}

func TestQ01_SweepDeletesOnlyOrphans(t *testing.T) {
	m, fs := newTestManager(t, []segid.ID{1}, 5)
	writeFiles(t, fs, 1, "post")
	writeFiles(t, fs, 2, "post")
	writeFiles(t, fs, 3, "post")
	writeFiles(t, fs, 4, "post")
	m.Ref(3)
	c, _ := m.Claim("indexing")
	writeFiles(t, fs, c.ID, "post")
	res, err := m.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 2 || res.Deleted[0] != 2 || res.Deleted[1] != 4 {
		t.Fatalf("swept %v, want [2 4]", res.Deleted)
	}
}

func TestQ02_SweepRemovesEverySuffixAndIgnoresMalformedNames(t *testing.T) {
	m, fs := newTestManager(t, nil, 1)
	writeFiles(t, fs, 0x1a, "post", "legacy-partial", "tmp.1")
	for _, name := range []string{"seg_XYZ.post", "seg_.post", "seg_1A.post", "seg_12", "notes.txt", "seg_12345678901234567.post"} {
		f, _ := fs.Create(fs.PathJoin(dir, name), vfs.WriteCategoryUnspecified)
		f.Close()
	}
	if _, err := m.Sweep(); err != nil {
		t.Fatal(err)
	}
	got := listDir(t, fs)
	want := []string{"notes.txt", "seg_.post", "seg_12", "seg_12345678901234567.post", "seg_1A.post", "seg_XYZ.post"}
	if len(got) != len(want) {
		t.Fatalf("after sweep %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after sweep %v, want %v", got, want)
		}
	}
	if id, _ := m.Claim("x"); id.ID <= 0x1a {
		t.Fatalf("ID %s reused after the sweep saw 1a on disk", id.ID)
	}
}

func TestClaimAfterCloseFails(t *testing.T) {
	m, _ := newTestManager(t, nil, 1)
	m.Close()
	if _, err := m.Claim("indexing"); err != ErrClosed {
		t.Fatalf("Claim after Close: %v", err)
	}
}
