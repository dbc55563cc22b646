package index

import (
	"context"
	"testing"

	"github.com/summadev/summa/engine/segid"
)

// TestMaskPlan_StaleAfterMergeIsReplanned: the committed segments' masks
// are planned while the workers flush; a merge published in between
// replaces the segments the plan masked. Publication must then drop the
// plan (its mask files cleaned up) and plan again against the merged
// segment, so that an upserted document's old version is hidden there:
// exactly one version of every key is visible, the new one.
func TestMaskPlan_StaleAfterMergeIsReplanned(t *testing.T) {
	opts := testOptions()
	var idx *Index
	merged := false
	opts.Hooks.AfterMaskPlan = func() {
		if idx == nil || merged {
			return
		}
		merged = true
		var segs []segid.ID
		for _, s := range idx.Metadata().Segments {
			segs = append(segs, s.ID)
		}
		if _, err := idx.MergeSegments(context.Background(), segs); err != nil {
			t.Errorf("merge between plan and publication: %v", err)
		}
	}
	fs, created := createMemWith(t, opts)
	defer mustClose(t, created)
	if err := created.Add(docs(t, 0, 20, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, created)
	if err := created.Add(docs(t, 20, 40, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, created)
	before := len(created.Metadata().Segments)
	idx = created
	if err := idx.Add(append(docs(t, 3, 4, 2), docs(t, 25, 26, 2)...)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	if !merged {
		t.Fatal("the hook did not merge")
	}
	if before < 2 {
		t.Fatalf("%d segments before the merge, want 2 or more", before)
	}
	got := visible(t, idx)
	if len(got) != 40 {
		t.Fatalf("%d documents visible, want 40", len(got))
	}
	want := map[string]string{}
	for _, d := range append(docs(t, 3, 4, 2), docs(t, 25, 26, 2)...) {
		want[d.PrimaryKey] = string(d.Stored)
	}
	for pk, stored := range want {
		if got[pk] != stored {
			t.Errorf("%s: visible %q, want the upserted version", pk, got[pk])
		}
	}
	checkOwned(t, fs, idx)
}
