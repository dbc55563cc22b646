package bench

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/blevesearch/bleve/v2"
	"github.com/summadev/summa/engine/search"
)

// Mode is a search-benchmark-game collection mode.
type Mode string

// The modes. Engine.Search is ModeTop10Count.
const (
	// ModeTop10 asks for the top 10 without an exact count: Lucene's
	// default totalHitsThreshold (1000) with block-max WAND, ours with
	// block-max pruning (the same threshold).
	ModeTop10 Mode = "top10"
	// ModeTop10Count asks for the top 10 and the exact count.
	ModeTop10Count Mode = "top10count"
	// ModeCount asks for the exact count only.
	ModeCount Mode = "count"
)

// Modes are the modes timed, in report order.
var Modes = []Mode{ModeTop10, ModeTop10Count, ModeCount}

// top10Threshold is Lucene's default totalHitsThreshold, used by ours
// in ModeTop10.
const top10Threshold = 1000

// ModeRequest returns ours' search request for q in mode: ModeTop10 sets
// TotalHitsThreshold (block-max pruning when the count provably reaches
// it); ModeCount asks for the count alone (search.Request.CountOnly, as
// Lucene's IndexSearcher.count).
func ModeRequest(q Query, mode Mode) search.Request {
	raw, _ := json.Marshal(QueryString(q))
	req := search.Request{Query: raw, Limit: 10}
	switch mode {
	case ModeTop10:
		req.TotalHitsThreshold = top10Threshold
	case ModeCount:
		req.CountOnly = true
	}
	return req
}

// ModeSearcher is an engine that runs a query in a given mode and returns
// its total (a lower bound in ModeTop10).
type ModeSearcher interface {
	SearchMode(ctx context.Context, q Query, mode Mode) (int, error)
}

// SearchMode implements ModeSearcher with ModeRequest.
func (o *Ours) SearchMode(ctx context.Context, q Query, mode Mode) (int, error) {
	req := ModeRequest(q, mode)
	snap, err := o.idx.Snapshot()
	if err != nil {
		return 0, err
	}
	defer snap.Close()
	res, err := snap.Search(ctx, req)
	if err != nil {
		return 0, err
	}
	return res.TotalHits, nil
}

// SearchMode implements ModeSearcher: Bleve always counts exactly, so
// ModeTop10 is ModeTop10Count; ModeCount is a request of size 0.
func (b *Bleve) SearchMode(ctx context.Context, q Query, mode Mode) (int, error) {
	if mode != ModeCount {
		return b.Search(ctx, q)
	}
	req := bleve.NewSearchRequestOptions(BleveQuery(q), 0, 0, false)
	res, err := b.idx.SearchInContext(ctx, req)
	if err != nil {
		return 0, err
	}
	return int(res.Total), nil
}

// searchIn runs q in mode on e (Engine.Search when e has no modes).
func searchIn(ctx context.Context, e Engine, q Query, mode Mode) (int, error) {
	if m, ok := e.(ModeSearcher); ok && mode != ModeTop10Count {
		return m.SearchMode(ctx, q, mode)
	}
	return e.Search(ctx, q)
}

// warmer is an engine with a JIT to warm up before timed searches.
type warmer interface {
	// Warmup runs qs in every mode until their times are stable.
	Warmup(qs []Query) error
	// WarmRounds is the number of rounds the last Warmup took.
	WarmRounds() int
}

// tokenHasher is an engine that reads its token streams back (see
// TokenStreamHash).
type tokenHasher interface {
	TokenHash() (string, int, error)
}

// modeBench times the fixed and heading queries in ModeTop10 and
// ModeCount as searchBench does in ModeTop10Count (one warm-up round of
// each first), and records every mode's overall and per-class latencies.
func modeBench(ctx context.Context, cfg *Config, e Engine, fixed, heading []Query, run *EngineRun) error {
	run.ModeSearch[ModeTop10Count] = run.Search
	run.ModeClass[ModeTop10Count] = run.PerClass
	for _, m := range []Mode{ModeTop10, ModeCount} {
		for _, q := range append(append([]Query(nil), fixed...), heading...) {
			if _, err := searchIn(ctx, e, q, m); err != nil {
				return fmt.Errorf("%s: query %q: %w", m, q.Name, err)
			}
		}
		lat, err := timeRounds(cfg, e, fixed, heading, func(q Query) error {
			if _, err := searchIn(ctx, e, q, m); err != nil {
				return fmt.Errorf("%s: query %q: %w", m, q.Name, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		run.ModeSearch[m] = NewDist(lat.all)
		run.ModeClass[m] = lat.classDists(nil)
	}
	return nil
}
