package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/summadev/summa/engine/analysis"
	"github.com/summadev/summa/engine/search"
)

// BMPRun compares block-max pruning with exhaustive evaluation on the
// disjunctive queries (one index state: before or after BP).
type BMPRun struct {
	// Label says which index state was measured.
	Label string
	// Queries is the number of disjunctive queries.
	Queries int
	// Exhaustive and Pruned sum, over the queries, each query's fastest
	// of the timed rounds.
	Exhaustive, Pruned time.Duration
	// P50Exhaustive and P50Pruned are the median query latencies.
	P50Exhaustive, P50Pruned time.Duration
	// Speedup is Exhaustive / Pruned.
	Speedup float64
	// PageExhaustive and PagePruned are the same sums with the page's
	// stored fields read (what a client gets); PageSpeedup their ratio.
	PageExhaustive, PagePruned time.Duration
	PageSpeedup                float64
}

// bmpRounds is how many times every query is timed each way.
const bmpRounds = 5

// BMPQueries returns the disjunctive queries BMP is measured on: the
// query set's term and OR queries, then up to 200 section headings of the
// corpus (every k-th document with at least two distinct terms) as OR
// queries of their terms.
func BMPQueries(c *Corpus, qs []Query) []Query {
	var out []Query
	for _, q := range qs {
		if q.Kind == KindTerm || q.Kind == KindOr {
			out = append(out, q)
		}
	}
	step := max(1, len(c.Docs)/200)
	for i := 0; i < len(c.Docs) && len(out) < 200+len(qs); i += step {
		var terms []string
		seen := map[string]bool{}
		for _, t := range analysis.Terms(c.Docs[i].Title) {
			if !seen[t] && len(terms) < 8 {
				seen[t] = true
				terms = append(terms, t)
			}
		}
		if len(terms) >= 2 {
			out = append(out, Query{Name: "heading: " + strings.Join(terms, " "), Kind: KindOr, Terms: terms})
		}
	}
	return out
}

// MeasureBMP runs every query exhaustively and with BMP (totalHitsThreshold
// 1) on one snapshot of the index, fails unless both give the same top 10
// (scores and stored fields, in order), and times both ways.
func (o *Ours) MeasureBMP(ctx context.Context, label string, qs []Query) (*BMPRun, error) {
	snap, err := o.idx.Snapshot()
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	run := &BMPRun{Label: label, Queries: len(qs)}
	var exh, pru []time.Duration
	for _, q := range qs {
		raw, _ := json.Marshal(QueryString(q))
		exact := search.Request{Query: raw, Limit: 10}
		pruned := search.Request{Query: raw, Limit: 10, TotalHitsThreshold: 1}
		a, err := snap.Search(ctx, exact)
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", q.Name, err)
		}
		b, err := snap.Search(ctx, pruned)
		if err != nil {
			return nil, fmt.Errorf("query %q with BMP: %w", q.Name, err)
		}
		if err := sameTop(a, b); err != nil {
			return nil, fmt.Errorf("bmp: query %q: %w", q.Name, err)
		}
		exactIDs, prunedIDs := exact, pruned
		exactIDs.SkipFields, prunedIDs.SkipFields = true, true
		best := [4]time.Duration{1 << 62, 1 << 62, 1 << 62, 1 << 62}
		for r := 0; r < bmpRounds; r++ {
			for k, req := range []search.Request{exactIDs, prunedIDs, exact, pruned} {
				t := time.Now()
				if _, err := snap.Search(ctx, req); err != nil {
					return nil, err
				}
				best[k] = min(best[k], time.Since(t))
			}
		}
		run.Exhaustive += best[0]
		run.Pruned += best[1]
		run.PageExhaustive += best[2]
		run.PagePruned += best[3]
		exh, pru = append(exh, best[0]), append(pru, best[1])
	}
	if run.PagePruned > 0 {
		run.PageSpeedup = float64(run.PageExhaustive) / float64(run.PagePruned)
	}
	run.P50Exhaustive, run.P50Pruned = median(exh), median(pru)
	if run.Pruned > 0 {
		run.Speedup = float64(run.Exhaustive) / float64(run.Pruned)
	}
	return run, nil
}

// sameTop fails unless two results list the same hits in the same order.
func sameTop(a, b search.Result) error {
	if len(a.Hits) != len(b.Hits) {
		return fmt.Errorf("%d hits exhaustive, %d with BMP", len(a.Hits), len(b.Hits))
	}
	for i := range a.Hits {
		x, y := a.Hits[i], b.Hits[i]
		if x.Segment != y.Segment || x.Doc != y.Doc || x.Score != y.Score {
			return fmt.Errorf("hit %d: doc %d/%d score %v exhaustive, doc %d/%d score %v with BMP",
				i, x.Segment, x.Doc, x.Score, y.Segment, y.Doc, y.Score)
		}
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// WriteBMP prints a BMP run in the form, after a line saying what
// was measured.
func WriteBMP(w io.Writer, r *BMPRun) {
	fmt.Fprintf(w, "bmp text (%s): %d disjunctive queries, same top 10 checked; top-10 ids and scores, sum of best-of-%d: exhaustive %.1f ms, bmp %.1f ms; p50 %.3f ms vs %.3f ms\n",
		r.Label, r.Queries, bmpRounds, msf(r.Exhaustive), msf(r.Pruned), msf(r.P50Exhaustive), msf(r.P50Pruned))
	fmt.Fprintf(w, "bmp text (%s) with the page's stored fields read: exhaustive %.1f ms, bmp %.1f ms, speedup %.2f\n",
		r.Label, msf(r.PageExhaustive), msf(r.PagePruned), r.PageSpeedup)
	fmt.Fprintf(w, "bmp speedup vs exhaustive text: %.2f\n", r.Speedup)
}

// msf returns d in milliseconds.
func msf(d time.Duration) float64 { return float64(d) / 1e6 }

// measureBMP measures BMP on the open index o, prints the result and
// keeps it in run.
func measureBMP(ctx context.Context, cfg *Config, o *Ours, run *EngineRun, qs []Query, label string) error {
	cfg.logf("bmp: %s", label)
	r, err := o.MeasureBMP(ctx, label, qs)
	if err != nil {
		return err
	}
	WriteBMP(os.Stdout, r)
	run.BMP = append(run.BMP, r)
	return nil
}
