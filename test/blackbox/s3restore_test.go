package blackbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/summadev/summa/internal/s3test"
)

// TestS3RestoreUnderAnotherNameIntoAVolumeRoot restores a backup of index
// "orig" as index "copy" (--from-index) into a data directory that is
// like the root of a fresh ext4 volume, holding only an empty lost+found
// (the operator's restore Job mounts a new volume there): it counts as
// empty, is left alone, and a server started there serves "copy" with
// every document of the backup and the same search answer. A directory
// holding anything else is refused, touched in nothing.
func TestS3RestoreUnderAnotherNameIntoAVolumeRoot(t *testing.T) {
	needBinary(t)
	st := s3test.Start(t)
	ps := paragraphs(t)
	const prefix = "renamed"
	s := startServer(t, t.TempDir(), append(st.Flags(prefix), "--optimizer-threads", "0")...)
	want := fillIndex(t, s, ps, "orig", 2, 200)
	b := waitBackup(t, s, "orig", startBackup(t, s, "orig").ID, time.Minute)
	if b.State != "completed" {
		t.Fatalf("backup: %+v", b)
	}
	const query = "light colours"
	wantHits := s.Search("orig", query, 10).TotalHits

	// The root of a fresh ext4 volume.
	root := filepath.Join(t.TempDir(), "volume")
	if err := os.MkdirAll(filepath.Join(root, "lost+found"), 0o700); err != nil {
		t.Fatal(err)
	}
	rep, stderr, code := runRestore(t, st, prefix, root, "copy", b.ID, "--from-index", "orig")
	if code != 0 || rep.Index != "copy" || rep.FromIndex != "orig" || rep.Backup != b.ID || rep.Documents != uint64(len(want)) {
		t.Fatalf("restore of orig as copy: exit %d, %+v\n%s", code, rep, stderr)
	}
	if fi, err := os.Stat(filepath.Join(root, "lost+found")); err != nil || !fi.IsDir() {
		t.Fatalf("restore did not leave lost+found alone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "orig")); !os.IsNotExist(err) {
		t.Fatalf("restore as copy wrote a directory orig: %v", err)
	}
	checkRestored(t, root, "copy", want, query, wantHits)

	// Without --from-index the new name has no backup: a clear failure,
	// nothing left behind.
	other := filepath.Join(t.TempDir(), "other")
	if rep, stderr, code := runRestore(t, st, prefix, other, "copy", ""); code != 1 || !strings.Contains(rep.Error, "no backup") {
		t.Fatalf("restore of an index without backups: exit %d %+v\n%s", code, rep, stderr)
	}
	if ents, err := os.ReadDir(other); err == nil && len(ents) != 0 {
		t.Fatalf("a failed restore left %v", dirNames(other))
	}
	// Anything but lost+found makes the directory not empty.
	busy := filepath.Join(t.TempDir(), "busy")
	if err := os.MkdirAll(filepath.Join(busy, "lost+found"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(busy, "notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runRestore(t, st, prefix, busy, "copy", b.ID, "--from-index", "orig"); code != 2 || !strings.Contains(stderr, "notes.txt") {
		t.Fatalf("restore into a directory holding a file: exit %d\n%s", code, stderr)
	}
	if names := dirNames(busy); len(names) != 2 {
		t.Fatalf("the refused restore changed the directory: %v", names)
	}
}
