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
	b := &seismicBench{s: schema.MustNew(schema.Field{Name: "sp", Type: schema.SparseVector})}
	r, err := b.write(ctx, cfg, set)
	if err != nil {
		return err
	}
	defer r.Close()
	b.views = []search.SegmentView{{Segment: r}}
	b.queries = sparseQueries(set)
	b.truth = make([][]uint32, len(b.queries))
	for i, q := range b.queries {
		if b.truth[i], _, err = b.run(ctx, q, `,"exact":true`); err != nil {
			return err
		}
	}
	for _, extra := range []string{`,"heap_factor":1`, `,"heap_factor":1.5`, `,"cut":3`, `,"cut":8`, `,"heap_factor":100,"cut":100`} {
		rc, sp, p50, err := b.measure(ctx, extra)
		if err != nil {
			return err
		}
		cfg.Logf("seismic sweep %s: recall@10 %.3f speedup %.1f p50 %.3f ms", extra, rc, sp, float64(p50)/1e6)
	}
	rc, sp, p50, err := b.measure(ctx, "")
	if err != nil {
		return err
	}
	cfg.Printf("seismic recall@10: %.3f", rc)
	cfg.Printf("seismic speedup vs exact: %.1f", sp)
	cfg.Printf("seismic p50_ms: %.3f", float64(p50)/1e6)
	return nil
}

// seismicBench is one Seismic run's segment, queries and ground truth.
type seismicBench struct {
	s       *schema.Schema
	views   []search.SegmentView
	queries []string   // each query's sparse vector in JSON
	truth   [][]uint32 // each query's exact top 10
}

// write builds one segment of the set's vectors in the work directory
// and opens it.
func (b *seismicBench) write(ctx context.Context, cfg Config, set *SparseSet) (*segment.Reader, error) {
	sb := segment.NewBuilder(b.s)
	for _, v := range set.Docs {
		d := &schema.Document{Fields: make([]schema.Values, 1)}
		for k, dim := range v.Dims {
			d.Fields[0].Sparse = append(d.Fields[0].Sparse, schema.SparseEntry{Dim: set.Dims[dim], Weight: v.Weights[k]})
		}
		sb.Add(d)
	}
	start := time.Now()
	info, err := sb.Write(ctx, vfs.Default, cfg.WorkDir, 1)
	if err != nil {
		return nil, fmt.Errorf("seismic: write: %w", err)
	}
	cfg.Logf("seismic: %d vectors, %d dims written in %v", len(set.Docs), len(set.Dims), time.Since(start).Round(time.Millisecond))
	return segment.Open(vfs.Default, cfg.WorkDir, b.s, info)
}

// sparseQueries returns the set's queries as the JSON vectors of sparse
// queries.
func sparseQueries(set *SparseSet) []string {
	queries := make([]string, 0, len(set.Queries))
	for _, q := range set.Queries {
		m := map[string]float32{}
		for k, dim := range q.Dims {
			m[set.Dims[dim]] = q.Weights[k]
		}
		raw, _ := json.Marshal(m)
		queries = append(queries, string(raw))
	}
	return queries
}

// run searches the segment for q with the request's extra members, and
// returns the top 10 and the fastest time of five runs: the machine is
// shared, and the figure compares the algorithms, not the neighbours'
// load.
func (b *seismicBench) run(ctx context.Context, q, extra string) ([]uint32, time.Duration, error) {
	body := fmt.Sprintf(`{"sparse":{"field":"sp","vector":%s%s}}`, q, extra)
	var res search.Result
	var err error
	el := time.Hour
	for rep := 0; rep < 5 && err == nil; rep++ {
		t0 := time.Now()
		res, err = search.RankOnly(ctx, b.s, b.views, search.Request{Query: json.RawMessage(body), Limit: 10})
		el = min(el, time.Since(t0))
	}
	var docs []uint32
	for _, h := range res.Hits {
		docs = append(docs, h.Doc)
	}
	return docs, el, err
}

// measure runs every query exact and with the extra members back to
// back, so that both see the same load on a shared machine, and returns
// the recall@10, the speedup over exact and the p50 latency.
func (b *seismicBench) measure(ctx context.Context, extra string) (recall, speedup float64, p50 time.Duration, err error) {
	var lat []time.Duration
	var exactTotal, total time.Duration
	var hit, want int
	for i, q := range b.queries {
		_, ex, err := b.run(ctx, q, `,"exact":true`)
		if err != nil {
			return 0, 0, 0, err
		}
		docs, el, err := b.run(ctx, q, extra)
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
		for _, d := range b.truth[i] {
			if in[d] {
				hit++
			}
		}
		want += len(b.truth[i])
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return float64(hit) / float64(max(want, 1)), float64(exactTotal) / float64(total), lat[len(lat)/2], nil
}
