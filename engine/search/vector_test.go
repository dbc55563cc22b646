package search

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// bruteDense scores every live document with a vector by dot product.
func bruteDense(c *corpus, deleted map[int]bool, q []float32) map[int]float64 {
	out := map[int]float64{}
	for i, d := range c.docs {
		if v := d.Fields[cEmb].Dense; v != nil && !deleted[i] {
			out[i] = Dot(q, v)
		}
	}
	return out
}

// bruteSparse scores every live document sharing a dimension with q.
func bruteSparse(c *corpus, deleted map[int]bool, q map[string]float64) map[int]float64 {
	out := map[int]float64{}
	for i, d := range c.docs {
		if deleted[i] {
			continue
		}
		for _, e := range d.Fields[cSp].Sparse {
			if w, ok := q[e.Dim]; ok {
				out[i] += w * float64(e.Weight)
			}
		}
	}
	return out
}

func TestDenseQuery(t *testing.T) {
	c := newtonCorpus(t)
	deleted := map[int]bool{3: true, 8: true, 100: true, 101: true}
	for i := 0; i < len(c.docs); i += 3 {
		deleted[i] = true
	}
	sp := split{sizes: c.thirds(), deleted: deleted}
	views := c.views(t, sp)
	for _, tc := range []struct {
		vec           []float32
		k, lim, off   int
		wantTotalHits int
	}{
		{[]float32{1, -0.5, 0.25, 2}, 25, 10, 5, 25},
		{[]float32{1, -0.5, 0.25, 2}, 25, 30, 0, 25},
		{[]float32{-3, 0, 1, 0}, MaxK, MaxResultWindow, 0, -1},
		{[]float32{0, 0, 0, 0}, 40, 40, 0, 40}, // every score ties: view then doc order
	} {
		q := fmt.Sprintf(`{"dense":{"field":"emb","vector":%s,"k":%d}}`, mustJSON(t, tc.vec), tc.k)
		res, err := Search(context.Background(), c.schema, views, Request{Query: json.RawMessage(q), Limit: tc.lim, Offset: tc.off})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		want := bruteDense(c, deleted, tc.vec)
		order := ranked(want)[:min(tc.k, len(want))]
		if tc.wantTotalHits < 0 {
			tc.wantTotalHits = len(want)
		}
		if res.TotalHits != tc.wantTotalHits {
			t.Fatalf("%s: %d total hits, want %d", q, res.TotalHits, tc.wantTotalHits)
		}
		page := order[min(tc.off, len(order)):min(tc.off+tc.lim, len(order))]
		if len(res.Hits) != len(page) {
			t.Fatalf("%s: %d hits, want %d", q, len(res.Hits), len(page))
		}
		for i, h := range res.Hits {
			if g := globalDoc(sp, h); g != page[i] || h.Score != want[g] {
				t.Fatalf("%s: hit %d is doc %d scored %v, want doc %d scored %v", q, i, g, h.Score, page[i], want[page[i]])
			}
			if string(h.Fields) != string(c.docs[page[i]].Stored) {
				t.Fatalf("%s: hit %d has fields %s", q, i, h.Fields)
			}
		}
	}
}

func TestSparseQuery(t *testing.T) {
	c := newtonCorpus(t)
	deleted := map[int]bool{}
	for i := 1; i < len(c.docs); i += 4 {
		deleted[i] = true
	}
	for _, sp := range []split{{sizes: c.thirds(), deleted: deleted}, {sizes: []int{len(c.docs)}}} {
		views := c.views(t, sp)
		for _, vec := range []map[string]float64{
			{"thex": 1},
			{"thex": 0.5, "ofx": 2, "lightx": -1, "absentx": 3},
			{"andx": 1, "ifx": 1},
		} {
			q := fmt.Sprintf(`{"sparse":{"field":"sp","vector":%s}}`, mustJSON(t, vec))
			res, err := Search(context.Background(), c.schema, views, Request{Query: json.RawMessage(q), Limit: MaxResultWindow})
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			want := bruteSparse(c, sp.deleted, vec)
			if len(want) < 5 {
				t.Fatalf("%s: brute force finds only %d documents", q, len(want))
			}
			checkAgainst(t, c, sp, q, res, want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
