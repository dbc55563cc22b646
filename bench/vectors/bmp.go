package vectors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/search"
)

// bmpSchema is the section's index schema.
const bmpSchema = `{"fields":[
 {"name":"v","type":"sparse_vector"},
 {"name":"terms","type":"text","stored":false,"reorder":true}
]}`

// bmpTimedRounds is how many times each query is timed each way.
const bmpTimedRounds = 5

// runBMP measures the "bmp" section: block-max pruning against exhaustive
// scoring of the sparse set's held-out heading queries, on one merged
// segment, before and after BP reordering. Sparse vector fields cannot be BP-reordered (BP
// applies to text fields), so every document also carries its window's
// terms in an unstored text field marked reorder: BP orders the documents
// by that field, and the sparse field follows the new order.
// The queries ask for "exact": both ways give the exact inner-product top
// 10 (without it a sparse query runs on Seismic, see the seismic section).
func runBMP(ctx context.Context, cfg Config) error {
	minDocs := 200000
	if cfg.Quick {
		minDocs = 30000
	}
	set, err := LoadSparseSet(SparseOptions{MinDocs: minDocs, MaxQueries: 300, Log: cfg.Logf})
	if err != nil {
		return err
	}
	s, err := schema.Parse([]byte(bmpSchema))
	if err != nil {
		return err
	}
	idx, err := index.Create(vfs.Default, filepath.Join(cfg.WorkDir, "idx"), s, index.Options{})
	if err != nil {
		return err
	}
	defer idx.Close(context.Background())
	cfg.Logf("bmp: indexing %d sparse vectors", len(set.Docs))
	const batch = 20000
	for start := 0; start < len(set.Docs); start += batch {
		var docs []*schema.Document
		for _, v := range set.Docs[start:min(start+batch, len(set.Docs))] {
			d, err := s.ParseDocument(bmpDoc(set, v))
			if err != nil {
				return err
			}
			docs = append(docs, d)
		}
		if err := idx.Add(docs); err != nil {
			return err
		}
		if _, err := idx.Commit(ctx); err != nil {
			return err
		}
	}
	if _, err := idx.ForceMerge(ctx, 1); err != nil && !errors.Is(err, index.ErrNothingToDo) {
		return err
	}
	queries := make([]json.RawMessage, len(set.Queries))
	for i, q := range set.Queries {
		vec := map[string]float32{}
		for j, d := range q.Dims {
			vec[set.Dims[d]] = q.Weights[j]
		}
		raw, _ := json.Marshal(map[string]any{"sparse": map[string]any{"field": "v", "vector": vec, "exact": true}})
		queries[i] = raw
	}
	cfg.Printf("bmp sparse set: %d vectors, %d dimensions, %d queries (%s)", len(set.Docs), len(set.Dims), len(queries), set.Source)
	if err := measureSparseBMP(ctx, cfg, idx, queries, "one segment, without BP"); err != nil {
		return err
	}
	cfg.Logf("bmp: BP reorder")
	t := time.Now()
	if _, err := idx.Reorder(ctx, index.ReorderOptions{}); err != nil {
		return fmt.Errorf("reorder: %w", err)
	}
	cfg.Logf("bmp: BP took %v", time.Since(t).Round(time.Millisecond))
	return measureSparseBMP(ctx, cfg, idx, queries, "one segment, after BP on the companion text field")
}

// bmpDoc returns the JSON document of a sparse vector: the vector, and its
// terms as text for BP.
func bmpDoc(set *SparseSet, v SparseVec) []byte {
	vec := make(map[string]float32, len(v.Dims))
	terms := make([]string, len(v.Dims))
	for j, d := range v.Dims {
		vec[set.Dims[d]] = v.Weights[j]
		terms[j] = set.Dims[d]
	}
	raw, _ := json.Marshal(map[string]any{"v": vec, "terms": strings.Join(terms, " ")})
	return raw
}

// measureSparseBMP runs every query exhaustively and with BMP, fails
// unless the top 10 agree, and prints the speedup of the summed best-of
// timings.
func measureSparseBMP(ctx context.Context, cfg Config, idx *index.Index, queries []json.RawMessage, label string) error {
	snap, err := idx.Snapshot()
	if err != nil {
		return err
	}
	defer snap.Close()
	var exh, pru time.Duration
	var per [2][]time.Duration
	for qi, q := range queries {
		exact := search.Request{Query: q, Limit: 10, SkipFields: true}
		pruned := search.Request{Query: q, Limit: 10, TotalHitsThreshold: 1, SkipFields: true}
		a, err := snap.Search(ctx, exact)
		if err != nil {
			return fmt.Errorf("query %d: %w", qi, err)
		}
		b, err := snap.Search(ctx, pruned)
		if err != nil {
			return fmt.Errorf("query %d with BMP: %w", qi, err)
		}
		if len(a.Hits) != len(b.Hits) {
			return fmt.Errorf("query %d: %d hits exhaustive, %d with BMP", qi, len(a.Hits), len(b.Hits))
		}
		for i := range a.Hits {
			if a.Hits[i].Segment != b.Hits[i].Segment || a.Hits[i].Doc != b.Hits[i].Doc || a.Hits[i].Score != b.Hits[i].Score {
				return fmt.Errorf("query %d hit %d: doc %d score %v exhaustive, doc %d score %v with BMP",
					qi, i, a.Hits[i].Doc, a.Hits[i].Score, b.Hits[i].Doc, b.Hits[i].Score)
			}
		}
		best := [2]time.Duration{1 << 62, 1 << 62}
		for r := 0; r < bmpTimedRounds; r++ {
			for k, req := range []search.Request{exact, pruned} {
				t := time.Now()
				if _, err := snap.Search(ctx, req); err != nil {
					return err
				}
				best[k] = min(best[k], time.Since(t))
			}
		}
		exh += best[0]
		pru += best[1]
		per[0], per[1] = append(per[0], best[0]), append(per[1], best[1])
	}
	p50 := func(ds []time.Duration) float64 {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return float64(ds[len(ds)/2]) / 1e6
	}
	if len(queries) == 0 || pru == 0 {
		return errors.New("bmp: no query timed")
	}
	cfg.Printf("bmp sparse (%s): %d queries, same top 10 checked; top-10 ids and scores, sum of best-of-%d: exhaustive %.1f ms, bmp %.1f ms; p50 %.3f ms vs %.3f ms",
		label, len(queries), bmpTimedRounds, float64(exh)/1e6, float64(pru)/1e6, p50(per[0]), p50(per[1]))
	cfg.Printf("bmp speedup vs exhaustive sparse: %.2f", float64(exh)/float64(pru))
	return nil
}
