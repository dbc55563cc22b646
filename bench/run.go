package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/summadev/summa/engine/analysis"
)

// Kind is the shape of a benchmark query.
type Kind string

// The query shapes.
const (
	KindTerm   Kind = "term"
	KindOr     Kind = "or"
	KindAnd    Kind = "and"
	KindPhrase Kind = "phrase"
)

// Query is one query of the fixed set, with analyzed terms.
type Query struct {
	// Name labels the query in the report (its class and text).
	Name string
	// Kind is the query's shape.
	Kind Kind
	// Terms are index terms (lowercase letter/digit runs).
	Terms []string
}

// Engine is one search engine driven as a library.
type Engine interface {
	// Name is "ours" or "bleve".
	Name() string
	// Create makes a new empty index in dir.
	Create(dir string) error
	// Open opens the index in dir.
	Open(dir string) error
	// Close closes the open index.
	Close(ctx context.Context) error
	// Prepare turns a batch into the engine's input (timed as ingest).
	Prepare(docs []Doc, raw [][]byte) (any, error)
	// Commit hands a prepared batch to the engine and returns once it is
	// durable and searchable.
	Commit(ctx context.Context, batch any) error
	// Search runs q for the top 10 hits and returns the total hit count.
	Search(ctx context.Context, q Query) (int, error)
	// ForceMerge merges the index into one segment.
	ForceMerge(ctx context.Context) error
	// Segments counts the index's segments.
	Segments() int
}

// Dist summarizes latencies.
type Dist struct {
	N             int
	P50, P99, Max time.Duration
	Mean          time.Duration
}

// NewDist summarizes ds (nearest-rank percentiles).
func NewDist(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return Dist{N: len(s), P50: rank(0.50), P99: rank(0.99), Max: s[len(s)-1], Mean: sum / time.Duration(len(s))}
}

// Config is one benchmark run.
type Config struct {
	// WorkDir holds every index and the floor's files (removed at the end
	// by the caller).
	WorkDir string
	// Quick is recorded in the report.
	Quick bool
	// CommitEvery is the ingest commit cadence in documents.
	CommitEvery int
	// OpenCommits is the number of commits of the many-segment index.
	OpenCommits int
	// SearchRounds is how many times the query set is timed.
	SearchRounds int
	// SmallCommits is the number of one-document commits timed.
	SmallCommits int
	// Reps repeats every measurement.
	Reps int
	// FloorSeqMB and FloorSyncs size the floor measurement.
	FloorSeqMB, FloorSyncs int
	// Engines to run ("ours", "bleve").
	Engines []string
	// HTTP also ingests through summa-server when it builds.
	HTTP bool
	// ModuleRoot is the main module's directory (for building the server).
	ModuleRoot string
	// CPUProfile, when set, is the path prefix of CPU profiles of the first
	// repetition: PREFIX-ENGINE-PHASE.pprof for the phases ingest, merge and
	// search.
	CPUProfile string
	// Log receives progress.
	Log io.Writer
}

// EngineRun is one engine's measurements in one repetition.
type EngineRun struct {
	// Ingest at the commit cadence.
	Ingest         time.Duration
	IngestDocsPerS float64
	// Prepare is the part of Ingest spent preparing batches (ours: JSON
	// validation; Bleve: mapping into a batch), before the commit call.
	Prepare      time.Duration
	IngestMBPerS float64
	// Commit is the latency of handing over one batch until durable.
	Commit Dist
	// SmallCommit is the latency of a one-document commit.
	SmallCommit Dist
	// IngestSegments is the segment count after the ingest.
	IngestSegments int
	// IndexBytes is the closed index directory's size after the ingest.
	IndexBytes int64
	// AllocMB is the Go heap allocated during the ingest.
	AllocMB float64
	// IngestCPU, MergeCPU and SearchCPU (per query, sequential rounds)
	// are process CPU time (user+system): less sensitive than wall time
	// to other processes competing for the cores.
	IngestCPU, MergeCPU, SearchCPU time.Duration
	// Ingest40 is the ingest time of the many-segment index.
	Ingest40 time.Duration
	// OpenSegments is the many-segment index's segment count at open.
	OpenSegments int
	// Open is Open plus one answered query.
	Open time.Duration
	// Merge is the force merge to one segment; MergeErr when it failed.
	Merge    time.Duration
	MergeErr string
	// MergedBytes is the closed index directory's size after the merge.
	MergedBytes int64
	// Search latencies (one query at a time) and QPS (GOMAXPROCS clients).
	Search   Dist
	QPS      float64
	PerQuery map[string]Dist
	// Hits is each query's total hit count.
	Hits map[string]int
	// BP reorder (ours only): postings bytes before and after, time.
	BPBefore, BPAfter int64
	BPTime            time.Duration
	BPErr             string
	// BPDocBefore and BPDocAfter are the doc-id and frequency sections
	// alone (-1 when the engine does not report them); BPConverged is
	// false when the pass was budget-truncated.
	BPDocBefore, BPDocAfter int64
	BPConverged             bool
	// BMP compares block-max pruning with exhaustive evaluation on the
	// merged index before and after BP (ours only; see bmp.go).
	BMP []*BMPRun
}

// Rep is one repetition.
type Rep struct {
	Floor   Floor
	Engines map[string]*EngineRun
	HTTP    *HTTPRun
}

// Result is a whole run.
type Result struct {
	Config  Config
	Corpus  *Corpus
	Queries []Query
	Reps    []Rep
	// Mismatches lists hit-count disagreements between engines (and the
	// HTTP server) found in any repetition.
	Mismatches []string
	// HTTPSkipped says why the HTTP ingest did not run.
	HTTPSkipped string
	// Started is when the run began.
	Started time.Time
	// Elapsed is the run's duration.
	Elapsed time.Duration
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// NewEngine returns the named engine.
func NewEngine(name string) (Engine, error) {
	switch name {
	case "ours":
		return NewOurs()
	case "bleve":
		return NewBleve()
	}
	return nil, fmt.Errorf("unknown engine %q (ours, bleve)", name)
}

// Run runs every repetition on corpus c.
func Run(ctx context.Context, cfg Config, c *Corpus) (*Result, error) {
	res := &Result{Config: cfg, Corpus: c, Queries: QuerySet(c), Started: time.Now()}
	raw := NDJSON(c.Docs)
	var httpBin string
	if cfg.HTTP {
		bin, err := BuildServer(ctx, cfg.ModuleRoot, cfg.WorkDir)
		if err != nil {
			res.HTTPSkipped = "summa-server not built"
			cfg.logf("http: skipped (summa-server not built): %v", firstLine(strings.Split(err.Error(), "\n"), ""))
		} else {
			httpBin = bin
		}
	} else {
		res.HTTPSkipped = "disabled"
	}
	for r := 0; r < cfg.Reps; r++ {
		rep := Rep{Engines: map[string]*EngineRun{}}
		cfg.logf("rep %d/%d: floor", r+1, cfg.Reps)
		fl, err := MeasureFloor(cfg.WorkDir, cfg.FloorSeqMB, cfg.FloorSyncs)
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		rep.Floor = fl
		// Alternate the engine order between repetitions.
		order := append([]string(nil), cfg.Engines...)
		if r%2 == 1 {
			for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
				order[i], order[j] = order[j], order[i]
			}
		}
		for _, name := range order {
			e, err := NewEngine(name)
			if err != nil {
				return nil, err
			}
			run, err := runEngine(ctx, &cfg, e, c, raw, res.Queries, r)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			rep.Engines[name] = run
		}
		if httpBin != "" {
			cfg.logf("rep %d/%d: http ingest", r+1, cfg.Reps)
			h, err := RunHTTP(ctx, &cfg, httpBin, c, raw, res.Queries, r)
			if err != nil {
				h = &HTTPRun{Err: err.Error()}
				cfg.logf("http: %v", err)
			}
			rep.HTTP = h
		}
		res.Mismatches = append(res.Mismatches, mismatches(r, res.Queries, rep)...)
		res.Reps = append(res.Reps, rep)
	}
	res.Elapsed = time.Since(res.Started)
	return res, nil
}

// mismatches compares the hit counts of every engine (and HTTP) with the
// first engine's.
func mismatches(r int, qs []Query, rep Rep) []string {
	var out []string
	ours := rep.Engines["ours"]
	other := rep.Engines["bleve"]
	for _, q := range qs {
		if ours != nil && other != nil && ours.Hits[q.Name] != other.Hits[q.Name] {
			out = append(out, fmt.Sprintf("rep %d: query %q: totalHits ours=%d bleve=%d", r+1, q.Name, ours.Hits[q.Name], other.Hits[q.Name]))
		}
		if ours != nil && rep.HTTP != nil && rep.HTTP.Hits != nil && ours.Hits[q.Name] != rep.HTTP.Hits[q.Name] {
			out = append(out, fmt.Sprintf("rep %d: query %q: totalHits ours=%d http=%d", r+1, q.Name, ours.Hits[q.Name], rep.HTTP.Hits[q.Name]))
		}
	}
	return out
}

// batches splits [0,n) into consecutive ranges of size at most size.
func batches(n, size int) [][2]int {
	var out [][2]int
	for s := 0; s < n; s += size {
		out = append(out, [2]int{s, min(n, s+size)})
	}
	return out
}

// ingest adds every document in batches of size and commits after each,
// returning the total time and the commit part of each batch.
func ingest(ctx context.Context, e Engine, docs []Doc, raw [][]byte, size int) (total, prepare time.Duration, commits []time.Duration, err error) {
	for _, b := range batches(len(docs), size) {
		t0 := time.Now()
		p, err := e.Prepare(docs[b[0]:b[1]], raw[b[0]:b[1]])
		if err != nil {
			return 0, 0, nil, err
		}
		t1 := time.Now()
		if err := e.Commit(ctx, p); err != nil {
			return 0, 0, nil, err
		}
		t2 := time.Now()
		total += t2.Sub(t0)
		prepare += t1.Sub(t0)
		commits = append(commits, t2.Sub(t1))
	}
	return total, prepare, commits, nil
}

func settle() {
	runtime.GC()
	debug.FreeOSMemory()
}

func startProfile(cfg *Config, rep int, engine, phase string) func() {
	if cfg.CPUProfile == "" || rep != 0 {
		return func() {}
	}
	p := fmt.Sprintf("%s-%s-%s.pprof", cfg.CPUProfile, engine, phase)
	f, err := os.Create(p)
	if err != nil {
		cfg.logf("cpuprofile: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		cfg.logf("cpuprofile: %v", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		cfg.logf("cpuprofile: wrote %s", p)
	}
}

// runEngine runs one engine's phases on a fresh directory.
func runEngine(ctx context.Context, cfg *Config, e Engine, c *Corpus, raw [][]byte, qs []Query, rep int) (*EngineRun, error) {
	name := e.Name()
	run := &EngineRun{PerQuery: map[string]Dist{}, Hits: map[string]int{}}
	base, err := os.MkdirTemp(cfg.WorkDir, name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	mb := c.MB()

	// Phase 1: ingest at the commit cadence.
	cfg.logf("rep %d/%d: %s: ingest %d docs, a commit every %d", rep+1, cfg.Reps, name, len(c.Docs), cfg.CommitEvery)
	dir := filepath.Join(base, "ingest")
	settle()
	if err := e.Create(dir); err != nil {
		return nil, err
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	stop := startProfile(cfg, rep, name, "ingest")
	cpu0 := cpuTime()
	total, prepare, commits, err := ingest(ctx, e, c.Docs, raw, cfg.CommitEvery)
	run.IngestCPU = cpuTime() - cpu0
	stop()
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	runtime.ReadMemStats(&ms1)
	run.AllocMB = float64(ms1.TotalAlloc-ms0.TotalAlloc) / 1e6
	run.Ingest = total
	run.Prepare = prepare
	run.IngestDocsPerS = float64(len(c.Docs)) / total.Seconds()
	run.IngestMBPerS = mb / total.Seconds()
	run.Commit = NewDist(commits)
	run.IngestSegments = e.Segments()
	if err := e.Close(ctx); err != nil {
		return nil, err
	}
	if run.IndexBytes, err = dirSize(dir); err != nil {
		return nil, err
	}
	// One-document commits (an upsert of an existing document).
	if err := e.Open(dir); err != nil {
		return nil, fmt.Errorf("reopen: %w", err)
	}
	var small []time.Duration
	for i := 0; i < cfg.SmallCommits; i++ {
		j := i * len(c.Docs) / max(1, cfg.SmallCommits)
		p, err := e.Prepare(c.Docs[j:j+1], raw[j:j+1])
		if err != nil {
			return nil, err
		}
		t := time.Now()
		if err := e.Commit(ctx, p); err != nil {
			return nil, fmt.Errorf("small commit: %w", err)
		}
		small = append(small, time.Since(t))
	}
	run.SmallCommit = NewDist(small)
	if err := e.Close(ctx); err != nil {
		return nil, err
	}
	os.RemoveAll(dir)

	// Phase 2: many segments, open, merge, search.
	cfg.logf("rep %d/%d: %s: %d commits, open, merge, search", rep+1, cfg.Reps, name, cfg.OpenCommits)
	dir = filepath.Join(base, "segments")
	settle()
	if err := e.Create(dir); err != nil {
		return nil, err
	}
	per := (len(c.Docs) + cfg.OpenCommits - 1) / cfg.OpenCommits
	if run.Ingest40, _, _, err = ingest(ctx, e, c.Docs, raw, max(1, per)); err != nil {
		return nil, fmt.Errorf("ingest for open: %w", err)
	}
	if err := e.Close(ctx); err != nil {
		return nil, err
	}
	settle()
	t := time.Now()
	if err := e.Open(dir); err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	if _, err := e.Search(ctx, qs[len(qs)/2]); err != nil {
		return nil, fmt.Errorf("first search: %w", err)
	}
	run.Open = time.Since(t)
	run.OpenSegments = e.Segments()
	stop = startProfile(cfg, rep, name, "merge")
	t = time.Now()
	cpu0 = cpuTime()
	err = e.ForceMerge(ctx)
	merged := time.Since(t)
	run.MergeCPU = cpuTime() - cpu0
	stop()
	if err != nil {
		run.MergeErr = err.Error()
	} else {
		run.Merge = merged
	}
	for _, q := range qs {
		n, err := e.Search(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", q.Name, err)
		}
		run.Hits[q.Name] = n
	}
	settle()
	stop = startProfile(cfg, rep, name, "search")
	err = searchBench(ctx, cfg, e, qs, run)
	stop()
	if err != nil {
		return nil, err
	}
	if err := e.Close(ctx); err != nil {
		return nil, err
	}
	if run.MergedBytes, err = dirSize(dir); err != nil {
		return nil, err
	}

	// BP reorder of the merged index (ours only, when the engine has it).
	if o, ok := e.(*Ours); ok {
		if err := o.Open(dir); err != nil {
			return nil, err
		}
		if run.BPBefore, err = o.PostingsBytes(); err != nil {
			return nil, err
		}
		if b, err := measureBMP(ctx, cfg, o, c, qs, "merged, without BP"); err != nil {
			return nil, err
		} else {
			run.BMP = append(run.BMP, b)
		}
		bp, err := o.Reorder(ctx)
		switch {
		case errors.Is(err, errNoReorder):
			run.BPErr = err.Error()
		case err != nil:
			run.BPErr = "bp: " + err.Error()
		default:
			run.BPTime = bp.Time
			run.BPDocBefore, run.BPDocAfter, run.BPConverged = bp.DocBefore, bp.DocAfter, bp.Converged
			if run.BPAfter, err = o.PostingsBytes(); err != nil {
				return nil, err
			}
			b, err := measureBMP(ctx, cfg, o, c, qs, "merged, after BP")
			if err != nil {
				return nil, err
			}
			run.BMP = append(run.BMP, b)
		}
		if err := o.Close(ctx); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// searchBench times the query set: SearchRounds sequential rounds (latency),
// then the same number of queries from GOMAXPROCS concurrent clients (QPS).
func searchBench(ctx context.Context, cfg *Config, e Engine, qs []Query, run *EngineRun) error {
	for w := 0; w < 3; w++ { // warm up
		for _, q := range qs {
			if _, err := e.Search(ctx, q); err != nil {
				return err
			}
		}
	}
	all := make([]time.Duration, 0, cfg.SearchRounds*len(qs))
	per := map[string][]time.Duration{}
	cpu0 := cpuTime()
	for r := 0; r < cfg.SearchRounds; r++ {
		for _, q := range qs {
			t := time.Now()
			if _, err := e.Search(ctx, q); err != nil {
				return err
			}
			d := time.Since(t)
			all = append(all, d)
			per[q.Name] = append(per[q.Name], d)
		}
	}
	run.SearchCPU = (cpuTime() - cpu0) / time.Duration(max(1, len(all)))
	run.Search = NewDist(all)
	for k, v := range per {
		run.PerQuery[k] = NewDist(v)
	}
	total := int64(cfg.SearchRounds * len(qs))
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for c := 0; c < runtime.GOMAXPROCS(0); c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				if _, err := e.Search(ctx, qs[int(i)%len(qs)]); err != nil {
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

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dirSize is the total size of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

// QuerySet returns the fixed query set of the corpus. For linux-doc it
// was chosen from the full corpus (24,650 sections), with total hits:
// the 17,070 (high), kernel 6,395 (high), interrupt 1,615 (medium), futex
// 29 (low), mutex OR spinlock 306, dma AND buffer 161, "page table" 107,
// "the kernel" 2,371. For the fallback corpus it is derived from
// document frequencies.
func QuerySet(c *Corpus) []Query {
	if c.LinuxDoc {
		return []Query{
			{Name: "high: the", Kind: KindTerm, Terms: []string{"the"}},
			{Name: "high: kernel", Kind: KindTerm, Terms: []string{"kernel"}},
			{Name: "medium: interrupt", Kind: KindTerm, Terms: []string{"interrupt"}},
			{Name: "low: futex", Kind: KindTerm, Terms: []string{"futex"}},
			{Name: "or: mutex spinlock", Kind: KindOr, Terms: []string{"mutex", "spinlock"}},
			{Name: "and: +dma +buffer", Kind: KindAnd, Terms: []string{"dma", "buffer"}},
			{Name: `phrase: "page table"`, Kind: KindPhrase, Terms: []string{"page", "table"}},
			{Name: `phrase: "the kernel"`, Kind: KindPhrase, Terms: []string{"the", "kernel"}},
		}
	}
	return derivedQueries(c)
}

// derivedQueries picks terms by document frequency: the most frequent,
// one near 5% and one near 0.1% of documents, an OR and an AND of terms
// near 5%, and the most frequent adjacent pair of terms near 1-20%.
func derivedQueries(c *Corpus) []Query {
	df := map[string]int{}
	for i := range c.Docs {
		seen := map[string]bool{}
		analysis.Tokenize(c.Docs[i].Title+"\n"+c.Docs[i].Body, func(t string, _ uint32) {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		})
	}
	type tf struct {
		t  string
		df int
	}
	var terms []tf
	for t, n := range df {
		terms = append(terms, tf{t, n})
	}
	sort.Slice(terms, func(i, j int) bool {
		if terms[i].df != terms[j].df {
			return terms[i].df > terms[j].df
		}
		return terms[i].t < terms[j].t
	})
	n := float64(len(c.Docs))
	alpha := func(s string) bool {
		if len(s) < 4 {
			return false
		}
		for _, r := range s {
			if r < 'a' || r > 'z' {
				return false
			}
		}
		return true
	}
	near := func(target float64, skip map[string]bool) string {
		best, bestD := "", math.Inf(1)
		for _, x := range terms {
			if !alpha(x.t) || skip[x.t] {
				continue
			}
			if d := math.Abs(float64(x.df) - target); d < bestD {
				best, bestD = x.t, d
			}
		}
		return best
	}
	high := terms[0].t
	used := map[string]bool{high: true}
	medium := near(0.05*n, used)
	used[medium] = true
	low := near(max(2, 0.001*n), used)
	used[low] = true
	orA := near(0.03*n, used)
	used[orA] = true
	orB := near(0.03*n, used)
	used[orB] = true
	andA := near(0.08*n, used)
	used[andA] = true
	andB := near(0.08*n, used)
	// Most frequent adjacent pair of mid-frequency terms.
	mid := func(t string) bool { d := float64(df[t]); return alpha(t) && d >= 0.01*n && d <= 0.2*n }
	pairs := map[[2]string]int{}
	for i := range c.Docs {
		prev := ""
		var prevPos uint32
		analysis.Tokenize(c.Docs[i].Body, func(t string, pos uint32) {
			if prev != "" && pos == prevPos+1 && mid(prev) && mid(t) && prev != t {
				pairs[[2]string{prev, t}]++
			}
			prev, prevPos = t, pos
		})
	}
	var phrase [2]string
	bestN := 0
	for p, k := range pairs {
		if k > bestN || (k == bestN && p[0]+" "+p[1] < phrase[0]+" "+phrase[1]) {
			phrase, bestN = p, k
		}
	}
	if high == "" || medium == "" || low == "" || orA == "" || orB == "" || andA == "" || andB == "" {
		return []Query{{Name: "high: " + high, Kind: KindTerm, Terms: []string{high}}}
	}
	qs := []Query{
		{Name: "high: " + high, Kind: KindTerm, Terms: []string{high}},
		{Name: "medium: " + medium, Kind: KindTerm, Terms: []string{medium}},
		{Name: "low: " + low, Kind: KindTerm, Terms: []string{low}},
		{Name: "or: " + orA + " " + orB, Kind: KindOr, Terms: []string{orA, orB}},
		{Name: "and: +" + andA + " +" + andB, Kind: KindAnd, Terms: []string{andA, andB}},
	}
	if bestN > 0 {
		qs = append(qs, Query{Name: `phrase: "` + phrase[0] + " " + phrase[1] + `"`, Kind: KindPhrase, Terms: phrase[:]})
	}
	return qs
}
