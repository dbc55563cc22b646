package index

import (
	"context"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// writeIncoming creates name in in with b.
func writeIncoming(t *testing.T, in *Incoming, name string, b []byte) {
	t.Helper()
	dst, err := in.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Write(append([]byte(nil), b...)); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestF03_EarlyCheckRefusesCorruptFilesAndForgetsRewrittenOnes: Check,
// the full validation of a segment as its last file arrives, refuses a
// corrupt file; and a file created again after its segment passed Check
// is validated again by Publish, so bytes written after the check are
// never published unverified.
func TestF03_EarlyCheckRefusesCorruptFilesAndForgetsRewrittenOnes(t *testing.T) {
	lfs, leader := createMem(t)
	defer mustClose(t, leader)
	follower := createFollower(t, vfs.NewMem())
	defer mustClose(t, follower)
	if err := leader.Add(docs(t, 0, 40, 0)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, leader)
	if _, err := leader.Delete("p0003"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, leader)
	snap, meta, err := leader.PinCommitted()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	files := map[string][]byte{}
	for _, f := range CommittedFiles(meta) {
		r, err := lfs.Open(lfs.PathJoin(testDir, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		if files[f.Name], err = io.ReadAll(r); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	corrupt := func(b []byte) []byte {
		c := append([]byte(nil), b...)
		c[len(c)/2] ^= 0x5a
		return c
	}
	ctx := context.Background()

	// A corrupt file: Check refuses it.
	in, err := follower.PrepareIncoming(meta)
	if err != nil {
		t.Fatal(err)
	}
	var refused bool
	for i, f := range in.Files() {
		b := files[f.Name]
		if i == 0 {
			b = corrupt(b)
		}
		writeIncoming(t, in, f.Name, b)
		if err := in.Check(ctx, f.Name); err != nil {
			refused = true
			break
		}
	}
	in.Abandon()
	if !refused {
		t.Fatal("Check accepted a corrupt file")
	}
	follower.Manager().WaitDeletes()

	// Every file passes Check, then one is written again, corrupt,
	// without a Check: Publish validates it again and refuses it.
	if in, err = follower.PrepareIncoming(meta); err != nil {
		t.Fatal(err)
	}
	all := in.Files()
	for _, f := range all {
		writeIncoming(t, in, f.Name, files[f.Name])
		if err := in.Check(ctx, f.Name); err != nil {
			t.Fatalf("Check refused a sound file %s: %v", f.Name, err)
		}
	}
	segs := earlyReaders(in)
	if segs == 0 {
		t.Fatal("Check opened no reader for the segments it validated")
	}
	writeIncoming(t, in, all[0].Name, corrupt(files[all[0].Name]))
	if got := earlyReaders(in); got != segs-1 {
		t.Fatalf("a file written again left %d readers of %d open, want its segment's closed", got, segs)
	}
	if _, err := in.Publish(ctx); err == nil {
		t.Fatal("a file rewritten after its check was published without a new validation")
	}
	in.Abandon()
	if got := earlyReaders(in); got != 0 {
		t.Fatalf("Abandon left %d readers open", got)
	}
	follower.Manager().WaitDeletes()

	// The sound copy, checked early, is published and serves the leader's
	// documents.
	if in, err = follower.PrepareIncoming(meta); err != nil {
		t.Fatal(err)
	}
	for _, f := range in.Files() {
		writeIncoming(t, in, f.Name, files[f.Name])
		if err := in.Check(ctx, f.Name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if got := earlyReaders(in); got != 0 {
		t.Fatalf("Publish left %d of Check's readers behind instead of serving them", got)
	}
	sameVisible(t, leader, follower)
}

// earlyReaders returns how many readers Check opened that in still holds.
func earlyReaders(in *Incoming) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.readers)
}
