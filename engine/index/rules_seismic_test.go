package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/analysis"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

var seisSchema = schema.MustNew(
	schema.Field{Name: "id", Type: schema.Text, Primary: true},
	schema.Field{Name: "body", Type: schema.Text, Reorder: true},
	schema.Field{Name: "sp", Type: schema.SparseVector},
)

// seisDocs returns documents from..to of Opticks with term-count sparse
// vectors of their paragraphs.
func seisDocs(t testing.TB, from, to int) []*schema.Document {
	t.Helper()
	ps := paragraphs(t, to)
	var out []*schema.Document
	for i := from; i < to; i++ {
		sp := map[string]float64{}
		for _, w := range analysis.Terms(ps[i]) {
			sp[w]++
		}
		raw, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("p%04d", i), "body": ps[i], "sp": sp})
		d, err := seisSchema.ParseDocument(raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// failRename fails metadata renames while armed.
type failRename struct{ armed atomic.Bool }

func (f *failRename) String() string { return "failRename" }

func (f *failRename) MaybeError(op errorfs.Op) error {
	if f.armed.Load() && op.Kind == errorfs.OpRename && strings.Contains(op.Path, "metadata") {
		return errors.New("injected rename failure")
	}
	return nil
}

// seisIndex creates an index whose flushes place at most budget postings.
func seisIndex(t *testing.T, budget int64) (*Index, *failRename) {
	t.Helper()
	inj := &failRename{}
	opts := testOptions()
	opts.SeismicBudget = budget
	idx, err := Create(errorfs.Wrap(vfs.NewMem(), inj), testDir, seisSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mustClose(t, idx) })
	return idx, inj
}

func addCommit(t *testing.T, idx *Index, from, to int) {
	t.Helper()
	if err := idx.Add(seisDocs(t, from, to)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
}

// entry returns the metadata entry of the only (or the given) segment.
func entry(t *testing.T, idx *Index, id segid.ID) metadata.Segment {
	t.Helper()
	for _, s := range idx.Metadata().Segments {
		if id == 0 || s.ID == id {
			return s
		}
	}
	t.Fatalf("segment %s not live", id)
	return metadata.Segment{}
}

// readerDebt returns the debt the segment's files hold.
func readerDebt(t *testing.T, idx *Index, id segid.ID) int {
	t.Helper()
	snap, err := idx.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	for _, s := range snap.Segments {
		if s.Meta.ID == id {
			return s.Reader.SeismicPendingTerms()
		}
	}
	t.Fatalf("segment %s not in snapshot", id)
	return 0
}

func pass(t *testing.T, idx *Index, id segid.ID, budget int64) segid.ID {
	t.Helper()
	res, err := idx.SeismicSegment(context.Background(), id, SeismicOptions{Budget: budget})
	if err != nil {
		t.Fatalf("seismic pass: %v", err)
	}
	return res.Output
}

func wantDebt(t *testing.T, got *metadata.SeismicDebt, pending, partial, stalls int) {
	t.Helper()
	if got == nil || got.PendingTerms != pending || got.PartialPasses != partial || got.Stalls != stalls {
		t.Fatalf("seismic state %+v, want pending %d, partial passes %d, stalls %d", got, pending, partial, stalls)
	}
}

// TestM09_FlushPersistsPendingTermsAsDebt: the postings a flush could not
// place are persisted as the segment's debt, equal to what its files hold;
// a flush that places everything persists none.
func TestM09_FlushPersistsPendingTermsAsDebt(t *testing.T) {
	idx, _ := seisIndex(t, 300)
	addCommit(t, idx, 0, 60)
	s := entry(t, idx, 0)
	debt := readerDebt(t, idx, s.ID)
	if debt == 0 {
		t.Fatal("a 300-posting budget placed every dimension")
	}
	wantDebt(t, s.Seismic, debt, 0, 0)
	full, _ := seisIndex(t, 0)
	addCommit(t, full, 0, 60)
	if s := entry(t, full, 0); s.Seismic != nil {
		t.Fatalf("no budget: debt %+v", s.Seismic)
	}
}

// TestM09_PassCountersTransitions: unchanged debt increments the stall
// counter, lower debt counts a successful partial pass and resets the
// stalls, zero debt clears the counters; BP state is untouched (M11).
func TestM09_PassCountersTransitions(t *testing.T) {
	idx, _ := seisIndex(t, 300)
	addCommit(t, idx, 0, 60)
	s := entry(t, idx, 0)
	p0 := s.SeismicPending()
	id := pass(t, idx, s.ID, -1)
	wantDebt(t, entry(t, idx, id).Seismic, p0, 0, 1)
	id = pass(t, idx, id, -1)
	wantDebt(t, entry(t, idx, id).Seismic, p0, 0, 2)
	id = pass(t, idx, id, 200)
	p1 := readerDebt(t, idx, id)
	if p1 >= p0 || p1 == 0 {
		t.Fatalf("a 200-posting pass moved debt %d -> %d", p0, p1)
	}
	wantDebt(t, entry(t, idx, id).Seismic, p1, 1, 0)
	id = pass(t, idx, id, 1<<40)
	if e := entry(t, idx, id); e.Seismic != nil || readerDebt(t, idx, id) != 0 {
		t.Fatalf("zero debt kept counters %+v", e.Seismic)
	}
	if _, err := idx.SeismicSegment(context.Background(), id, SeismicOptions{}); !errors.Is(err, ErrNothingToDo) {
		t.Fatalf("pass over a debt-free segment: %v", err)
	}
}

// TestM09_FailedOrCancelledPublicationChangesNoCounter: a pass whose
// metadata rename fails, or whose context is cancelled before publication,
// leaves the source's entry, counters included, as it was.
func TestM09_FailedOrCancelledPublicationChangesNoCounter(t *testing.T) {
	idx, inj := seisIndex(t, 300)
	addCommit(t, idx, 0, 60)
	id := pass(t, idx, entry(t, idx, 0).ID, -1)
	before := *entry(t, idx, id).Seismic
	inj.armed.Store(true)
	if _, err := idx.SeismicSegment(context.Background(), id, SeismicOptions{Budget: 200}); err == nil {
		t.Fatal("pass published through a failing rename")
	}
	inj.armed.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	idx.opts.Hooks.BeforeRewritePublish = func(string) { cancel() }
	if _, err := idx.SeismicSegment(ctx, id, SeismicOptions{Budget: 200}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled pass: %v", err)
	}
	idx.opts.Hooks.BeforeRewritePublish = nil
	if got := entry(t, idx, id).Seismic; got == nil || *got != before {
		t.Fatalf("counters %+v after failed publications, want %+v", got, before)
	}
}

// TestM09_MergeWithNewInputsResetsStallHistory: a copy merge of sources
// with stall history publishes the output's own debt with no counters;
// it copies the sources' encoded runs, so placed dimensions stay placed.
func TestM09_MergeWithNewInputsResetsStallHistory(t *testing.T) {
	idx, _ := seisIndex(t, 300)
	addCommit(t, idx, 0, 40)
	addCommit(t, idx, 40, 80)
	for _, s := range idx.Metadata().Segments {
		pass(t, idx, s.ID, -1)
	}
	for _, s := range idx.Metadata().Segments {
		if s.Seismic == nil || s.Seismic.Stalls != 1 {
			t.Fatalf("setup: %+v", s.Seismic)
		}
	}
	res, err := idx.ForceMerge(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	wantDebt(t, entry(t, idx, res.Output).Seismic, readerDebt(t, idx, res.Output), 0, 0)
}

// TestM09_MergePlacesNothingNew: merges, compaction and reorder copy the
// sources' encoded runs and place no pending dimension, not even one
// that would cost a single posting: with every dimension pending in both
// sources (flushes that place nothing), the merged output owes every
// dimension of the union, the first in dictionary order (one posting,
// the cheapest placement there is) included.
func TestM09_MergePlacesNothingNew(t *testing.T) {
	idx, _ := seisIndex(t, -1)
	addCommit(t, idx, 0, 20)
	lone, err := seisSchema.ParseDocument([]byte(`{"id":"lone","body":"lone","sp":{"0first":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(append(seisDocs(t, 20, 40), lone)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	union := map[string]bool{"0first": true}
	for _, p := range paragraphs(t, 40) {
		for _, w := range analysis.Terms(p) {
			union[w] = true
		}
	}
	for _, s := range idx.Metadata().Segments {
		if s.Seismic == nil || s.Seismic.PendingTerms == 0 {
			t.Fatalf("setup: a flush with a negative budget placed dimensions of %s: %+v", s.ID, s.Seismic)
		}
	}
	res, err := idx.ForceMerge(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := readerDebt(t, idx, res.Output); got != len(union) {
		t.Fatalf("the merged output owes %d dimensions, want all %d of its sources (a merge places nothing new)", got, len(union))
	}
	wantDebt(t, entry(t, idx, res.Output).Seismic, len(union), 0, 0)
}

// TestM09_UnchangedSingleSourceReplacementPreservesHistory: compaction
// and BP reorder of one source keep its Seismic counters (and carry its
// runs, so the debt is unchanged).
func TestM09_UnchangedSingleSourceReplacementPreservesHistory(t *testing.T) {
	idx, _ := seisIndex(t, 300)
	addCommit(t, idx, 0, 60)
	id := pass(t, idx, entry(t, idx, 0).ID, -1)
	id = pass(t, idx, id, -1)
	want := *entry(t, idx, id).Seismic
	res, err := idx.ReorderSegment(context.Background(), id, ReorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := entry(t, idx, res.Output).Seismic; got == nil || *got != want {
		t.Fatalf("after reorder %+v, want %+v", got, want)
	}
	if _, err := idx.Delete("p0003"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	res, err = idx.CompactSegment(context.Background(), res.Output)
	if err != nil {
		t.Fatal(err)
	}
	if got := entry(t, idx, res.Output).Seismic; got == nil || got.Stalls != want.Stalls || got.PartialPasses != want.PartialPasses {
		t.Fatalf("after compaction %+v, want counters of %+v", got, want)
	}
}

// TestM11_SeismicPassPreservesBPState: a Seismic pass is a maintenance-only
// replacement: it keeps the rows' order and the BP flags and counters.
func TestM11_SeismicPassPreservesBPState(t *testing.T) {
	idx, _ := seisIndex(t, 300)
	addCommit(t, idx, 0, 60)
	res, err := idx.ReorderSegment(context.Background(), entry(t, idx, 0).ID, ReorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := entry(t, idx, res.Output)
	id := pass(t, idx, res.Output, 200)
	after := entry(t, idx, id)
	if after.BPConverged != before.BPConverged || after.BPUnconvergedPasses != before.BPUnconvergedPasses {
		t.Fatalf("BP state %v/%d became %v/%d", before.BPConverged, before.BPUnconvergedPasses, after.BPConverged, after.BPUnconvergedPasses)
	}
}
