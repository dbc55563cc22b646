package search

import (
	"encoding/json"
	"testing"

	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segment"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

// copiedCorpus returns the Newton corpus with each paragraph indexed
// copies times in a row (distinct ids and fields), so that frequent terms
// span enough blocks of one segment for superblocks, and the copies of
// the best documents share their blocks.
func copiedCorpus(t *testing.T, copies int) *corpus {
	t.Helper()
	paras := paragraphs(corpustest.Text(t))
	return corpusOf(t, copies*len(paras), func(i int) string { return paras[i/copies] })
}

// TestBMPGroupsRankSafe checks block-max pruning by groups of blocks
// (superblocks) against exhaustive evaluation: the corpus indexed eight
// times (88 blocks of a segment, 6 groups), one segment and three with
// deletions, the disjunctive queries of TestBMPRankSafeText and single
// frequent terms, in the pruned modes and with exact counts. It also
// checks that groups spare decoding: a search of "the" alone decodes
// fewer blocks than the term has.
func TestBMPGroupsRankSafe(t *testing.T) {
	defer func(n int) { groupedMinBlocks = n }(groupedMinBlocks)
	groupedMinBlocks = 0
	c := copiedCorpus(t, 8)
	qs := append(bmpTextQueries(c), "the", "of", "and the", "body:the", "which of the")
	for name, sp := range rankSafeSplits(c) {
		t.Run(name, func(t *testing.T) {
			views := c.views(t, sp)
			for _, q := range qs {
				for _, limit := range []int{1, 10, 100} {
					runBoth(t, c.schema, views, q, limit)
					runExactCount(t, c.schema, views, q, limit)
				}
			}
		})
	}
	views := c.views(t, split{sizes: []int{len(c.docs)}})
	q, err := ParseString(c.schema, "body:the")
	if err != nil {
		t.Fatal(err)
	}
	live := uint64(len(c.docs))
	bq, err := planBMPText(views, q, live, func(f int) bool { return c.schema.Fields[f].IsTokenized() })
	if err != nil || bq == nil {
		t.Fatalf("plan: %v", err)
	}
	rec := bq.terms[0].recs[0]
	if !rec.HasSupers() {
		t.Fatal("the: no superblocks")
	}
	all, err := rec.Entries(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := bq.run(t.Context(), views, 10); err != nil {
		t.Fatal(err)
	}
	if bq.decoded >= len(all) || len(all) < 4*segment.SuperShift {
		t.Fatalf("the: %d of its %d blocks decoded", bq.decoded, len(all))
	}
	t.Logf("the: %d of its %d blocks decoded", bq.decoded, len(all))
}

// runExactCount runs q with its exact count (TOP_10_COUNT: threshold 0),
// as a count only and with pruning disabled, and fails unless pages and
// totals agree.
func runExactCount(t *testing.T, s *schema.Schema, views []SegmentView, q string, limit int) {
	t.Helper()
	raw, _ := json.Marshal(q)
	exact := exhaustive(t, s, views, Request{Query: raw, Limit: limit})
	got, err := Search(t.Context(), s, views, Request{Query: raw, Limit: limit})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if got.TotalHits != exact.TotalHits || got.TotalHitsRelation != EqualTo || len(got.Hits) != len(exact.Hits) {
		t.Fatalf("%s limit %d: %d (%v) hits, exhaustive %d", q, limit, got.TotalHits, got.TotalHitsRelation, exact.TotalHits)
	}
	counted, err := Search(t.Context(), s, views, Request{Query: raw, CountOnly: true})
	if err != nil || counted.TotalHits != exact.TotalHits {
		t.Fatalf("%s: count only %d (%v), exhaustive %d", q, counted.TotalHits, err, exact.TotalHits)
	}
	for i := range got.Hits {
		a, b := exact.Hits[i], got.Hits[i]
		if a.Segment != b.Segment || a.Doc != b.Doc || a.Score != b.Score {
			t.Fatalf("%s limit %d: hit %d is %d/%d (%v), exhaustive %d/%d (%v)", q, limit, i, b.Segment, b.Doc, b.Score, a.Segment, a.Doc, a.Score)
		}
	}
}
