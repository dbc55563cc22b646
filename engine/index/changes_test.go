package index

import (
	"context"
	"errors"
	"testing"

	"github.com/summadev/summa/engine/segment"
)

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestChangesClosesOnEachNewView: the channel of Changes stays open while
// nothing changes (an Add is no change), is closed by a commit's new
// generation and by a quarantine, and a channel taken after a change waits
// for the next one.
func TestChangesClosesOnEachNewView(t *testing.T) {
	fs, idx := threeSegments(t, testOptions())
	defer mustClose(t, idx)
	ch := idx.Changes()
	if err := idx.Add(docs(t, 30, 31, 1)); err != nil {
		t.Fatal(err)
	}
	if closed(ch) {
		t.Fatal("an Add without a commit closed the channel of Changes")
	}
	gen := idx.Generation()
	mustCommit(t, idx)
	if !closed(ch) || idx.Generation() == gen {
		t.Fatalf("a commit (generation %d to %d) did not close the channel of Changes", gen, idx.Generation())
	}
	ch = idx.Changes()
	if closed(ch) {
		t.Fatal("a channel taken after the commit is already closed")
	}
	victim := idx.Metadata().Segments[1]
	flipAndReframe(t, fs, victim.Info, segment.SuffixBlockMax)
	gen = idx.Generation()
	if _, err := idx.ForceMerge(context.Background(), 1); !errors.Is(err, ErrSourceQuarantined) {
		t.Fatalf("merge over a corrupt source: %v", err)
	}
	if idx.Generation() != gen || idx.QuarantinedCount() != 1 {
		t.Fatalf("setup: generation %d (was %d), %d quarantined", idx.Generation(), gen, idx.QuarantinedCount())
	}
	if !closed(ch) {
		t.Fatal("a quarantine did not close the channel of Changes")
	}
}
