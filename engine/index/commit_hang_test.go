package index

import (
	"context"
	"testing"
)

// This file's tests run early in the package (file order) and end in
// seconds on a commit that hangs instead of failing: with -failfast (make
// mutate's go test) such a mutant is killed here rather than at the
// timeout of a longer test. Every wait is bounded by hangDeadline, a
// generous bound that is no speed assertion.

// TestCommitDeleteOnlyPublishesAndReleases: a commit whose generation holds
// only a delete (no flushed output) still publishes a new generation
// without the document, a commit of nothing publishes none, and every
// snapshot a publication held is released (Close drains in time).
func TestCommitDeleteOnlyPublishesAndReleases(t *testing.T) {
	_, idx := createMem(t)
	if err := idx.Add(docs(t, 0, 4, 1)); err != nil {
		t.Fatal(err)
	}
	first := mustCommit(t, idx)
	if first.Documents != 4 {
		t.Fatalf("first commit: %d documents, want 4", first.Documents)
	}
	found, err := idx.Delete("p0001")
	if err != nil || !found {
		t.Fatalf("delete p0001: found %v, err %v", found, err)
	}
	second := mustCommit(t, idx)
	if second.Generation <= first.Generation {
		t.Fatalf("delete-only commit: generation %d, want above %d", second.Generation, first.Generation)
	}
	if second.Documents != 3 {
		t.Fatalf("delete-only commit: %d documents, want 3", second.Documents)
	}
	if _, ok := visible(t, idx)["p0001"]; ok {
		t.Fatal("p0001 still visible after the delete-only commit")
	}
	empty := mustCommit(t, idx)
	if empty.Generation != second.Generation {
		t.Fatalf("commit of nothing: generation %d, want %d (no new generation)", empty.Generation, second.Generation)
	}
	requireNoOpenSnapshots(t, idx)
	mustClose(t, idx)
}

// TestCommitReleasesHeldSnapshot: after each commit has answered and its
// release has run, no snapshot stays open (the one a publication held is
// closed), so Close drains within the deadline.
func TestCommitReleasesHeldSnapshot(t *testing.T) {
	_, idx := createMem(t)
	for i := range 3 {
		if err := idx.Add(docs(t, i*3, i*3+3, 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
		requireNoOpenSnapshots(t, idx)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangDeadline)
	defer cancel()
	if err := idx.Close(ctx); err != nil {
		t.Fatalf("close after three commits: %v", err)
	}
}

// requireNoOpenSnapshots fails if a snapshot other than the index's
// current view (counted in mu.open) is open once the commits have answered
// and released.
func requireNoOpenSnapshots(t *testing.T, idx *Index) {
	t.Helper()
	idx.mu.Lock()
	open := idx.mu.open
	idx.mu.Unlock()
	if open != 1 {
		t.Fatalf("%d snapshots open after the commits answered and released, want 1 (the current view)", open)
	}
}
