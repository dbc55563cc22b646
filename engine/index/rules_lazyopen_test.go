package index

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/search"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// closedThreeSegments writes three one-commit segments of ten documents
// each and closes the index.
func closedThreeSegments(t *testing.T) *vfs.MemFS {
	t.Helper()
	fs, idx := createMemWith(t, Options{IndexingWorkers: 1, CommitFlushTimeout: testOptions().CommitFlushTimeout})
	for _, r := range [][2]int{{0, 10}, {10, 20}, {20, 30}} {
		if err := idx.Add(docs(t, r[0], r[1], 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	mustClose(t, idx)
	return fs
}

// searchAll asks for every document holding "the" with its stored fields.
func searchAll(idx *Index) (search.Result, error) {
	snap, err := idx.Snapshot()
	if err != nil {
		return search.Result{}, err
	}
	defer snap.Close()
	return snap.Search(context.Background(), search.Request{Query: json.RawMessage(`"the"`), Limit: 30})
}

// TestQ05_RowPartDamageFoundOnFirstUseQuarantines: Open defers the cheap
// check of a segment's row parts (store, pk, num, fwd) to their first use.
// Damage to the store part's framing found by a search that shows a hit
// of that segment fails that search with the *segment.CorruptionError
// Open would have returned and quarantines the segment as Open would have
// (Q05: it stays in metadata, is listed with the reason and excluded from
// search); the next search serves the other segments and a merge leaves
// it alone. Without the quarantine in Snapshot.Search this test fails.
func TestQ05_RowPartDamageFoundOnFirstUseQuarantines(t *testing.T) {
	fs := closedThreeSegments(t)
	idx, err := Open(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	victim := idx.Metadata().Segments[1].Info
	before, err := searchAll(idx)
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, idx)
	name, off, size := partSpan(t, victim, segment.SuffixStore)
	flipByteAt(t, fs, name, off+size-3) // the store part's footer magic

	idx, err = Open(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if q := idx.Status().Quarantined; len(q) != 0 {
		t.Fatalf("Open checked the store part: quarantine %+v", q)
	}
	_, err = searchAll(idx)
	var ce *segment.CorruptionError
	if !errors.As(err, &ce) || ce.File != segid.FileName(victim.ID, segment.SuffixStore) {
		t.Fatalf("search over the damaged store: %v, want its *segment.CorruptionError", err)
	}
	st := idx.Status()
	if len(st.Quarantined) != 1 || st.Quarantined[0].Segment != victim.ID || !strings.Contains(st.Quarantined[0].Reason, "footer magic") {
		t.Fatalf("quarantine %+v", st.Quarantined)
	}
	after, err := searchAll(idx)
	if err != nil {
		t.Fatalf("search after the quarantine: %v", err)
	}
	if after.TotalHits != before.TotalHits-countIn(t, before, 1) || after.TotalHits == 0 {
		t.Fatalf("%d hits after the quarantine, %d before (%d in the victim)", after.TotalHits, before.TotalHits, countIn(t, before, 1))
	}
	if _, err := idx.ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if !idx.Manager().OwnersOf(victim.ID).Live || !idx.IsQuarantined(victim.ID) {
		t.Fatal("the quarantined segment left metadata or the quarantine")
	}
}

// countIn counts the hits of res in segment i of the snapshot it came
// from (every hit of "the" is on the page: Limit is the corpus size).
func countIn(t *testing.T, res search.Result, i int) int {
	t.Helper()
	if len(res.Hits) != res.TotalHits {
		t.Fatalf("page of %d hits for %d", len(res.Hits), res.TotalHits)
	}
	n := 0
	for _, h := range res.Hits {
		if h.Segment == i {
			n++
		}
	}
	return n
}

// TestQ06_RowPartDamageUnseenBySearchQuarantinedByPreflight: damage to a
// row part of a segment whose rows no search reads (no hit of it is on
// the page) goes unseen by Open and search; merge preflight validates
// every mandatory file, finds it and quarantines the source (Q06), as it
// did when Open checked the part.
func TestQ06_RowPartDamageUnseenBySearchQuarantinedByPreflight(t *testing.T) {
	fs := closedThreeSegments(t)
	idx, err := Open(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	top, err := searchTop(idx)
	if err != nil {
		t.Fatal(err)
	}
	victim := idx.Metadata().Segments[(top.Hits[0].Segment+1)%3].Info
	mustClose(t, idx)
	name, off, _ := partSpan(t, victim, segment.SuffixPrimaryKey)
	flipByteAt(t, fs, name, off+2) // the pk part's header magic

	idx, err = Open(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if _, err := searchTop(idx); err != nil {
		t.Fatalf("the search reads no row of the damaged segment: %v", err)
	}
	if len(idx.Status().Quarantined) != 0 {
		t.Fatal("a search quarantined a segment it could read")
	}
	if _, err := idx.ForceMerge(context.Background(), 1); !errors.Is(err, ErrSourceQuarantined) {
		t.Fatalf("merge over a damaged pk part: %v", err)
	}
	if q := idx.Status().Quarantined; len(q) != 1 || q[0].Segment != victim.ID {
		t.Fatalf("quarantine %+v", q)
	}
}

// searchTop asks for the best document holding "the".
func searchTop(idx *Index) (search.Result, error) {
	snap, err := idx.Snapshot()
	if err != nil {
		return search.Result{}, err
	}
	defer snap.Close()
	return snap.Search(context.Background(), search.Request{Query: json.RawMessage(`"the"`), Limit: 1})
}
