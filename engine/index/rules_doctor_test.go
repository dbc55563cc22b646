package index

import (
	"context"
	"errors"
	"testing"

	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

func TestR01_DoctorRemovesUnvalidatableSegmentsAtomically(t *testing.T) {
	fs, idx := createMem(t)
	for _, r := range [][2]int{{0, 10}, {10, 25}, {25, 30}} {
		if err := idx.Add(docs(t, r[0], r[1], 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	if _, err := idx.Delete("p0011"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	mustClose(t, idx)
	meta, _ := metadata.Load(fs, testDir)
	victim := meta.Segments[1]
	corruptPart(t, fs, victim.Info, segment.SuffixStore)

	// A normal open only quarantines if the cheap check sees it; doctor
	// finds the flipped byte through full validation.
	if _, err := Doctor(context.Background(), fs, testDir, testOptions()); err != nil {
		t.Fatal(err)
	}
	rep, err := Doctor(context.Background(), fs, testDir, testOptions())
	if err != nil || len(rep.RemovedSegments) != 0 || rep.CheckedSegments != 2 {
		t.Fatalf("second doctor run: %+v %v", rep, err)
	}
	after, _ := metadata.Load(fs, testDir)
	if len(after.Segments) != 2 || after.Generation != meta.Generation+1 {
		t.Fatalf("repaired metadata: %d segments, generation %d", len(after.Segments), after.Generation)
	}
	if _, ok := segFiles(t, fs)[victim.ID]; ok {
		t.Fatal("doctor left the removed segment's files")
	}
	if _, ok := segFiles(t, fs)[victim.Deletes.ID]; ok {
		t.Fatal("doctor left the removed segment's mask")
	}
	idx, err = Open(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if got := len(visible(t, idx)); got != 15 {
		t.Fatalf("%d docs survive, want 15", got)
	}
}

func TestR01_DoctorReport(t *testing.T) {
	fs, idx := createMem(t)
	if err := idx.Add(docs(t, 0, 10, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	mustClose(t, idx)
	meta, _ := metadata.Load(fs, testDir)
	corruptPart(t, fs, meta.Segments[0].Info, segment.SuffixPostings)
	rep, err := Doctor(context.Background(), fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if rep.CheckedSegments != len(meta.Segments) || len(rep.RemovedSegments) != 1 ||
		rep.RemovedDocuments != uint64(meta.Segments[0].Documents) || rep.Reasons[meta.Segments[0].ID.String()] == "" {
		t.Fatalf("report %+v", rep)
	}
}

func TestR02_DoctorIsExplicitAndLocked(t *testing.T) {
	fs, idx := createMem(t)
	if err := idx.Add(docs(t, 0, 10, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	// Doctor refuses to run while a writer holds the directory.
	if _, err := Doctor(context.Background(), fs, testDir, testOptions()); !errors.Is(err, ErrLocked) {
		t.Fatalf("doctor beside a writer: %v", err)
	}
	mustClose(t, idx)
	meta, _ := metadata.Load(fs, testDir)
	id := meta.Segments[0].ID
	if err := fs.Remove(fs.PathJoin(testDir, segid.FileName(id, segment.SuffixCompound))); err != nil {
		t.Fatal(err)
	}
	// Normal opens never repair: the segment stays in metadata, quarantined.
	for i := 0; i < 2; i++ {
		idx, err := Open(fs, testDir, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if q := idx.Status().Quarantined; len(q) != 1 {
			t.Fatalf("open %d: quarantine %+v", i, q)
		}
		mustClose(t, idx)
	}
	if m, _ := metadata.Load(fs, testDir); len(m.Segments) != 1 {
		t.Fatal("a normal open dropped a metadata-live segment")
	}
}
