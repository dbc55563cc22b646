package blackbox

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/summadev/summa/internal/testing/s3test"
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

// TestS3BackupKilledAtRandomPointsEveryListedBackupRestores: the engine is
// killed (SIGKILL) at a random moment of each of many uploads, with
// documents committed between them and, every other time, a backup that
// completes first, so that the bucket holds complete backups of several
// generations beside the objects of cut ones. After the last restart,
// every backup the engine lists restores with the real `summa-server
// restore`, and a server there serves exactly the documents its manifest
// counts. 6 kills (SUMMA_LONG=1: 30).
func TestS3BackupKilledAtRandomPointsEveryListedBackupRestores(t *testing.T) {
	needBinary(t)
	st := s3test.Start(t)
	ps := paragraphs(t)
	const index, prefix = "killed", "randomkill"
	dir := t.TempDir()
	flags := append(st.Flags(prefix), "--optimizer-threads", "0", "--s3-upload-bytes-per-second", "2MiB")
	s := startServer(t, dir, flags...)
	fillIndex(t, s, ps, index, 3, 200)
	kills := 6
	if longMode() {
		kills = 30
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 30))
	completed := 0
	for k := range kills {
		docs := makeDocs(ps, fmt.Sprintf("k%d-", k), 0, 40)
		s.Ingest(index, docs)
		s.Commit(index)
		if k%2 == 1 {
			// This generation's backup completes before the next is cut.
			if b := waitBackup(t, s, index, startBackup(t, s, index).ID, 2*time.Minute); b.State != "completed" {
				t.Fatalf("backup %d: %+v", k, b)
			}
			completed++
		}
		startBackup(t, s, index)
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		s.Kill()
		s = startServer(t, dir, flags...)
	}
	// One backup that completes, so that the list is never empty.
	if b := waitBackup(t, s, index, startBackup(t, s, index).ID, 2*time.Minute); b.State != "completed" {
		t.Fatalf("backup after the kills: %+v", b)
	}
	list := listBackups(t, s, index)
	s.Stop()
	if ms := manifests(t, st, prefix, index); len(ms) != len(list) {
		t.Fatalf("%d manifests in the bucket, %d backups listed", len(ms), len(list))
	}
	if len(list) < completed+1 {
		t.Fatalf("%d backups listed, at least %d completed", len(list), completed+1)
	}
	t.Logf("%d kills; %d backups listed (%d completed between the kills, and the last)", kills, len(list), completed)
	for _, b := range list {
		restored := filepath.Join(t.TempDir(), "restored")
		rep, stderr, code := runRestore(t, st, prefix, restored, index, b.ID)
		if code != 0 || rep.Documents != b.Documents || rep.Generation != b.Generation {
			t.Fatalf("restore of listed backup %+v: exit %d %+v\n%s", b, code, rep, stderr)
		}
		r := startServer(t, restored, "--optimizer-threads", "0")
		if got := r.LiveDocs(index); uint64(len(got)) != b.Documents {
			t.Fatalf("restored backup %s serves %d documents, its manifest counts %d", b.ID, len(got), b.Documents)
		}
		r.Stop()
	}
}
