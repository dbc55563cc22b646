package search

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/summadev/summa/engine/analysis"
	"github.com/summadev/summa/engine/schema"
)

// bmpTextQueries returns disjunctive queries made of real corpus words:
// the fixed textQueries plus, from every 23rd paragraph, 2 to 6 of its
// words, some scoped to the title or body, some with a tag.
func bmpTextQueries(c *corpus) []string {
	qs := append([]string(nil), textQueries...)
	for i := 0; i < len(c.docs); i += 23 {
		words := analysis.Terms(c.docs[i].Fields[cBody].Strings[0])
		if len(words) == 0 {
			continue
		}
		n := 2 + i%5
		var parts []string
		for k := 0; k < n; k++ {
			w := words[(k*7+i)%len(words)]
			switch (i + k) % 6 {
			case 1:
				w = "title:" + w
			case 2:
				w = "body:" + w
			}
			parts = append(parts, w)
		}
		if i%4 == 0 {
			parts = append(parts, "tag:odd")
		}
		qs = append(qs, strings.Join(parts, " "))
	}
	return qs
}

// runBoth runs q exhaustively and with BMP allowed (threshold 1) and
// fails unless both return the same page: documents, scores and order.
// It reports whether BMP ran and whether it pruned.
func runBoth(t *testing.T, s *schema.Schema, views []SegmentView, q string, limit int) (ran, pruned bool) {
	t.Helper()
	raw := json.RawMessage(q)
	if !strings.HasPrefix(q, "{") {
		raw, _ = json.Marshal(q)
	}
	exact := exhaustive(t, s, views, Request{Query: raw, Limit: limit})
	bmp, err := Search(context.Background(), s, views, Request{Query: raw, Limit: limit, TotalHitsThreshold: 1})
	if err != nil {
		t.Fatalf("%s (bmp): %v", q, err)
	}
	if len(exact.Hits) != len(bmp.Hits) {
		t.Fatalf("%s limit %d: %d hits exhaustive, %d with BMP", q, limit, len(exact.Hits), len(bmp.Hits))
	}
	for i := range exact.Hits {
		a, b := exact.Hits[i], bmp.Hits[i]
		if a.Segment != b.Segment || a.Doc != b.Doc || a.Score != b.Score {
			t.Fatalf("%s limit %d: hit %d is %d/%d (%v) exhaustive, %d/%d (%v) with BMP",
				q, limit, i, a.Segment, a.Doc, a.Score, b.Segment, b.Doc, b.Score)
		}
	}
	if exact.TotalHitsRelation != EqualTo {
		t.Fatalf("%s: exhaustive total is not exact", q)
	}
	switch bmp.TotalHitsRelation {
	case EqualTo:
		if bmp.TotalHits != exact.TotalHits {
			t.Fatalf("%s: BMP says exactly %d hits, there are %d", q, bmp.TotalHits, exact.TotalHits)
		}
	case AtLeast:
		if bmp.TotalHits > exact.TotalHits || bmp.TotalHits < 1 {
			t.Fatalf("%s: BMP lower bound %d, exact %d", q, bmp.TotalHits, exact.TotalHits)
		}
	}
	parsed, err := Parse(s, raw)
	if err != nil {
		t.Fatal(err)
	}
	top, _, rel, err := searchPruned(context.Background(), s, views, parsed, limit, 1)
	if err != nil {
		t.Fatal(err)
	}
	return top != nil, rel == AtLeast
}

// TestBMPRankSafeText checks that block-max pruning returns the exhaustive
// top-k (same documents, scores and tie order) for many disjunctive
// queries on real text, over one and several segments, with deletions.
func TestBMPRankSafeText(t *testing.T) {
	c := newtonCorpus(t)
	n := len(c.docs)
	splits := rankSafeSplits(c)
	splits["seven"] = split{sizes: []int{1, n / 7, n / 7, n / 3, n / 9, 2, n - 1 - 2*(n/7) - n/3 - n/9 - 2}}
	qs := bmpTextQueries(c)
	for name, sp := range splits {
		t.Run(name, func(t *testing.T) {
			views := c.views(t, sp)
			ran, pruned := 0, 0
			for _, q := range qs {
				for _, limit := range []int{1, 10, 100} {
					r, p := runBoth(t, c.schema, views, q, limit)
					ran += b2i(r)
					pruned += b2i(p)
				}
			}
			if ran < len(qs) || pruned < len(qs)/2 {
				t.Fatalf("BMP ran %d and pruned %d times over %d queries × 3 limits", ran, pruned, len(qs))
			}
		})
	}
}

// rankSafeSplits returns the segmentations the pruned evaluators are
// checked on: one segment, thirds with every third document deleted, and
// the same after an empty segment.
func rankSafeSplits(c *corpus) map[string]split {
	n := len(c.docs)
	deleted := map[int]bool{}
	for i := 0; i < n; i += 3 {
		deleted[i] = true
	}
	return map[string]split{
		"one":           {sizes: []int{n}},
		"three-deleted": {sizes: c.thirds(), deleted: deleted},
		"empty-first":   {sizes: append([]int{0}, c.thirds()...), deleted: deleted},
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestBMPRankSafeUpserts replaces documents the way an upsert does (the old
// copy deleted in its segment, a changed copy in a newer segment) and
// checks BMP against exhaustive evaluation.
func TestBMPRankSafeUpserts(t *testing.T) {
	c := newtonCorpus(t)
	views := upsertViews(t, c)
	for _, q := range bmpTextQueries(c) {
		for _, limit := range []int{1, 10, 50} {
			runBoth(t, c.schema, views, q, limit)
		}
	}
}

// upsertViews returns the corpus as upserts leave it: the first half in a
// segment with every fourth document deleted, the second half, and a newer
// segment with changed copies of the deleted ones.
func upsertViews(t *testing.T, c *corpus) []SegmentView {
	t.Helper()
	n := len(c.docs)
	old := c.docs[:n/2]
	var newer []*schema.Document
	del := roaring.New()
	for i := 0; i < len(old); i += 4 {
		raw, err := json.Marshal(corpusDoc(i, fmt.Sprintf("%s light prism %s", old[(i+9)%len(old)].Fields[cBody].Strings[0], strings.Repeat("colours ", i%5))))
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.schema.ParseDocument(raw)
		if err != nil {
			t.Fatal(err)
		}
		newer = append(newer, d)
		del.Add(uint32(i))
	}
	return []SegmentView{
		{Segment: openSegment(t, c.schema, old), Deleted: del},
		{Segment: openSegment(t, c.schema, c.docs[n/2:])},
		{Segment: openSegment(t, c.schema, newer)},
	}
}

// TestBMPRankSafeSparse checks sparse queries, with negative query and
// document weights, against exhaustive evaluation.
func TestBMPRankSafeSparse(t *testing.T) {
	c := newtonCorpus(t)
	n := len(c.docs)
	sc := signedCorpus(c)
	docs := sc.docs
	deleted := map[int]bool{}
	for i := 1; i < n; i += 4 {
		deleted[i] = true
	}
	ran := 0
	for _, sp := range []split{{sizes: []int{n}}, {sizes: sc.thirds(), deleted: deleted}} {
		views := sc.views(t, sp)
		for i := 0; i < n; i += 29 {
			vec := map[string]float64{}
			for k, e := range docs[i].Fields[cSp].Sparse {
				vec[e.Dim] = math.Round(float64(1+k)*(1-2*float64((i+k)%4/3))*100) / 100
			}
			vec["thex"] = 0.25
			q := fmt.Sprintf(`{"sparse":{"field":"sp","vector":%s,"exact":true}}`, mustJSON(t, vec))
			for _, limit := range []int{1, 10, 100} {
				r, _ := runBoth(t, sc.schema, views, q, limit)
				ran += b2i(r)
			}
		}
	}
	if ran == 0 {
		t.Fatal("BMP never ran on sparse queries")
	}
}

// TestBMPOnlyWhenAllowed checks the API contract: without a threshold the
// total is exact and BMP never runs; with one, BMP runs only when document
// frequencies prove the threshold is reached, and then reports a lower
// bound of at least the threshold; conjunctions and phrases stay exact.
func TestBMPOnlyWhenAllowed(t *testing.T) {
	c := newtonCorpus(t)
	views := c.views(t, split{sizes: c.thirds()})
	search := func(q string, threshold int) Result {
		raw, _ := json.Marshal(q)
		res, err := Search(context.Background(), c.schema, views, Request{Query: raw, TotalHitsThreshold: threshold})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	exact := search("the light", 0)
	if exact.TotalHitsRelation != EqualTo || exact.TotalHits < 500 {
		t.Fatalf("the light: %d hits (%v)", exact.TotalHits, exact.TotalHitsRelation)
	}
	low := search("the light", 100)
	if low.TotalHitsRelation != AtLeast || low.TotalHits < 100 || low.TotalHits > exact.TotalHits {
		t.Fatalf("threshold 100: %d hits (%v), exact %d", low.TotalHits, low.TotalHitsRelation, exact.TotalHits)
	}
	if high := search("the light", exact.TotalHits+1); high.TotalHitsRelation != EqualTo || high.TotalHits != exact.TotalHits {
		t.Fatalf("threshold above the count: %d hits (%v)", high.TotalHits, high.TotalHitsRelation)
	}
	defer func(n int) { bmpMinPostings = n }(bmpMinPostings)
	bmpMinPostings = 1 << 30
	if res := search("the light", 100); res.TotalHitsRelation != EqualTo || res.TotalHits != exact.TotalHits {
		t.Fatalf("too few postings for BMP: %d hits (%v)", res.TotalHits, res.TotalHitsRelation)
	}
	bmpMinPostings = 0
	for _, q := range []string{"+the +light", `"of the"`, "the -light"} {
		if res := search(q, 1); res.TotalHitsRelation != EqualTo || res.TotalHits != search(q, 0).TotalHits {
			t.Fatalf("%s: %d hits (%v) with a threshold", q, res.TotalHits, res.TotalHitsRelation)
		}
	}
}

// signedCorpus returns the corpus with some sparse weights made negative.
func signedCorpus(c *corpus) *corpus {
	n := len(c.docs)
	// Signed weights: rebuild the sparse field with some negative weights.
	docs := make([]*schema.Document, n)
	for i, d := range c.docs {
		cp := *d
		cp.Fields = append([]schema.Values(nil), d.Fields...)
		sp := append([]schema.SparseEntry(nil), d.Fields[cSp].Sparse...)
		for k := range sp {
			if (i+k)%5 == 0 {
				sp[k].Weight = -sp[k].Weight * 1.3
			}
		}
		cp.Fields[cSp].Sparse = sp
		docs[i] = &cp
	}
	return &corpus{schema: c.schema, docs: docs}
}

// TestMain runs BMP on every eligible query, however few its postings:
// the test corpus is small.
func TestMain(m *testing.M) {
	bmpMinPostings = 0
	os.Exit(m.Run())
}

// noBlockMax hides a segment's block maxima, as a version 1 segment has
// none.
type noBlockMax struct{ Segment }

// TestBMPNeedsBlockMaxInEveryView: when one view has no block maxima the
// query is evaluated exhaustively and its total stays exact.
func TestBMPNeedsBlockMaxInEveryView(t *testing.T) {
	c := newtonCorpus(t)
	views := c.views(t, split{sizes: c.thirds()})
	raw, _ := json.Marshal("the light")
	want, err := Search(context.Background(), c.schema, views, Request{Query: raw})
	if err != nil {
		t.Fatal(err)
	}
	views[1].Segment = noBlockMax{views[1].Segment}
	got, err := Search(context.Background(), c.schema, views, Request{Query: raw, TotalHitsThreshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got.TotalHitsRelation != EqualTo || got.TotalHits != want.TotalHits || len(got.Hits) != len(want.Hits) {
		t.Fatalf("%d hits (%v), want exactly %d", got.TotalHits, got.TotalHitsRelation, want.TotalHits)
	}
}

// TestBMPMixCodesPrune: on one segment, where the query's coefficients are
// the segment's reference, the joint bound of the mix codes lets BMP
// score fewer documents for a frequent term than the separate frequency
// and ratio bounds alone do, with the same page; on thirds (other
// coefficients) it is still rank-safe (TestBMPRankSafeText).
func TestBMPMixCodesPrune(t *testing.T) {
	c := newtonCorpus(t)
	views := c.views(t, split{sizes: []int{len(c.docs)}})
	found := func(withMix bool, q string) (*topK, int) {
		t.Helper()
		parsed, err := Parse(c.schema, json.RawMessage(`"`+q+`"`))
		if err != nil {
			t.Fatal(err)
		}
		bq, err := planBMPText(views, parsed.(*TextQuery), views[0].liveDocs(), func(f int) bool { return c.schema.Fields[f].IsTokenized() })
		if err != nil || bq == nil {
			t.Fatalf("%s: no BMP plan (%v)", q, err)
		}
		for i := range bq.terms {
			if bq.terms[i].mix[0].refB == 0 {
				t.Fatalf("%s: term %d has no mix codes", q, i)
			}
			if !withMix {
				bq.terms[i].mix[0] = termMix{}
			}
		}
		top, n, _, err := bq.run(context.Background(), views, 10)
		if err != nil {
			t.Fatal(err)
		}
		return top, n
	}
	fewer := 0
	for _, q := range []string{"body:the", "body:of", "body:and", "body:the body:light", "body:a"} {
		with, nWith := found(true, q)
		without, nWithout := found(false, q)
		if nWith > nWithout {
			t.Fatalf("%s: %d documents scored with mix codes, %d without", q, nWith, nWithout)
		}
		if nWith < nWithout {
			fewer++
		}
		a, b := with.sorted(), without.sorted()
		if len(a) != len(b) {
			t.Fatalf("%s: %d hits with mix codes, %d without", q, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: hit %d is %+v with mix codes, %+v without", q, i, a[i], b[i])
			}
		}
		t.Logf("%s: %d documents scored with mix codes, %d without", q, nWith, nWithout)
	}
	if fewer < 3 {
		t.Fatalf("mix codes scored fewer documents for only %d of 5 frequent-term queries", fewer)
	}
}
