package search

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/summadev/summa/engine/schema"
)

// textQueries cover terms, fields, exact fields, must, must-not, phrases
// (with repeated terms) and clauses that match nothing.
var textQueries = []string{
	"light",
	"light colours",
	"Light rays REFRACTION",
	"+light +red",
	"+light -red",
	"+colours -light -red",
	`"rays of light"`,
	`"of the"`,
	`+"of the" -light`,
	`"the the"`,
	`"of the same"`,
	"of of",
	"title:opticks",
	"title:light body:colours",
	`title:"of the"`,
	"tag:even",
	"+tag:odd light",
	"+tag:len-3 +tag:odd",
	"year:1705",
	"year:1712 year:1713 -tag:even",
	"id:p5",
	"id:p5 id:p77 id:p1000 light",
	"+nonexistentword light",
	"nonexistentword",
	"-light",
	"-light -red",
	"prism +refraction",
	`+body:"angle of incidence" title:light`,
	"light light",
	"+light +light",
	`"light" -"of light"`,
	`+"red and violet" +body:rays`,
	"1704",
}

// searchAll runs a query asking for every hit (up to MaxResultWindow).
func searchAll(t *testing.T, c *corpus, views []SegmentView, q string) Result {
	t.Helper()
	raw, _ := json.Marshal(q)
	res, err := Search(context.Background(), c.schema, views, Request{Query: raw, Limit: MaxResultWindow})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return res
}

// checkAgainst compares a result with brute-force scores by corpus index.
func checkAgainst(t *testing.T, c *corpus, sp split, q string, res Result, want map[int]float64) {
	t.Helper()
	if res.TotalHits != len(want) || len(res.Hits) != min(len(want), MaxResultWindow) {
		t.Fatalf("%s: %d total hits (%d returned), brute force finds %d", q, res.TotalHits, len(res.Hits), len(want))
	}
	for i, h := range res.Hits {
		g := globalDoc(sp, h)
		ws, ok := want[g]
		if !ok || sp.deleted[g] {
			t.Fatalf("%s: hit %d is corpus doc %d, which should not match", q, i, g)
		}
		if math.Abs(h.Score-ws) > 1e-9*math.Max(1, math.Abs(ws)) {
			t.Fatalf("%s: doc %d scored %v, brute force %v", q, g, h.Score, ws)
		}
		if string(h.Fields) != string(c.docs[g].Stored) {
			t.Fatalf("%s: doc %d fields %s, want %s", q, g, h.Fields, c.docs[g].Stored)
		}
		if i > 0 {
			checkOrder(t, q, res.Hits[i-1], h)
		}
	}
}

// checkOrder fails unless a comes before b: higher score, then lower view,
// then lower doc.
func checkOrder(t *testing.T, q string, a, b Hit) {
	t.Helper()
	if a.Score < b.Score || (a.Score == b.Score && (a.Segment > b.Segment || (a.Segment == b.Segment && a.Doc >= b.Doc))) {
		t.Fatalf("%s: hits out of order: %+v before %+v", q, a, b)
	}
}

// bruteSplits are the segmentations the brute-force tests search: one
// segment, three, with and without deletions, and an empty first one.
func bruteSplits(c *corpus) map[string]split {
	deleted := map[int]bool{}
	for i := 0; i < len(c.docs); i += 5 {
		deleted[i] = true
	}
	deleted[1] = true
	return map[string]split{
		"one":              {sizes: []int{len(c.docs)}},
		"three":            {sizes: c.thirds()},
		"three-deleted":    {sizes: c.thirds(), deleted: deleted},
		"one-deleted":      {sizes: []int{len(c.docs)}, deleted: deleted},
		"with-empty-first": {sizes: append([]int{0}, c.thirds()...)},
	}
}

// eachBruteQuery runs check for every query of textQueries in every
// segmentation of bruteSplits, with the views, the split and the
// brute-force matches (scores by corpus index).
func eachBruteQuery(t *testing.T, check func(t *testing.T, c *corpus, sp split, views []SegmentView, q string, want map[int]float64)) {
	c := newtonCorpus(t)
	for name, sp := range bruteSplits(c) {
		t.Run(name, func(t *testing.T) {
			views := c.views(t, sp)
			b := newBrute(c, sp.deleted)
			for _, q := range textQueries {
				parsed, err := ParseString(c.schema, q)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				check(t, c, sp, views, q, b.eval(parsed))
			}
		})
	}
}

func TestTextMatchesBruteForce(t *testing.T) {
	eachBruteQuery(t, func(t *testing.T, c *corpus, sp split, views []SegmentView, q string, want map[int]float64) {
		checkAgainst(t, c, sp, q, searchAll(t, c, views, q), want)
	})
}

// TestCountOnlyMatchesBruteForce: a CountOnly request answers the number
// of live matching documents the brute-force evaluator finds, with no
// hit, for every query and segmentation (the document-frequency shortcut
// of a one-term, one-field query included, with and without deletions).
func TestCountOnlyMatchesBruteForce(t *testing.T) {
	eachBruteQuery(t, func(t *testing.T, c *corpus, _ split, views []SegmentView, q string, want map[int]float64) {
		raw, _ := json.Marshal(q)
		res, err := Search(context.Background(), c.schema, views, Request{Query: raw, CountOnly: true})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if res.TotalHits != len(want) || len(res.Hits) != 0 || res.TotalHitsRelation != EqualTo {
			t.Fatalf("%s: count-only answered %d (%d hits, relation %v), brute force finds %d", q, res.TotalHits, len(res.Hits), res.TotalHitsRelation, len(want))
		}
	})
}

func TestScoresIndependentOfSegmentation(t *testing.T) {
	c := newtonCorpus(t)
	n := len(c.docs)
	one := split{sizes: []int{n}}
	three := split{sizes: c.thirds()}
	seven := split{sizes: []int{1, n / 7, n / 7, n / 3, n / 9, 2, n - 1 - 2*(n/7) - n/3 - n/9 - 2}}
	base := c.views(t, one)
	for _, sp := range []split{three, seven} {
		views := c.views(t, sp)
		for _, q := range textQueries {
			a, b := searchAll(t, c, base, q), searchAll(t, c, views, q)
			if a.TotalHits != b.TotalHits || len(a.Hits) != len(b.Hits) {
				t.Fatalf("%s: %d hits in one segment, %d in %d", q, a.TotalHits, b.TotalHits, len(sp.sizes))
			}
			for i := range a.Hits {
				ga, gb := globalDoc(one, a.Hits[i]), globalDoc(sp, b.Hits[i])
				if ga != gb || a.Hits[i].Score != b.Hits[i].Score {
					t.Fatalf("%s: hit %d is doc %d (%v) in one segment, doc %d (%v) in %d",
						q, i, ga, a.Hits[i].Score, gb, b.Hits[i].Score, len(sp.sizes))
				}
			}
		}
	}
}

func TestDeletedNeverReturned(t *testing.T) {
	c := newtonCorpus(t)
	sp := split{sizes: c.thirds()}
	all := searchAll(t, c, c.views(t, sp), "light")
	if all.TotalHits < 20 {
		t.Fatalf("only %d documents mention light", all.TotalHits)
	}
	sp.deleted = map[int]bool{}
	for _, h := range all.Hits[:len(all.Hits)-3] {
		sp.deleted[globalDoc(sp, h)] = true
	}
	views := c.views(t, sp)
	res := searchAll(t, c, views, "light")
	if res.TotalHits != 3 || len(res.Hits) != 3 {
		t.Fatalf("%d hits (%d returned) after deleting all but 3", res.TotalHits, len(res.Hits))
	}
	for i, h := range res.Hits {
		if g := globalDoc(sp, h); sp.deleted[g] || g != globalDoc(sp, all.Hits[len(all.Hits)-3+i]) {
			t.Fatalf("hit %d is doc %d", i, g)
		}
	}
	if res := searchAll(t, c, views, "+light +tag:even"); res.TotalHits > 3 {
		t.Fatalf("must query counts %d hits, at most 3 are live", res.TotalHits)
	}
}

func TestPagination(t *testing.T) {
	c := newtonCorpus(t)
	views := c.views(t, split{sizes: c.thirds()})
	for _, q := range []string{"light", "tag:even", `"of the"`} {
		full := searchAll(t, c, views, q)
		var paged []Hit
		raw, _ := json.Marshal(q)
		for off := 0; off < full.TotalHits+7; off += 7 {
			res, err := Search(context.Background(), c.schema, views, Request{Query: raw, Limit: 7, Offset: off})
			if err != nil {
				t.Fatal(err)
			}
			if res.TotalHits != full.TotalHits {
				t.Fatalf("%s offset %d: %d total hits, want %d", q, off, res.TotalHits, full.TotalHits)
			}
			paged = append(paged, res.Hits...)
		}
		if len(paged) != len(full.Hits) {
			t.Fatalf("%s: pages hold %d hits, want %d", q, len(paged), len(full.Hits))
		}
		for i := range paged {
			if paged[i].Segment != full.Hits[i].Segment || paged[i].Doc != full.Hits[i].Doc || paged[i].Score != full.Hits[i].Score {
				t.Fatalf("%s: paged hit %d is %+v, want %+v", q, i, paged[i], full.Hits[i])
			}
		}
	}
}

func TestDefaultLimit(t *testing.T) {
	c := newtonCorpus(t)
	res, err := Search(context.Background(), c.schema, c.views(t, split{sizes: c.thirds()}), Request{Query: json.RawMessage(`"light"`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != DefaultLimit || res.TotalHits <= DefaultLimit {
		t.Fatalf("%d hits of %d, want %d", len(res.Hits), res.TotalHits, DefaultLimit)
	}
}

func TestSearchRefusals(t *testing.T) {
	c := newtonCorpus(t)
	views := c.views(t, split{sizes: []int{len(c.docs)}})
	cases := []struct {
		req  Request
		want string
	}{
		{Request{Query: json.RawMessage(`"light"`), Limit: -1}, "limit must not be negative"},
		{Request{Query: json.RawMessage(`"light"`), Offset: -1}, "offset must not be negative"},
		{Request{Query: json.RawMessage(`"light"`), Limit: MaxResultWindow + 1}, "at most 10000"},
		{Request{Query: json.RawMessage(`"light"`), Limit: 5000, Offset: 5001}, "at most 10000"},
		{Request{Query: json.RawMessage(`"light"`), Offset: MaxResultWindow}, "at most 10000"},
		{Request{Query: json.RawMessage(`"light"`), Limit: 1, Offset: math.MaxInt}, "at most 10000"},
		{Request{Query: json.RawMessage(`"nope:light"`)}, "unknown field"},
		{Request{Query: json.RawMessage(`"emb:light"`)}, "vector field"},
		{Request{}, "missing query"},
	}
	for _, tc := range cases {
		_, err := Search(context.Background(), c.schema, views, tc.req)
		checkQueryErr(t, string(tc.req.Query), err, tc.want)
	}
	if _, err := Search(context.Background(), c.schema, views, Request{Query: json.RawMessage(`"light"`), Limit: 5000, Offset: 5000}); err != nil {
		t.Fatalf("limit+offset == %d refused: %v", MaxResultWindow, err)
	}
}

func TestSearchCancelled(t *testing.T) {
	c := newtonCorpus(t)
	views := c.views(t, split{sizes: c.thirds()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, q := range []string{`"the"`, `{"dense":{"field":"emb","vector":[1,1,1,1]}}`, `{"sparse":{"field":"sp","vector":{"thex":1}}}`} {
		_, err := Search(ctx, c.schema, views, Request{Query: json.RawMessage(q)})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: got %v, want context.Canceled", q, err)
		}
	}
}

// lateCancel is a context that reports cancellation from its second Err
// call on: Search checks once up front, so the later checks are the
// periodic ones inside the loops.
type lateCancel struct {
	context.Context
	calls int
}

func (c *lateCancel) Err() error {
	if c.calls++; c.calls > 1 {
		return context.Canceled
	}
	return nil
}

func TestSearchCancelledWhileRunning(t *testing.T) {
	c := newtonCorpus(t)
	var docs []*schema.Document
	for range 10 {
		docs = append(docs, c.docs...)
	}
	views := []SegmentView{{Segment: openSegment(t, c.schema, docs[:3000])}, {Segment: openSegment(t, c.schema, docs[3000:])}}
	for _, q := range []string{`"the"`, `"\"of the\""`, `{"dense":{"field":"emb","vector":[1,1,1,1]}}`} {
		_, err := Search(&lateCancel{Context: context.Background()}, c.schema, views, Request{Query: json.RawMessage(q)})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: got %v, want context.Canceled", q, err)
		}
	}
}

func TestSearchNoViews(t *testing.T) {
	c := newtonCorpus(t)
	for _, q := range []string{`"light"`, `{"dense":{"field":"emb","vector":[1,1,1,1]}}`, `{"sparse":{"field":"sp","vector":{"thex":1}}}`} {
		res, err := Search(context.Background(), c.schema, nil, Request{Query: json.RawMessage(q)})
		if err != nil || res.TotalHits != 0 || len(res.Hits) != 0 {
			t.Fatalf("%s over no segments: %+v, %v", q, res, err)
		}
	}
}
