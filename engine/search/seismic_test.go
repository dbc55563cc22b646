package search

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// TestSeismicQuery: a Seismic search returns live documents with their
// exact inner-product scores, at most k of them, TotalHits counting the
// hits kept; with pruning loosened (huge heap_factor, cut over every
// dimension) it finds the exact top-k; "exact":true and a negative weight
// take the full scan, whose TotalHits counts every matching document.
func TestSeismicQuery(t *testing.T) {
	c := newtonCorpus(t)
	deleted := map[int]bool{}
	for i := 3; i < len(c.docs); i += 5 {
		deleted[i] = true
	}
	sp := split{sizes: c.thirds(), deleted: deleted}
	views := c.views(t, sp)
	run := func(q string) Result {
		t.Helper()
		res, err := Search(context.Background(), c.schema, views, Request{Query: json.RawMessage(q), Limit: 10})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return res
	}
	for _, vec := range []map[string]float64{
		{"thex": 1},
		{"thex": 0.5, "ofx": 2, "lightx": 1, "absentx": 3},
		{"andx": 1, "ifx": 1, "colourx": 0.25},
	} {
		v := mustJSON(t, vec)
		want := bruteSparse(c, deleted, vec)
		exact := run(fmt.Sprintf(`{"sparse":{"field":"sp","vector":%s,"exact":true}}`, v))
		if exact.TotalHits != len(want) {
			t.Fatalf("%s exact: TotalHits %d, brute force %d", v, exact.TotalHits, len(want))
		}
		loose := run(fmt.Sprintf(`{"sparse":{"field":"sp","vector":%s,"heap_factor":100,"cut":1024}}`, v))
		if len(loose.Hits) != len(exact.Hits) {
			t.Fatalf("%s: seismic %d hits, exact %d", v, len(loose.Hits), len(exact.Hits))
		}
		for i := range exact.Hits {
			if loose.Hits[i].Score != exact.Hits[i].Score {
				t.Fatalf("%s hit %d: seismic score %v, exact %v", v, i, loose.Hits[i].Score, exact.Hits[i].Score)
			}
		}
		def := run(fmt.Sprintf(`{"sparse":{"field":"sp","vector":%s,"k":5}}`, v))
		if len(def.Hits) > 5 || def.TotalHits != len(def.Hits) {
			t.Fatalf("%s k=5: %d hits, TotalHits %d", v, len(def.Hits), def.TotalHits)
		}
		for _, h := range def.Hits {
			g := globalDoc(sp, h)
			if deleted[g] || want[g] != h.Score {
				t.Fatalf("%s: hit doc %d (deleted %v) score %v, brute force %v", v, g, deleted[g], h.Score, want[g])
			}
		}
	}
	neg := map[string]float64{"thex": 1, "ofx": -1}
	res := run(fmt.Sprintf(`{"sparse":{"field":"sp","vector":%s}}`, mustJSON(t, neg)))
	if want := bruteSparse(c, deleted, neg); res.TotalHits != len(want) {
		t.Fatalf("negative weight: TotalHits %d, want the full scan's %d", res.TotalHits, len(want))
	}
}
