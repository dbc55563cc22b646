package index

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/summadev/summa/engine/search"
)

// hitKey is a search hit as a client sees it: the stored document and the
// score (segment and doc id change with every rewrite).
type hitKey struct {
	Fields string
	Score  float64
}

// answers runs the queries over the current snapshot and returns every
// hit, sorted by stored document (ties in score are ordered by doc id,
// which a reorder changes). With scores false, scores are left out.
func answers(t *testing.T, idx *Index, queries []string, scores bool) map[string][]hitKey {
	t.Helper()
	snap, err := idx.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	out := map[string][]hitKey{}
	for _, q := range queries {
		raw, _ := json.Marshal(q)
		res, err := snap.Search(context.Background(), search.Request{Query: raw, Limit: 1000})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if res.TotalHits != len(res.Hits) {
			t.Fatalf("%s: %d hits of %d returned", q, len(res.Hits), res.TotalHits)
		}
		var hits []hitKey
		for _, h := range res.Hits {
			k := hitKey{Fields: string(h.Fields)}
			if scores {
				k.Score = h.Score
			}
			hits = append(hits, k)
		}
		sort.Slice(hits, func(i, j int) bool { return hits[i].Fields < hits[j].Fields })
		out[q] = hits
	}
	return out
}

// TestMergeAndCompactionKeepSearchAnswers merges (segment.Merge: no
// re-tokenizing) an index of real text committed in several segments with
// deleted and upserted rows, then compacts and reorders it, and checks that every query
// class returns the same documents with the same scores and totals before
// and after each rewrite.
func TestMergeAndCompactionKeepSearchAnswers(t *testing.T) {
	_, idx := createMem(t)
	defer mustClose(t, idx)
	for b := 0; b < 5; b++ {
		if err := idx.Add(docs(t, b*60, (b+1)*60, 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	for _, pk := range []string{"p0003", "p0061", "p0062", "p0150", "p0299"} {
		if _, err := idx.Delete(pk); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, idx)
	// Upserts across sources: rows of the first commits replaced by a
	// later one (the replaced rows stay, masked, in their sources).
	if err := idx.Add(append(docs(t, 10, 25, 2), docs(t, 130, 140, 2)...)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	queries := []string{"light", "light colours prism", "+light +red", "+light -red", `"rays of light"`,
		`"of the"`, "title:opticks", "id:p0100", "refraction OR reflexion", "n:1"}
	want := answers(t, idx, queries, true)
	ctx := context.Background()
	check := func(step string, scores bool) {
		t.Helper()
		got := answers(t, idx, queries, scores)
		for _, q := range queries {
			if len(want[q]) == 0 {
				t.Fatalf("%s matches nothing", q)
			}
			w := want[q]
			if !scores {
				w = nil
				for _, h := range want[q] {
					w = append(w, hitKey{Fields: h.Fields})
				}
			}
			if fmt.Sprint(got[q]) != fmt.Sprint(w) {
				t.Fatalf("after %s, %s answers %d hits, want %d:\n%v\nwant\n%v", step, q, len(got[q]), len(w), got[q], w)
			}
		}
	}
	if _, err := idx.ForceMerge(ctx, 1); err != nil {
		t.Fatal(err)
	}
	check("merge", true)
	// Compaction drops the deleted rows from the statistics: the same
	// documents match, with other scores.
	if _, err := idx.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	check("compaction", false)
	want = answers(t, idx, queries, true)
	if _, err := idx.Reorder(ctx, ReorderOptions{}); err != nil {
		t.Fatal(err)
	}
	check("reorder", true)
}
