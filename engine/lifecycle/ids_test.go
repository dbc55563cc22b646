package lifecycle

import (
	"errors"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

// TestL01_ClaimedIDsNeverReuseALiveOrSeenID: a claim's ID is new, above every
// live ID and every seg_ ID a sweep saw on disk; otherwise a new output
// would write into a file set another owner holds.
func TestL01_ClaimedIDsNeverReuseALiveOrSeenID(t *testing.T) {
	// A live ID equal to the persisted next ID (a metadata written by a
	// version that lagged) moves the next ID past it.
	m, _ := newTestManager(t, []segid.ID{3}, 3)
	a, _ := m.Claim("indexing")
	b, _ := m.Claim("indexing")
	if a.ID != 4 || b.ID != 5 {
		t.Fatalf("claims got %v, %v after live 3 with next 3; want 4, 5", a.ID, b.ID)
	}

	// An orphan on disk at exactly the next ID, and one below it: the
	// sweep reports the largest and no claim reuses either.
	m, fs := newTestManager(t, nil, 9)
	writeFiles(t, fs, 4, "post")
	writeFiles(t, fs, 9, "post")
	res, err := m.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if !res.SeenAny || res.MaxSeen != 9 {
		t.Fatalf("sweep saw %v (any %v), want 9", res.MaxSeen, res.SeenAny)
	}
	if c, _ := m.Claim("indexing"); c.ID != 10 {
		t.Fatalf("claim after a sweep that saw 9 got %v, want 10", c.ID)
	}
}

// failingRemoveFS refuses to remove the files of some IDs.
type failingRemoveFS struct {
	vfs.FS
	// ids' files cannot be removed.
	ids []segid.ID
}

func (f failingRemoveFS) Remove(name string) error {
	if id, _, ok := segid.ParseFileName(f.PathBase(name)); ok && slices.Contains(f.ids, id) {
		return errors.New("injected remove failure")
	}
	return f.FS.Remove(name)
}

// TestL02_FailedDeletionStaysRetiredForTheNextSweep: a deletion that fails
// leaves the ID retired (tracker-owned) and the sweep reports the failure;
// the next sweep, once removal works, deletes it.
func TestL02_FailedDeletionStaysRetiredForTheNextSweep(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range []segid.ID{3, 5, 6} {
		writeFiles(t, mem, id, "post", "terms")
	}
	m := NewManager(failingRemoveFS{FS: mem, ids: []segid.ID{6, 3}}, dir, []segid.ID{3, 5, 6}, 8, Options{})
	m.Publish(nil) // all three retire; only 5 can be deleted
	if got := m.Retired(); !slices.Equal(got, []segid.ID{3, 6}) {
		t.Fatalf("retired after failed deletions: %v, want [3 6]", got)
	}
	if !hasFilesOf(t, mem, 3) || !hasFilesOf(t, mem, 6) || hasFilesOf(t, mem, 5) {
		t.Fatal("files of 3 and 6 must stay (removal failed), those of 5 must go")
	}

	// A sweep (the next open) over the same failing disk reports it.
	m = NewManager(failingRemoveFS{FS: mem, ids: []segid.ID{6}}, dir, nil, 8, Options{})
	res, err := m.Sweep()
	if err == nil {
		t.Fatal("sweep reported success although orphan 6 could not be deleted")
	}
	if !slices.Equal(res.Deleted, []segid.ID{3}) || !hasFilesOf(t, mem, 6) {
		t.Fatalf("sweep deleted %v, want [3] (6 still on disk)", res.Deleted)
	}

	// Once removal works, the next sweep deletes it.
	m = NewManager(mem, dir, nil, 8, Options{})
	res, err = m.Sweep()
	if err != nil || !slices.Equal(res.Deleted, []segid.ID{6}) || hasFilesOf(t, mem, 6) {
		t.Fatalf("next sweep: deleted %v, err %v", res.Deleted, err)
	}
}

// TestL01_IncomingIDsAreNeverClaimedAgain: the IDs a follower claims as
// incoming (a leader's, at or above the next ID) move the next ID past
// the largest, so no later claim reuses one, and an incoming ID already
// owned is refused.
func TestL01_IncomingIDsAreNeverClaimedAgain(t *testing.T) {
	m, _ := newTestManager(t, nil, 3)
	in, err := m.ClaimIncoming("follow", 3, 5)
	if err != nil || len(in) != 2 || in[0].ID != 3 || in[1].ID != 5 {
		t.Fatalf("incoming 3, 5: %v, %v", in, err)
	}
	if c, _ := m.Claim("indexing"); c.ID != 6 {
		t.Fatalf("claim after incoming 3, 5 with next 3 got %v, want 6", c.ID)
	}
	if _, err := m.ClaimIncoming("follow", 6); !errors.Is(err, ErrAlreadyClaimed) {
		t.Fatalf("incoming 6, claimed by the indexer: %v, want ErrAlreadyClaimed", err)
	}
	// At exactly the next ID.
	if _, err := m.ClaimIncoming("follow", 7); err != nil {
		t.Fatal(err)
	}
	if c, _ := m.Claim("indexing"); c.ID != 8 {
		t.Fatalf("claim after incoming 7 with next 7 got %v, want 8", c.ID)
	}
}
