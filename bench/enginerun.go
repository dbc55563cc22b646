package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// engineRun is one engine's run over one corpus: what every phase needs.
type engineRun struct {
	ctx   context.Context
	cfg   *Config
	e     Engine
	c     *Corpus
	raw   [][]byte
	rep   int
	base  string
	run   *EngineRun
	label string
}

// runEngine runs one engine's phases on a fresh directory. qs[:fixed] are
// the fixed queries, the rest the heading queries.
func runEngine(ctx context.Context, cfg *Config, e Engine, c *Corpus, raw [][]byte, qs []Query, fixed, rep int) (*EngineRun, error) {
	name := e.Name()
	base, err := os.MkdirTemp(cfg.WorkDir, name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	r := &engineRun{ctx: ctx, cfg: cfg, e: e, c: c, raw: raw, rep: rep, base: base,
		label: fmt.Sprintf("rep %d/%d: %s", rep+1, cfg.Reps, name),
		run: &EngineRun{PerQuery: map[string]Dist{}, PerClass: map[string]Dist{}, Hits: map[string]int{}, Top: map[string][]string{},
			ModeSearch: map[Mode]Dist{}, ModeClass: map[Mode]map[string]Dist{}}}
	if err := r.ingestPhase(); err != nil {
		return nil, err
	}
	if err := r.segmentsPhase(qs, fixed); err != nil {
		return nil, err
	}
	// BP reorder of the merged index (ours only, when the engine has it).
	if o, ok := e.(*Ours); ok {
		if err := bpPhase(ctx, cfg, o, filepath.Join(base, "segments"), r.run, rep, BMPQueries(c, qs)); err != nil {
			return nil, err
		}
		if r.run.BPShuffled, err = bpShuffledPhase(ctx, cfg, c, qs); err != nil {
			return nil, fmt.Errorf("bp on the shuffled order: %w", err)
		}
	}
	return r.run, nil
}

// ingestPhase (phase 1) ingests the corpus at the commit cadence, then
// times one-document commits (upserts of existing documents) on it.
func (r *engineRun) ingestPhase() error {
	cfg, e, c, run := r.cfg, r.e, r.c, r.run
	cfg.logf("%s: ingest %d docs, a commit every %d", r.label, len(c.Docs), cfg.CommitEvery)
	dir := filepath.Join(r.base, "ingest")
	settle()
	if err := e.Create(dir); err != nil {
		return err
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	stop := startProfile(cfg, r.rep, e, "ingest")
	cpu0 := engineCPU(e)
	total, prepare, commits, err := ingest(r.ctx, e, c.Docs, r.raw, cfg.CommitEvery)
	run.IngestCPU = engineCPU(e) - cpu0
	stop()
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	runtime.ReadMemStats(&ms1)
	run.AllocMB = float64(ms1.TotalAlloc-ms0.TotalAlloc) / 1e6
	run.Ingest = total
	run.Prepare = prepare
	run.IngestDocsPerS = float64(len(c.Docs)) / total.Seconds()
	run.IngestMBPerS = c.MB() / total.Seconds()
	run.Commit = NewDist(commits)
	run.IngestSegments = e.Segments()
	if err := e.Close(r.ctx); err != nil {
		return err
	}
	if run.IndexBytes, err = dirSize(dir); err != nil {
		return err
	}
	if err := e.Open(dir); err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	small, err := r.smallCommits()
	if err != nil {
		return err
	}
	run.SmallCommit = NewDist(small)
	if err := e.Close(r.ctx); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// smallCommits times cfg.SmallCommits one-document commits, each an
// upsert of an existing document, on the open engine.
func (r *engineRun) smallCommits() ([]time.Duration, error) {
	stop := startProfile(r.cfg, r.rep, r.e, "small-commit")
	defer stop()
	var small []time.Duration
	for i := 0; i < r.cfg.SmallCommits; i++ {
		j := i * len(r.c.Docs) / max(1, r.cfg.SmallCommits)
		p, err := r.e.Prepare(r.c.Docs[j:j+1], r.raw[j:j+1])
		if err != nil {
			return nil, err
		}
		t := time.Now()
		if err := r.e.Commit(r.ctx, p); err != nil {
			return nil, fmt.Errorf("small commit: %w", err)
		}
		small = append(small, opTime(r.e, time.Since(t)))
	}
	return small, nil
}

// segmentsPhase (phase 2) builds an index of many segments, then times
// its open, its forced merge and the searches on the merged index.
func (r *engineRun) segmentsPhase(qs []Query, fixed int) error {
	cfg, e, c, run := r.cfg, r.e, r.c, r.run
	cfg.logf("%s: %d commits, open, merge, search", r.label, cfg.OpenCommits)
	dir := filepath.Join(r.base, "segments")
	settle()
	if err := e.Create(dir); err != nil {
		return err
	}
	per := (len(c.Docs) + cfg.OpenCommits - 1) / cfg.OpenCommits
	var err error
	if run.Ingest40, _, _, err = ingest(r.ctx, e, c.Docs, r.raw, max(1, per)); err != nil {
		return fmt.Errorf("ingest for open: %w", err)
	}
	if err := e.Close(r.ctx); err != nil {
		return err
	}
	if run.Open, err = openRounds(r.ctx, cfg, e, dir, qs[fixed/2], r.rep); err != nil {
		return err
	}
	run.OpenSegments = e.Segments()
	r.merge()
	if err := r.searches(qs, fixed); err != nil {
		return err
	}
	var secs []SizeEntry
	if x, ok := e.(sectionSizer); ok {
		if secs, err = x.SectionSizes(); err != nil {
			return err
		}
	}
	if err := e.Close(r.ctx); err != nil {
		return err
	}
	if run.MergedBytes, err = dirSize(dir); err != nil {
		return err
	}
	if secs != nil {
		run.MergedSections = addOtherFiles(secs, run.MergedBytes)
	} else {
		run.MergedSections, err = FileKindSizes(dir)
	}
	return err
}

// merge times the open engine's forced merge; a failure is recorded in
// the run, not returned (a peer may not support it).
func (r *engineRun) merge() {
	stop := startProfile(r.cfg, r.rep, r.e, "merge")
	t := time.Now()
	cpu0 := engineCPU(r.e)
	err := r.e.ForceMerge(r.ctx)
	merged := opTime(r.e, time.Since(t))
	r.run.MergeCPU = engineCPU(r.e) - cpu0
	stop()
	if err != nil {
		r.run.MergeErr = err.Error()
	} else {
		r.run.Merge = merged
	}
}

// searches records every query's hits and top documents, the token hash
// of the first rep, then times the queries.
func (r *engineRun) searches(qs []Query, fixed int) error {
	run := r.run
	for _, q := range qs {
		n, top, err := r.e.SearchTop(r.ctx, q)
		if err != nil {
			return fmt.Errorf("query %q: %w", q.Name, err)
		}
		run.Hits[q.Name], run.Top[q.Name] = n, top
	}
	if x, ok := r.e.(tokenHasher); ok && r.rep == 0 {
		var err error
		if run.TokenHash, run.TokenDocs, err = x.TokenHash(); err != nil {
			return err
		}
	}
	settle()
	stop := startProfile(r.cfg, r.rep, r.e, "search")
	defer stop()
	return searchBench(r.ctx, r.cfg, r.e, qs[:fixed], qs[fixed:], run)
}

// bpPhase runs ours' BP reorder on the merged index in dir and records
// the postings and doc-id section bytes before and after it.
// It also measures block-max pruning before and after BP (bmp.go).
func bpPhase(ctx context.Context, cfg *Config, o *Ours, dir string, run *EngineRun, rep int, bmpQs []Query) error {
	if err := o.Open(dir); err != nil {
		return err
	}
	var err error
	if run.BPBefore, run.BPDocBefore, err = o.PostingsBytes(); err != nil {
		return err
	}
	if err := measureBMP(ctx, cfg, o, run, bmpQs, "merged, without BP"); err != nil {
		return err
	}
	stop := startProfile(cfg, rep, o, "bp")
	bp, err := o.Reorder(ctx)
	stop()
	switch {
	case errors.Is(err, errNoReorder):
		run.BPErr = err.Error()
	case err != nil:
		run.BPErr = "bp: " + err.Error()
	default:
		run.BPTime = bp.Time
		run.BPConverged = bp.Converged
		if run.BPAfter, run.BPDocAfter, err = o.PostingsBytes(); err != nil {
			return err
		}
		if err := measureBMP(ctx, cfg, o, run, bmpQs, "merged, after BP"); err != nil {
			return err
		}
	}
	return o.Close(ctx)
}

// searchBench times the queries one at a time: SearchRounds rounds of the
// fixed queries, HeadingRounds rounds of the heading queries; then
// SearchRounds rounds of the fixed queries from GOMAXPROCS concurrent
// clients (QPS).
// latencies are the times of the timed searches of one mode: all of them,
// by query name and by query class.
type latencies struct {
	all        []time.Duration
	per, class map[string][]time.Duration
}

// timeRounds times search over fixed (cfg.SearchRounds rounds) and then
// heading (cfg.HeadingRounds rounds), each at its operation time (opTime).
func timeRounds(cfg *Config, e Engine, fixed, heading []Query, search func(Query) error) (*latencies, error) {
	l := &latencies{per: map[string][]time.Duration{}, class: map[string][]time.Duration{}}
	for _, set := range []struct {
		qs     []Query
		rounds int
	}{{fixed, cfg.SearchRounds}, {heading, cfg.HeadingRounds}} {
		for r := 0; r < set.rounds; r++ {
			for _, q := range set.qs {
				t := time.Now()
				if err := search(q); err != nil {
					return nil, err
				}
				d := opTime(e, time.Since(t))
				l.all = append(l.all, d)
				l.per[q.Name] = append(l.per[q.Name], d)
				l.class[ClassOf(q)] = append(l.class[ClassOf(q)], d)
			}
		}
	}
	return l, nil
}

// classDists adds the distribution of each query class to into (a new map
// when nil) and returns it.
func (l *latencies) classDists(into map[string]Dist) map[string]Dist {
	if into == nil {
		into = map[string]Dist{}
	}
	for k, v := range l.class {
		into[k] = NewDist(v)
	}
	return into
}

func searchBench(ctx context.Context, cfg *Config, e Engine, fixed, heading []Query, run *EngineRun) error {
	warm := func(qs []Query, rounds int) error {
		for w := 0; w < rounds; w++ {
			for _, q := range qs {
				if _, err := e.Search(ctx, q); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if w, ok := e.(warmer); ok {
		if err := w.Warmup(append(append([]Query(nil), fixed...), heading...)); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		run.WarmRounds = w.WarmRounds()
	}
	if err := warm(fixed, 3); err != nil {
		return err
	}
	if err := warm(heading, 1); err != nil {
		return err
	}
	cpu0 := engineCPU(e)
	lat, err := timeRounds(cfg, e, fixed, heading, func(q Query) error {
		_, err := e.Search(ctx, q)
		return err
	})
	if err != nil {
		return err
	}
	run.SearchCPU = (engineCPU(e) - cpu0) / time.Duration(max(1, len(lat.all)))
	run.Search = NewDist(lat.all)
	for k, v := range lat.per {
		run.PerQuery[k] = NewDist(v)
	}
	run.PerClass = lat.classDists(run.PerClass)
	if err := modeBench(ctx, cfg, e, fixed, heading, run); err != nil {
		return err
	}
	total := cfg.SearchRounds * len(fixed)
	clients := runtime.GOMAXPROCS(0)
	if qr, ok := e.(qpsRunner); ok {
		d, err := qr.RunQPS(fixed, total, clients)
		if err != nil {
			return err
		}
		run.QPS = float64(total) / d.Seconds()
		return nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(total) {
					return
				}
				if _, err := e.Search(ctx, fixed[int(i)%len(fixed)]); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	run.QPS = float64(total) / time.Since(start).Seconds()
	if err, ok := firstErr.Load().(error); ok {
		return err
	}
	return nil
}

// openRounds times OpenRounds cycles of Open plus the first answered
// query of the closed index in dir (each after the previous cycle's
// Close) and returns their median; the index is left open. Only the first
// cycle is profiled.
func openRounds(ctx context.Context, cfg *Config, e Engine, dir string, q Query, rep int) (time.Duration, error) {
	var times []time.Duration
	for round := 0; round < max(1, cfg.OpenRounds); round++ {
		if round > 0 {
			if err := e.Close(ctx); err != nil {
				return 0, err
			}
		}
		settle()
		stop := func() {}
		if round == 0 {
			stop = startProfile(cfg, rep, e, "open")
		}
		t := time.Now()
		err := e.Open(dir)
		open := opTime(e, time.Since(t))
		if err == nil {
			t = time.Now()
			_, err = e.Search(ctx, q)
			open += opTime(e, time.Since(t))
		}
		stop()
		if err != nil {
			return 0, fmt.Errorf("open and first search: %w", err)
		}
		times = append(times, open)
	}
	return NewDist(times).P50, nil
}
