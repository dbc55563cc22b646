package search

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/summadev/summa/engine/analysis"
	"github.com/summadev/summa/engine/schema"
)

// conjunctionQueries returns conjunctions of single terms in one field
// each: frequent pairs, a term with itself, terms of two fields and of
// the exact tag field, an absent term, and two or three words of every
// 13th paragraph.
func conjunctionQueries(c *corpus) []string {
	qs := []string{"+body:the +body:of", "+body:of +body:the +body:light", "+body:light +body:light",
		"+body:light +title:light", "+tag:odd +body:light", "+body:the +body:zzzabsent"}
	for i := 0; i < len(c.docs); i += 13 {
		words := analysis.Terms(c.docs[i].Fields[cBody].Strings[0])
		if len(words) < 3 {
			continue
		}
		q := fmt.Sprintf("+body:%s +body:%s", words[0], words[len(words)/2])
		if i%2 == 0 {
			q += " +body:" + words[len(words)-1]
		}
		qs = append(qs, q)
	}
	return qs
}

// withoutLeapfrog runs req on the accumulator path.
func withoutLeapfrog(t *testing.T, s *schema.Schema, views []SegmentView, req Request) Result {
	t.Helper()
	leapfrogConjunctions = false
	defer func() { leapfrogConjunctions = true }()
	return exhaustive(t, s, views, req)
}

// TestConjunctionLeapfrogMatchesAccumulator checks that conjunctions of
// terms evaluated by leapfrog return the accumulator path's page
// (documents, scores, tie order), total and count, over one and several
// segments, with deletions and after upserts.
func TestConjunctionLeapfrogMatchesAccumulator(t *testing.T) {
	c := newtonCorpus(t)
	qs := conjunctionQueries(c)
	all := map[string][]SegmentView{"upserts": upsertViews(t, c)}
	for name, sp := range rankSafeSplits(c) {
		all[name] = c.views(t, sp)
	}
	matched := 0
	for name, views := range all {
		for _, q := range qs {
			raw, _ := json.Marshal(q)
			parsed, err := Parse(c.schema, raw)
			if err != nil {
				t.Fatal(err)
			}
			p, err := planText(c.schema, views, parsed.(*TextQuery), func() uint64 { n, _ := viewSizes(views); return n }())
			if err != nil || !p.conjunction() {
				t.Fatalf("%s: not planned as a conjunction (%v)", q, err)
			}
			for _, limit := range []int{1, 10, 100} {
				req := Request{Query: raw, Limit: limit}
				want := withoutLeapfrog(t, c.schema, views, req)
				got := exhaustive(t, c.schema, views, req)
				checkPrunedPage(t, name+" "+q, limit, 0, want, got)
				if got.TotalHits != want.TotalHits {
					t.Fatalf("%s %s: total %d, accumulator %d", name, q, got.TotalHits, want.TotalHits)
				}
				matched += b2i(want.TotalHits > 0)
			}
			req := Request{Query: raw, Limit: 10, CountOnly: true}
			if got, want := exhaustive(t, c.schema, views, req), withoutLeapfrog(t, c.schema, views, req); got.TotalHits != want.TotalHits {
				t.Fatalf("%s %s: count %d, accumulator %d", name, q, got.TotalHits, want.TotalHits)
			}
		}
	}
	if matched < len(qs) {
		t.Fatalf("only %d of %d runs matched anything", matched, 3*len(qs)*len(all))
	}
}
