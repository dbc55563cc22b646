package vectors

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/search"
	"github.com/summadev/summa/engine/segment"
)

func init() {
	Register(Section{Name: "seismic", Order: 20, Run: runSeismic})
}

// runSeismic indexes the sparse set in one segment (Seismic fully placed)
// and compares the default Seismic search with the exact full scan on the
// held-out queries: recall@10 against the exact inner-product top-10,
// speedup of the summed query times, median latency. Times are of the
// ranking alone (search.RankOnly: stored fields are not read, for either
// side), each the fastest of five runs, exact and Seismic
// interleaved query by query. A few neighbouring settings are
// logged to stderr (how the defaults were chosen).
func runSeismic(ctx context.Context, cfg Config) error {
	opts := SparseOptions{MinDocs: 200000, MaxQueries: 500, Log: cfg.Logf}
	if cfg.Quick {
		opts = SparseOptions{MinDocs: 40000, MaxQueries: 200, Log: cfg.Logf}
	}
	set, err := LoadSparseSet(opts)
	if err != nil {
		return err
	}
	s := schema.MustNew(schema.Field{Name: "sp", Type: schema.SparseVector})
	b := segment.NewBuilder(s)
	for _, v := range set.Docs {
		d := &schema.Document{Fields: make([]schema.Values, 1)}
		for k, dim := range v.Dims {
			d.Fields[0].Sparse = append(d.Fields[0].Sparse, schema.SparseEntry{Dim: set.Dims[dim], Weight: v.Weights[k]})
		}
		b.Add(d)
	}
	start := time.Now()
	info, err := b.Write(ctx, vfs.Default, cfg.WorkDir, 1)
	if err != nil {
		return fmt.Errorf("seismic: write: %w", err)
	}
	cfg.Logf("seismic: %d vectors, %d dims written in %v", len(set.Docs), len(set.Dims), time.Since(start).Round(time.Millisecond))
	r, err := segment.Open(vfs.Default, cfg.WorkDir, s, info)
	if err != nil {
		return err
	}
	defer r.Close()
	views := []search.SegmentView{{Segment: r}}
	queries := make([]string, 0, len(set.Queries))
	for _, q := range set.Queries {
		m := map[string]float32{}
		for k, dim := range q.Dims {
			m[set.Dims[dim]] = q.Weights[k]
		}
		raw, _ := json.Marshal(m)
		queries = append(queries, string(raw))
	}
	run := func(q, extra string) ([]uint32, time.Duration, error) {
		body := fmt.Sprintf(`{"sparse":{"field":"sp","vector":%s%s}}`, q, extra)
		// The fastest of five runs: the machine is shared, and the
		// figure compares the algorithms, not the neighbours' load.
		var res search.Result
		var err error
		el := time.Hour
		for rep := 0; rep < 5 && err == nil; rep++ {
			t0 := time.Now()
			res, err = search.RankOnly(ctx, s, views, search.Request{Query: json.RawMessage(body), Limit: 10})
			el = min(el, time.Since(t0))
		}
		var docs []uint32
		for _, h := range res.Hits {
			docs = append(docs, h.Doc)
		}
		return docs, el, err
	}
	truth := make([][]uint32, len(queries))
	for i, q := range queries {
		if truth[i], _, err = run(q, `,"exact":true`); err != nil {
			return err
		}
	}
	// Each query runs exact and Seismic back to back, so that both see
	// the same load on a shared machine.
	measure := func(extra string) (recall, speedup float64, p50 time.Duration, err error) {
		var lat []time.Duration
		var exactTotal, total time.Duration
		var hit, want int
		for i, q := range queries {
			_, ex, err := run(q, `,"exact":true`)
			if err != nil {
				return 0, 0, 0, err
			}
			docs, el, err := run(q, extra)
			if err != nil {
				return 0, 0, 0, err
			}
			exactTotal += ex
			total += el
			lat = append(lat, el)
			in := map[uint32]bool{}
			for _, d := range docs {
				in[d] = true
			}
			for _, d := range truth[i] {
				if in[d] {
					hit++
				}
			}
			want += len(truth[i])
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		return float64(hit) / float64(max(want, 1)), float64(exactTotal) / float64(total), lat[len(lat)/2], nil
	}
	for _, extra := range []string{`,"heap_factor":1`, `,"heap_factor":1.5`, `,"cut":3`, `,"cut":8`, `,"heap_factor":100,"cut":100`} {
		rc, sp, p50, err := measure(extra)
		if err != nil {
			return err
		}
		cfg.Logf("seismic sweep %s: recall@10 %.3f speedup %.1f p50 %.3f ms", extra, rc, sp, float64(p50)/1e6)
	}
	rc, sp, p50, err := measure("")
	if err != nil {
		return err
	}
	cfg.Printf("seismic recall@10: %.3f", rc)
	cfg.Printf("seismic speedup vs exact: %.1f", sp)
	cfg.Printf("seismic p50_ms: %.3f", float64(p50)/1e6)
	return nil
}
