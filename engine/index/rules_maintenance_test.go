package index

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/lifecycle"
	"github.com/summadev/summa/engine/segment"
)

// threeSegments commits docs 0..30 in three generations and deletes two.
func threeSegments(t *testing.T, opts Options) (vfs.FS, *Index) {
	t.Helper()
	fs := vfs.NewMem()
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{0, 10}, {10, 20}, {20, 30}} {
		if err := idx.Add(docs(t, r[0], r[1], 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	for _, pk := range []string{"p0002", "p0015"} {
		if _, err := idx.Delete(pk); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, idx)
	return fs, idx
}

func TestM01_MergeConcatenatesMasksKeepingRowCounts(t *testing.T) {
	fs, idx := threeSegments(t, testOptions())
	defer mustClose(t, idx)
	before := visible(t, idx)
	var physical uint32
	for _, s := range idx.Metadata().Segments {
		physical += s.Documents
	}
	old, _ := idx.Snapshot()
	// Closed before the index on every path: a failure below must fail the
	// test, not leave the close waiting for this snapshot.
	var closeOld sync.Once
	defer closeOld.Do(old.Close)
	res, err := idx.ForceMerge(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	meta := idx.Metadata()
	if len(meta.Segments) != 1 || meta.Segments[0].Documents != physical || meta.Segments[0].Deletes.Deleted != 2 {
		t.Fatalf("merged metadata %+v", meta.Segments)
	}
	if !maps.Equal(visible(t, idx), before) {
		t.Fatal("merge changed visibility")
	}
	// L04: sources retired, deleted after the last reader.
	for _, src := range res.Sources {
		if _, ok := segFiles(t, fs)[src]; !ok {
			t.Fatalf("source %s deleted while a snapshot holds it", src)
		}
	}
	closeOld.Do(old.Close)
	for _, src := range res.Sources {
		if _, ok := segFiles(t, fs)[src]; ok {
			t.Fatalf("source %s kept after the last reader", src)
		}
	}
	checkOwned(t, fs, idx)
}

func TestM01_DeletesDuringMergeAreKept(t *testing.T) {
	opts := testOptions()
	var idx *Index
	opts.Hooks.BeforeRewritePublish = func(string) {
		if _, err := idx.Delete("p0007"); err != nil {
			t.Error(err)
		}
		if _, err := idx.Commit(context.Background()); err != nil {
			t.Error(err)
		}
	}
	_, idx = threeSegments(t, opts)
	defer mustClose(t, idx)
	if _, err := idx.ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	vis := visible(t, idx)
	if _, ok := vis["p0007"]; ok || len(vis) != 27 {
		t.Fatalf("a delete committed during the merge was lost: %d visible", len(vis))
	}
}

func TestM03_CompactionRejectsChangedVisibility(t *testing.T) {
	opts := testOptions()
	var idx *Index
	armed := true
	opts.Hooks.BeforeRewritePublish = func(string) {
		if !armed {
			return
		}
		armed = false
		if _, err := idx.Delete("p0003"); err != nil { // same segment as p0002
			t.Error(err)
		}
		if _, err := idx.Commit(context.Background()); err != nil {
			t.Error(err)
		}
	}
	fs, idx := threeSegments(t, opts)
	defer mustClose(t, idx)
	if _, err := idx.Compact(context.Background()); !errors.Is(err, ErrVisibilityChanged) {
		t.Fatalf("compaction over a changed mask: %v", err)
	}
	checkOwned(t, fs, idx)
	if idx.Manager().ActiveOperations() != 0 {
		t.Fatal("rejected compaction left claims")
	}
	res, err := idx.Compact(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Documents != 8 {
		t.Fatalf("compacted segment has %d rows, want 8", res.Documents)
	}
	vis := visible(t, idx)
	if _, ok := vis["p0003"]; ok || len(vis) != 27 {
		t.Fatalf("after compaction %d visible", len(vis))
	}
}

func TestL08_OverlappingRewritesRefused(t *testing.T) {
	opts := testOptions()
	var idx *Index
	var inner error
	opts.Hooks.BeforeRewritePublish = func(kind string) {
		if kind == "merge" {
			_, inner = idx.Compact(context.Background())
		}
	}
	_, idx = threeSegments(t, opts)
	defer mustClose(t, idx)
	if _, err := idx.ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(inner, lifecycle.ErrAlreadyClaimed) {
		t.Fatalf("compaction of a segment under merge: %v", inner)
	}
}

func TestQ06_MergePreflightQuarantinesCorruptSource(t *testing.T) {
	fs, idx := threeSegments(t, testOptions())
	defer mustClose(t, idx)
	victim := idx.Metadata().Segments[1].ID
	corruptPart(t, fs, idx.Metadata().Segments[1].Info, segment.SuffixStore)
	_, err := idx.ForceMerge(context.Background(), 1)
	if !errors.Is(err, ErrSourceQuarantined) {
		t.Fatalf("merge over a corrupt source: %v", err)
	}
	st := idx.Status()
	if len(st.Quarantined) != 1 || st.Quarantined[0].Segment != victim {
		t.Fatalf("quarantine %+v", st.Quarantined)
	}
	// Excluded from selection: the next merge works on the other two.
	res, err := idx.ForceMerge(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Sources {
		if s == victim {
			t.Fatal("a quarantined segment was selected again")
		}
	}
	if !idx.Manager().OwnersOf(victim).Live {
		t.Fatal("the quarantined segment left metadata")
	}
	checkOwned(t, fs, idx)
}

// failWritesOf fails every write of one file suffix when armed.
type failWritesOf struct {
	suffix string
	armed  bool
}

func (f *failWritesOf) MaybeError(op errorfs.Op) error {
	if f.armed && op.Kind == errorfs.OpFileWrite && len(op.Path) > len(f.suffix) && op.Path[len(op.Path)-len(f.suffix):] == f.suffix {
		return errorfs.ErrInjected
	}
	return nil
}
func (f *failWritesOf) String() string { return "failWritesOf" }

func TestQ08_FailedOutputDeletedAfterRecheck(t *testing.T) {
	inj := &failWritesOf{suffix: "." + segment.SuffixCompound}
	mem := vfs.NewMem()
	fs := errorfs.Wrap(mem, inj)
	idx, err := Create(fs, testDir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	for _, r := range [][2]int{{0, 10}, {10, 20}} {
		if err := idx.Add(docs(t, r[0], r[1], 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	before := segFiles(t, mem)
	inj.armed = true
	if _, err := idx.ForceMerge(context.Background(), 1); err == nil {
		t.Fatal("merge with failing writes succeeded")
	}
	inj.armed = false
	if after := segFiles(t, mem); len(after) != len(before) {
		t.Fatalf("failed merge left output files: %v", after)
	}
	if len(idx.Status().Quarantined) != 0 {
		t.Fatal("a transient write failure quarantined a source")
	}
	if got := len(visible(t, idx)); got != 20 {
		t.Fatalf("%d visible after a failed merge", got)
	}
}

// upsertAllOf replaces every document of [from, to) and commits, so the
// segment that held them loses its last live row and leaves metadata.
func upsertAllOf(t *testing.T, idx *Index, from, to int) {
	t.Helper()
	if err := idx.Add(docs(t, from, to, 2)); err != nil {
		t.Error(err)
	}
	if _, err := idx.Commit(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestM01_MergeNeverResurrectsASourceACommitDropped(t *testing.T) {
	opts := testOptions()
	var idx *Index
	armed := true
	opts.Hooks.BeforeRewritePublish = func(string) {
		if armed {
			armed = false
			upsertAllOf(t, idx, 20, 30) // the third segment: no row deleted yet
		}
	}
	fs, idx := threeSegments(t, opts)
	defer mustClose(t, idx)
	if _, err := idx.ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	vis := visible(t, idx) // fails on a key visible twice
	snap, err := idx.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if len(vis) != 28 || snap.Documents() != 28 {
		t.Fatalf("after merge: %d keys visible, %d live rows; want 28 and 28", len(vis), snap.Documents())
	}
	for i := 20; i < 30; i++ {
		if pk := fmt.Sprintf("p%04d", i); !strings.Contains(vis[pk], `"n":2`) {
			t.Fatalf("%s: the upsert's version is not the visible one: %s", pk, vis[pk])
		}
	}
	checkOwned(t, fs, idx)
}

func TestM03_SingleSourceRewriteOfADroppedSourceIsRejected(t *testing.T) {
	for _, kind := range []string{"compact", "reorder"} {
		t.Run(kind, func(t *testing.T) {
			opts := testOptions()
			var idx *Index
			armed := true
			opts.Hooks.BeforeRewritePublish = func(string) {
				if armed {
					armed = false
					upsertAllOf(t, idx, 0, 10) // the first segment, which has a deleted row
				}
			}
			fs, idx := threeSegments(t, opts)
			defer mustClose(t, idx)
			var err error
			first := idx.Metadata().Segments[0].ID
			if kind == "compact" {
				_, err = idx.CompactSegment(context.Background(), first)
			} else {
				_, err = idx.ReorderSegment(context.Background(), first, ReorderOptions{MaxDepth: 1})
			}
			if !errors.Is(err, ErrVisibilityChanged) {
				t.Fatalf("%s of a source a commit dropped: %v", kind, err)
			}
			if vis := visible(t, idx); len(vis) != 29 {
				t.Fatalf("%d keys visible, want 29", len(vis))
			}
			checkOwned(t, fs, idx)
			if idx.Manager().ActiveOperations() != 0 {
				t.Fatal("rejected rewrite left claims")
			}
		})
	}
}
