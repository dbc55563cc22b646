package search

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/summadev/summa/engine/analysis"
)

// prunedPhraseQueries returns phrases of real corpus text scoped to the
// body (one field, the shape searchPrunedPhrase takes): two and three
// consecutive words of every 7th paragraph, and frequent pairs.
func prunedPhraseQueries(c *corpus) []string {
	qs := []string{`body:"of the"`, `body:"in the"`, `body:"of light"`, `body:"the same"`, `body:"the the"`}
	for i := 0; i < len(c.docs); i += 7 {
		words := analysis.Terms(c.docs[i].Fields[cBody].Strings[0])
		if len(words) < 4 {
			continue
		}
		k := i % (len(words) - 3)
		n := 2 + i%2
		qs = append(qs, fmt.Sprintf(`body:"%s"`, strings.Join(words[k:k+n], " ")))
	}
	return qs
}

// TestPrunedPhraseRankSafe checks that a phrase query run with a total
// hits threshold (0: exact) returns the exhaustive page (documents, scores, tie
// order), an exact total when nothing was skipped and otherwise a lower
// bound of at least the threshold, over one and several segments, with
// deletions; and that pruning did skip documents for many of them.
func TestPrunedPhraseRankSafe(t *testing.T) {
	c := newtonCorpus(t)
	qs := prunedPhraseQueries(c)
	for name, sp := range rankSafeSplits(c) {
		t.Run(name, func(t *testing.T) {
			views := c.views(t, sp)
			pruned := 0
			for _, q := range qs {
				raw, _ := json.Marshal(q)
				exact := exhaustive(t, c.schema, views, Request{Query: raw, Limit: 100})
				for _, limit := range []int{1, 10, 100} {
					for _, threshold := range []int{0, 1, 5, 50} {
						got, err := Search(context.Background(), c.schema, views, Request{Query: raw, Limit: limit, TotalHitsThreshold: threshold})
						if err != nil {
							t.Fatalf("%s: %v", q, err)
						}
						checkPrunedPage(t, q, limit, threshold, exact, got)
						pruned += b2i(got.TotalHitsRelation == AtLeast)
					}
				}
			}
			if pruned < len(qs) {
				t.Fatalf("pruning skipped documents in %d of %d runs", pruned, 9*len(qs))
			}
		})
	}
}

// checkPrunedPage fails unless got, run with a threshold, holds the first
// limit hits of the exhaustive result and a total consistent with it.
func checkPrunedPage(t *testing.T, q string, limit, threshold int, exact, got Result) {
	t.Helper()
	want := exact.Hits[:min(limit, len(exact.Hits))]
	if len(got.Hits) != len(want) {
		t.Fatalf("%s limit %d threshold %d: %d hits, want %d", q, limit, threshold, len(got.Hits), len(want))
	}
	for i := range want {
		a, b := want[i], got.Hits[i]
		if a.Segment != b.Segment || a.Doc != b.Doc || a.Score != b.Score {
			t.Fatalf("%s limit %d threshold %d: hit %d is %d/%d (%v), exhaustive %d/%d (%v)", q, limit, threshold, i, b.Segment, b.Doc, b.Score, a.Segment, a.Doc, a.Score)
		}
	}
	switch got.TotalHitsRelation {
	case EqualTo:
		if got.TotalHits != exact.TotalHits {
			t.Fatalf("%s threshold %d: exactly %d hits, there are %d", q, threshold, got.TotalHits, exact.TotalHits)
		}
	case AtLeast:
		if threshold == 0 {
			t.Fatalf("%s: an exact request (threshold 0) answered a lower bound", q)
		}
		if got.TotalHits > exact.TotalHits || got.TotalHits < threshold {
			t.Fatalf("%s threshold %d: lower bound %d, exact %d", q, threshold, got.TotalHits, exact.TotalHits)
		}
	}
}

// TestPhraseBlockBoundsHold checks the block bounds searchPrunedPhrase
// passes blocks over with: every document where the phrase occurs scores
// at most its block's bound, over one segment and over thirds (where the
// query's coefficients are not the segments' references), and some
// blocks bound below the best score (so that skipping can happen).
func TestPhraseBlockBoundsHold(t *testing.T) {
	c := newtonCorpus(t)
	for name, sp := range rankSafeSplits(c) {
		t.Run(name, func(t *testing.T) {
			views := c.views(t, sp)
			below := 0
			for _, q := range prunedPhraseQueries(c)[:40] {
				raw, _ := json.Marshal(q)
				parsed, err := Parse(c.schema, raw)
				if err != nil {
					t.Fatal(err)
				}
				cl := &parsed.(*TextQuery).Clauses[0]
				live, _ := viewSizes(views)
				cp, err := planClause(c.schema, views, cl, live)
				if err != nil {
					t.Fatal(err)
				}
				terms, _ := distinct(cl.Terms)
				exact := exhaustive(t, c.schema, views, Request{Query: raw, Limit: 10000})
				var sc blockScratch
				for vi := range views {
					bounds, err := phraseBlockBounds(&views[vi], &cp.fields[0], terms, &sc)
					if err != nil {
						t.Fatal(err)
					}
					if bounds == nil {
						if cp.fields[0].postings[vi] != nil {
							t.Fatalf("%s view %d: no bounds where every term occurs", q, vi)
						}
						continue
					}
					best := 0.0
					for _, h := range exact.Hits {
						if h.Segment != vi {
							continue
						}
						if ub := bounds[h.Doc>>6]; h.Score > ub+ub*1e-9 {
							t.Fatalf("%s view %d doc %d: score %v above its block's bound %v", q, vi, h.Doc, h.Score, ub)
						}
						best = max(best, h.Score)
					}
					for _, ub := range bounds {
						if ub > 0 && ub < best {
							below++
						}
					}
				}
			}
			if below == 0 {
				t.Fatal("no block bounds below a phrase's best score")
			}
		})
	}
}
