package index

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/segid"
)

// replicate copies leader's committed generation into follower the way a
// follower does (PinCommitted on one side, PrepareIncoming, Create,
// Publish on the other); mangle, when set, may change a file's bytes in
// transit. It returns Publish's error (the incoming generation abandoned).
func replicate(t *testing.T, lfs vfs.FS, leader, follower *Index, mangle func(name string, b []byte)) error {
	t.Helper()
	in, unpin := prepareCopy(t, leader, follower)
	defer unpin()
	for _, f := range in.Files() {
		b := leaderFile(t, lfs, f.Name)
		if mangle != nil {
			mangle(f.Name, b)
		}
		dst, err := in.Create(f.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.Publish(context.Background()); err != nil {
		in.Abandon()
		return err
	}
	return nil
}

// prepareCopy pins leader's committed generation and prepares its copy
// into follower; unpin releases the pin.
func prepareCopy(t *testing.T, leader, follower *Index) (in *Incoming, unpin func()) {
	t.Helper()
	snap, meta, err := leader.PinCommitted()
	if err != nil {
		t.Fatal(err)
	}
	in, err = follower.PrepareIncoming(meta)
	if err != nil {
		snap.Close()
		t.Fatal(err)
	}
	return in, func() { snap.Close() }
}

// leaderFile returns the bytes of the leader's file name.
func leaderFile(t *testing.T, lfs vfs.FS, name string) []byte {
	t.Helper()
	src, err := lfs.Open(lfs.PathJoin(testDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	b, err := io.ReadAll(src)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// createFollower creates an empty index of the test schema on fs.
func createFollower(t *testing.T, fs vfs.FS) *Index {
	t.Helper()
	idx, err := Create(fs, testDir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// sameVisible fails unless both indexes show the same documents.
func sameVisible(t *testing.T, want, got *Index) {
	t.Helper()
	w, g := visible(t, want), visible(t, got)
	if len(w) != len(g) {
		t.Fatalf("follower shows %d documents, leader %d", len(g), len(w))
	}
	for pk, v := range w {
		if g[pk] != v {
			t.Fatalf("document %s differs on the follower", pk)
		}
	}
}

// TestF02_IncomingFilesClaimedBeforeFirstByte: every seg_ file a follower
// creates for a leader's generation (flushes, masks, a merge output) is
// owned when it is created, and no claim survives publication.
func TestF02_IncomingFilesClaimedBeforeFirstByte(t *testing.T) {
	lfs, leader := createMem(t)
	defer mustClose(t, leader)
	inj := &ownedAtCreate{created: map[string]bool{}}
	follower := createFollower(t, errorfs.Wrap(vfs.NewMem(), inj))
	defer mustClose(t, follower)
	inj.mu.Lock()
	inj.idx = follower
	inj.mu.Unlock()
	for round := range 3 {
		if err := leader.Add(docs(t, round*20, round*20+20, round)); err != nil {
			t.Fatal(err)
		}
		if _, err := leader.Delete("p0001"); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, leader)
		if err := replicate(t, lfs, leader, follower, nil); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if _, err := leader.ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if err := replicate(t, lfs, leader, follower, nil); err != nil {
		t.Fatal(err)
	}
	inj.mu.Lock()
	defer inj.mu.Unlock()
	if len(inj.orphans) > 0 {
		t.Fatalf("files created without an owner: %v", inj.orphans)
	}
	if n := follower.Manager().ActiveOperations(); n != 0 {
		t.Fatalf("%d claims left after publication", n)
	}
	sameVisible(t, leader, follower)
}

// TestF03_CorruptDownloadIsNeverPublished: a byte flipped in transit fails
// the full validation; the follower keeps serving its generation, the
// damaged file is deleted, and the next clean copy publishes.
func TestF03_CorruptDownloadIsNeverPublished(t *testing.T) {
	lfs, leader := createMem(t)
	defer mustClose(t, leader)
	ffs := vfs.NewMem()
	follower := createFollower(t, ffs)
	defer mustClose(t, follower)
	if err := leader.Add(docs(t, 0, 30, 0)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, leader)
	if err := replicate(t, lfs, leader, follower, nil); err != nil {
		t.Fatal(err)
	}
	before := follower.Metadata().Generation
	if err := leader.Add(docs(t, 30, 60, 0)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, leader)
	flipped := false
	err := replicate(t, lfs, leader, follower, func(name string, b []byte) {
		if !flipped && len(b) > 0 {
			b[len(b)/2] ^= 0x5a
			flipped = true
		}
	})
	if err == nil || !flipped {
		t.Fatalf("a corrupt copy was published (flipped %v)", flipped)
	}
	if g := follower.Metadata().Generation; g != before {
		t.Fatalf("follower generation %d after a refused copy, want %d", g, before)
	}
	follower.Manager().WaitDeletes()
	live := map[segid.ID]bool{}
	for _, id := range follower.Metadata().IDs() {
		live[id] = true
	}
	for id := range segFiles(t, ffs) {
		if !live[id] {
			t.Fatalf("the refused copy's files of %s are still on disk", id)
		}
	}
	if err := replicate(t, lfs, leader, follower, nil); err != nil {
		t.Fatal(err)
	}
	sameVisible(t, leader, follower)
}

// TestF04_FollowerPublishesTheLeadersGenerationAndPromotionAllocatesAbove:
// the follower's metadata is the leader's generation (same number, same
// IDs), a reopen serves it at once, and the same directory opened as a
// leader allocates IDs above every copied one.
func TestF04_FollowerPublishesTheLeadersGenerationAndPromotionAllocatesAbove(t *testing.T) {
	lfs, leader := createMem(t)
	defer mustClose(t, leader)
	ffs := vfs.NewMem()
	follower := createFollower(t, ffs)
	if err := leader.Add(docs(t, 0, 40, 0)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, leader)
	if _, err := leader.Delete("p0003"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, leader)
	if err := replicate(t, lfs, leader, follower, nil); err != nil {
		t.Fatal(err)
	}
	lm, fm := leader.Metadata(), follower.Metadata()
	if lm.Generation != fm.Generation || len(lm.IDs()) != len(fm.IDs()) {
		t.Fatalf("follower generation %d %v, leader %d %v", fm.Generation, fm.IDs(), lm.Generation, lm.IDs())
	}
	if _, err := follower.PrepareIncoming(lm); !errors.Is(err, ErrNotNewer) {
		t.Fatalf("the same generation again: %v, want ErrNotNewer", err)
	}
	mustClose(t, follower)
	promoted, err := Open(ffs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, promoted)
	sameVisible(t, leader, promoted)
	if err := promoted.Add(docs(t, 40, 50, 0)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, promoted)
	var maxCopied segid.ID
	for _, id := range lm.IDs() {
		maxCopied = max(maxCopied, id)
	}
	for _, id := range promoted.Metadata().IDs() {
		if id > maxCopied {
			return
		}
	}
	t.Fatalf("the promoted index's commit allocated no ID above %s: %v", maxCopied, promoted.Metadata().IDs())
}
