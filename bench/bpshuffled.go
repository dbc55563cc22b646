package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// BPShuffled is BP's effect on the corpus ingested in a shuffled order
// (see Shuffled), where documents are not grouped by topic as in path
// order.
type BPShuffled struct {
	// DocBefore and DocAfter are the merged index's doc-id bytes before
	// and after Index.Reorder.
	DocBefore, DocAfter int64
	// SearchBefore and SearchAfter sum, over every query and mode, the
	// fastest of bpSearchRounds timed runs.
	SearchBefore, SearchAfter time.Duration
	// Err says why it was not measured ("" when it was).
	Err string
}

// bpSearchRounds is how many times each query is timed before and after
// BP on the shuffled index.
const bpSearchRounds = 3

// bpShuffledPhase ingests the corpus in the shuffled order into a new
// index of ours with the many-segment cadence, merges it to one segment,
// and measures doc-id bytes and search time (every query, every mode)
// before and after Index.Reorder.
func bpShuffledPhase(ctx context.Context, cfg *Config, c *Corpus, qs []Query) (*BPShuffled, error) {
	docs := Shuffled(c.Docs)
	raw := NDJSON(docs)
	o, err := NewOurs()
	if err != nil {
		return nil, err
	}
	base, err := os.MkdirTemp(cfg.WorkDir, "ours-shuffled-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	cfg.logf("ours: bp on the shuffled order: ingest, merge, search, reorder, search")
	if err := o.Create(filepath.Join(base, "index")); err != nil {
		return nil, err
	}
	defer o.Close(ctx)
	per := (len(docs) + cfg.OpenCommits - 1) / max(1, cfg.OpenCommits)
	if _, _, _, err := ingest(ctx, o, docs, raw, max(1, per)); err != nil {
		return nil, fmt.Errorf("shuffled ingest: %w", err)
	}
	if err := o.ForceMerge(ctx); err != nil {
		return nil, fmt.Errorf("shuffled merge: %w", err)
	}
	out := &BPShuffled{}
	if _, out.DocBefore, err = o.PostingsBytes(); err != nil {
		return nil, err
	}
	if out.SearchBefore, err = bestSearchSum(ctx, o, qs); err != nil {
		return nil, err
	}
	if _, err := o.Reorder(ctx); err != nil {
		if errors.Is(err, errNoReorder) {
			out.Err = err.Error()
			return out, nil
		}
		return nil, fmt.Errorf("shuffled bp: %w", err)
	}
	if _, out.DocAfter, err = o.PostingsBytes(); err != nil {
		return nil, err
	}
	if out.SearchAfter, err = bestSearchSum(ctx, o, qs); err != nil {
		return nil, err
	}
	return out, nil
}

// bestSearchSum sums, over qs and every mode, each query's fastest of
// bpSearchRounds runs (after one untimed run).
func bestSearchSum(ctx context.Context, e Engine, qs []Query) (time.Duration, error) {
	var sum time.Duration
	for _, m := range Modes {
		for _, q := range qs {
			best := time.Duration(math.MaxInt64)
			for r := 0; r <= bpSearchRounds; r++ {
				t := time.Now()
				if _, err := searchIn(ctx, e, q, m); err != nil {
					return 0, fmt.Errorf("%s: query %q: %w", m, q.Name, err)
				}
				if d := time.Since(t); r > 0 {
					best = min(best, d)
				}
			}
			sum += best
		}
	}
	return sum, nil
}

// bpShuffledLines prints the shuffled-order BP lines (medians over the
// repetitions).
func (res *Result) bpShuffledLines() string {
	var before, after, sb, sa []float64
	why := ""
	for _, rep := range res.Reps {
		r := rep.Engines["ours"]
		if r == nil || r.BPShuffled == nil {
			continue
		}
		if s := r.BPShuffled; s.Err != "" {
			why = s.Err
		} else if s.DocBefore > 0 && s.SearchAfter > 0 {
			before, after = append(before, float64(s.DocBefore)), append(after, float64(s.DocAfter))
			sb, sa = append(sb, float64(s.SearchBefore)), append(sa, float64(s.SearchAfter))
		}
	}
	var b strings.Builder
	if len(before) == 0 {
		if why == "" {
			why = "not measured"
		}
		fmt.Fprintf(&b, "bp doc-id bytes smaller (shuffled): n/a (%s)\nbp search speedup (shuffled): n/a\n", why)
		return b.String()
	}
	bb, aa := newSpread(before), newSpread(after)
	fmt.Fprintf(&b, "bp doc-id bytes smaller (shuffled): %.1f%%\n", 100*(1-aa.med/bb.med))
	fmt.Fprintf(&b, "bp search speedup (shuffled): %s\n", ratioString(newSpread(sb), newSpread(sa)))
	fmt.Fprintf(&b, "bp details (shuffled): doc-id bytes before=%.0f after=%.0f; search, sum over %d queries x %d modes of best-of-%d, before=%.1f ms after=%.1f ms\n",
		bb.med, aa.med, len(res.Queries), len(Modes), bpSearchRounds, newSpread(sb).med/1e6, newSpread(sa).med/1e6)
	return b.String()
}
