package search

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/summadev/summa/engine/analysis"
	"github.com/summadev/summa/engine/schema"
)

// exhaustive runs req with every pruned evaluator of exact requests off,
// as the reference the pruned ones are checked against.
func exhaustive(t *testing.T, s *schema.Schema, views []SegmentView, req Request) Result {
	t.Helper()
	pruneExact = false
	defer func() { pruneExact = true }()
	r, err := Search(context.Background(), s, views, req)
	if err != nil {
		t.Fatalf("%s: %v", req.Query, err)
	}
	return r
}

// termQueries returns queries of one term in one field: frequent and rare
// words of the corpus scoped to the body or the title, as a must clause
// too, and the exact tag field.
func termQueries(c *corpus) []string {
	qs := []string{"body:the", "body:of", "+body:light", "title:of", "tag:odd", "tag:even", "body:zzzabsent"}
	for i := 0; i < len(c.docs); i += 11 {
		words := analysis.Terms(c.docs[i].Fields[cBody].Strings[0])
		if len(words) > 0 {
			qs = append(qs, fmt.Sprintf("body:%s", words[i%len(words)]))
		}
	}
	return qs
}

// TestTermExactRankSafe checks that an exact request (no threshold) of one
// term in one field, which ranks with block-max pruning, returns the
// exhaustive page (documents, scores, tie order) and the exact total,
// over one and several segments, with deletions and after upserts; and
// that pruning left blocks unvisited, so the total came from document
// frequencies and deleted documents, for the frequent terms.
func TestTermExactRankSafe(t *testing.T) {
	c := newtonCorpus(t)
	splits := rankSafeSplits(c)
	qs := termQueries(c)
	for name, sp := range splits {
		t.Run(name, func(t *testing.T) {
			views := c.views(t, sp)
			checkTermExact(t, c.schema, views, qs)
		})
	}
	t.Run("upserts", func(t *testing.T) {
		checkTermExact(t, c.schema, upsertViews(t, c), qs)
	})
}

// checkTermExact runs every query of qs at three limits both ways and
// fails unless the pages and totals agree, the pruned path ran, and it
// stopped early for at least the most frequent term.
func checkTermExact(t *testing.T, s *schema.Schema, views []SegmentView, qs []string) {
	t.Helper()
	ran, early := 0, 0
	for _, q := range qs {
		raw, _ := json.Marshal(q)
		for _, limit := range []int{1, 10, 100} {
			want := exhaustive(t, s, views, Request{Query: raw, Limit: limit})
			got, err := Search(context.Background(), s, views, Request{Query: raw, Limit: limit})
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			checkPrunedPage(t, q, limit, 0, want, got)
			if got.TotalHitsRelation != EqualTo || got.TotalHits != want.TotalHits {
				t.Fatalf("%s limit %d: total %d (%v), exhaustive %d", q, limit, got.TotalHits, got.TotalHitsRelation, want.TotalHits)
			}
			r, e := termExactRuns(t, s, views, raw, limit)
			ran += b2i(r)
			early += b2i(e)
		}
	}
	if ran < len(qs) || early < 3 {
		t.Fatalf("the pruned path ran %d times and stopped early %d times over %d queries × 3 limits", ran, early, len(qs))
	}
}

// termExactRuns reports whether searchTermExact takes the query and
// whether its pruned ranking stops before visiting every block.
func termExactRuns(t *testing.T, s *schema.Schema, views []SegmentView, raw json.RawMessage, limit int) (ran, early bool) {
	t.Helper()
	q, err := Parse(s, raw)
	if err != nil {
		t.Fatal(err)
	}
	top, _, _, err := searchTermExact(context.Background(), s, views, q, limit)
	if err != nil || top == nil {
		return false, false
	}
	tq := q.(*TextQuery)
	c := tq.Clauses[0]
	c.Occur = Should
	bq, err := planBMPText(views, &TextQuery{Clauses: []Clause{c}}, func() uint64 { n, _ := viewSizes(views); return n }(), func(f int) bool { return s.Fields[f].IsTokenized() })
	if err != nil || bq == nil {
		t.Fatalf("%s: the BMP plan is gone: %v", raw, err)
	}
	_, _, complete, err := bq.run(context.Background(), views, limit)
	if err != nil {
		t.Fatal(err)
	}
	return true, !complete
}
