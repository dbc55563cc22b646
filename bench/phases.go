package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/summadev/summa/bench/serverproc"
)

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// selfTimed is an engine that runs out of process and measures each
// operation itself, so that the pipe round trip is not counted.
type selfTimed interface {
	// LastOpTime is the duration of the last operation.
	LastOpTime() time.Duration
}

// extraCPU is an engine whose work runs in another process.
type extraCPU interface {
	// ExtraCPU is that process's CPU time so far.
	ExtraCPU() time.Duration
}

// qpsRunner is an engine that runs its concurrent clients itself.
type qpsRunner interface {
	// RunQPS runs total queries of qs from clients and returns the time.
	RunQPS(qs []Query, total, clients int) (time.Duration, error)
}

// shutdowner is an engine with a process to end.
type shutdowner interface {
	// Shutdown ends it.
	Shutdown() error
}

// opTime is the duration of e's last operation: the engine's own
// measurement when it has one, else the wall time measured around it.
func opTime(e Engine, wall time.Duration) time.Duration {
	if st, ok := e.(selfTimed); ok {
		return st.LastOpTime()
	}
	return wall
}

// engineCPU is the CPU time so far of this process and of e's own.
func engineCPU(e Engine) time.Duration {
	t := cpuTime()
	if x, ok := e.(extraCPU); ok {
		t += x.ExtraCPU()
	}
	return t
}

// NewEngine returns the named engine ("xapian" needs cfg.XapianBin).
func NewEngine(cfg *Config, name string) (Engine, error) {
	switch name {
	case "ours":
		return NewOurs()
	case "bleve":
		return NewBleve()
	case "xapian":
		if cfg.XapianBin == "" {
			return nil, fmt.Errorf("xapian: driver not built")
		}
		return NewXapian(cfg.XapianBin), nil
	case "lucene":
		if cfg.Lucene == nil {
			return nil, fmt.Errorf("lucene: driver not built")
		}
		l := NewLucene(cfg.Lucene)
		l.WarmMax = cfg.WarmMax
		return l, nil
	}
	return nil, fmt.Errorf("unknown engine %q (ours, bleve, xapian, lucene)", name)
}

// Run runs every repetition on corpus c.
func Run(ctx context.Context, cfg Config, c *Corpus) (*Result, error) {
	fixed := QuerySet(c)
	res := &Result{Corpus: c, Queries: append(fixed, HeadingQueries(c)...), Fixed: len(fixed), Started: time.Now()}
	buildDrivers(&cfg, res)
	if slices.Contains(cfg.Engines, "xapian") || slices.Contains(cfg.Engines, "lucene") {
		res.TokenHash = TokenStreamHash(c.Docs)
	}
	res.Config = cfg
	raw := NDJSON(c.Docs)
	var httpBin string
	if cfg.HTTP {
		bin, err := serverproc.Build(ctx, cfg.ModuleRoot, cfg.WorkDir)
		if err != nil {
			res.HTTPSkipped = "summa-server not built"
			cfg.logf("http: skipped (summa-server not built): %v", firstLine(strings.Split(err.Error(), "\n"), ""))
		} else {
			httpBin = bin
		}
	} else {
		res.HTTPSkipped = "disabled"
	}
	manyDir := ""
	if cfg.ManyCommits > 0 && slices.Contains(cfg.Engines, "ours") {
		d, err := buildMany(ctx, &cfg, c, raw)
		if err != nil {
			return nil, fmt.Errorf("ours: %d commits: %w", cfg.ManyCommits, err)
		}
		manyDir = d
		defer os.RemoveAll(d)
	}
	for r := 0; r < cfg.Reps; r++ {
		rep := Rep{Engines: map[string]*EngineRun{}}
		cfg.logf("rep %d/%d: floor", r+1, cfg.Reps)
		fl, err := MeasureFloor(cfg.WorkDir, cfg.FloorSeqMB, cfg.FloorSyncs)
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		rep.Floor = fl
		// Rotate the engine order between repetitions.
		order := append([]string(nil), cfg.Engines...)
		for i := 0; i < r%max(1, len(order)); i++ {
			order = append(order[1:], order[0])
		}
		for _, name := range order {
			e, err := NewEngine(&cfg, name)
			if err != nil {
				return nil, err
			}
			run, err := runEngine(ctx, &cfg, e, c, raw, res.Queries, res.Fixed, r)
			if err == nil && manyDir != "" && name == "ours" {
				err = openMany(ctx, &cfg, e, manyDir, run, r)
			}
			if s, ok := e.(shutdowner); ok {
				if serr := s.Shutdown(); serr != nil && err == nil {
					err = serr
				}
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			rep.Engines[name] = run
		}
		if httpBin != "" {
			cfg.logf("rep %d/%d: http ingest", r+1, cfg.Reps)
			h, err := RunHTTP(ctx, &cfg, httpBin, c, raw, res.Queries[:res.Fixed], r)
			if err != nil {
				h = &HTTPRun{Err: err.Error()}
				cfg.logf("http: %v", err)
			}
			rep.HTTP = h
		}
		res.Mismatches = append(res.Mismatches, mismatches(r, cfg.Engines, res.Queries, rep)...)
		for _, p := range []string{"xapian", "lucene"} {
			if x := rep.Engines[p]; x != nil && x.TokenHash != "" && (x.TokenHash != res.TokenHash || x.TokenDocs != len(c.Docs)) {
				res.Mismatches = append(res.Mismatches, fmt.Sprintf("rep %d: token-stream hash ours=%s over %d documents, %s=%s over %d", r+1, res.TokenHash, len(c.Docs), p, x.TokenHash, x.TokenDocs))
			}
		}
		res.Reps = append(res.Reps, rep)
	}
	res.Elapsed = time.Since(res.Started)
	return res, nil
}

// mismatches compares the hit counts of every engine (and HTTP) with the
// first engine's, and every engine's token hash with ours.
func mismatches(r int, engines []string, qs []Query, rep Rep) []string {
	var out []string
	if len(engines) == 0 {
		return nil
	}
	first := rep.Engines[engines[0]]
	for _, name := range engines[1:] {
		other := rep.Engines[name]
		for _, q := range qs {
			if first != nil && other != nil && first.Hits[q.Name] != other.Hits[q.Name] {
				out = append(out, fmt.Sprintf("rep %d: query %q: totalHits %s=%d %s=%d", r+1, q.Name, engines[0], first.Hits[q.Name], name, other.Hits[q.Name]))
			}
		}
	}
	if first != nil && rep.HTTP != nil && rep.HTTP.Hits != nil {
		for q, n := range rep.HTTP.Hits {
			if first.Hits[q] != n {
				out = append(out, fmt.Sprintf("rep %d: query %q: totalHits %s=%d http=%d", r+1, q, engines[0], first.Hits[q], n))
			}
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
		c := opTime(e, time.Since(t1))
		total += t1.Sub(t0) + c
		prepare += t1.Sub(t0)
		commits = append(commits, c)
	}
	return total, prepare, commits, nil
}

// settle collects the garbage of the previous phase before the next one
// is timed. It does not return the freed memory to the operating system
// (debug.FreeOSMemory): the in-process engines (ours and Bleve) then
// faulted every page they allocated back in, for the rest of the phase
// (the heading queries' COUNT p50 of ours 0.026 ms against 0.014
// without it on the small corpus), a cost no server process pays and the
// Xapian and Lucene driver processes never paid.
func settle() {
	runtime.GC()
}

// startProfile starts the CPU profile of one phase of the first
// repetition: pprof for the Go engines, perf record of the driver process
// for Xapian (when perf is installed); the returned func stops it.
func startProfile(cfg *Config, rep int, e Engine, phase string) func() {
	if cfg.CPUProfile == "" || rep != 0 {
		return func() {}
	}
	p := fmt.Sprintf("%s-%s-%s.pprof", cfg.CPUProfile, e.Name(), phase)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		cfg.logf("cpuprofile: %v", err)
		return func() {}
	}
	if x, ok := e.(*Xapian); ok {
		return startPerf(cfg, x.PID(), strings.TrimSuffix(p, ".pprof")+".perf.data")
	}
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

// startPerf records pid's call stacks with perf into out until the
// returned func interrupts it (read with perf report -i out).
func startPerf(cfg *Config, pid int, out string) func() {
	if _, err := exec.LookPath("perf"); err != nil || pid <= 0 {
		cfg.logf("cpuprofile: %s not written (perf not installed or no driver process)", out)
		return func() {}
	}
	cmd := exec.Command("perf", "record", "-q", "-F", "999", "-g", "-p", strconv.Itoa(pid), "-o", out)
	if err := cmd.Start(); err != nil {
		cfg.logf("cpuprofile: perf: %v", err)
		return func() {}
	}
	time.Sleep(300 * time.Millisecond) // let perf attach before the phase starts
	return func() {
		_ = cmd.Process.Signal(os.Interrupt)
		err := cmd.Wait() // perf exits by the interrupt: judge by its output
		if st, serr := os.Stat(out); serr != nil || st.Size() == 0 {
			cfg.logf("cpuprofile: perf wrote no %s: %v", out, err)
			return
		}
		cfg.logf("cpuprofile: wrote %s", out)
	}
}

// buildMany builds ours' index of cfg.ManyCommits one-document commits
// (documents spread over the corpus) and returns its directory.
func buildMany(ctx context.Context, cfg *Config, c *Corpus, raw [][]byte) (string, error) {
	dir, err := os.MkdirTemp(cfg.WorkDir, "ours-many-")
	if err != nil {
		return "", err
	}
	cfg.logf("ours: %d one-document commits for open_ms at many segments", cfg.ManyCommits)
	o, err := NewOurs()
	if err != nil {
		return "", err
	}
	dir = filepath.Join(dir, "index")
	if err := o.Create(dir); err != nil {
		return "", err
	}
	n := len(c.Docs)
	for i := 0; i < cfg.ManyCommits; i++ {
		j := i * n / cfg.ManyCommits
		p, err := o.Prepare(c.Docs[j:j+1], raw[j:j+1])
		if err == nil {
			err = o.Commit(ctx, p)
		}
		if err != nil {
			o.Close(ctx)
			return "", err
		}
	}
	return filepath.Dir(dir), o.Close(ctx)
}

// openMany times Open of the many-commit index (its copy would be changed
// by nothing: Open only reads).
func openMany(ctx context.Context, cfg *Config, e Engine, parent string, run *EngineRun, rep int) error {
	dir := filepath.Join(parent, "index")
	settle()
	stop := startProfile(cfg, rep, e, "open-many")
	t := time.Now()
	err := e.Open(dir)
	run.OpenMany = opTime(e, time.Since(t))
	stop()
	if err != nil {
		return fmt.Errorf("open %d-commit index: %w", cfg.ManyCommits, err)
	}
	run.OpenManySegments = e.Segments()
	return e.Close(ctx)
}

// buildDrivers builds the Xapian and Lucene drivers of the engines asked
// for (installing their packages unless cfg.NoInstall); an engine whose
// driver cannot be built is dropped, and the report says why.
func buildDrivers(cfg *Config, res *Result) {
	cache := filepath.Join(cfg.ModuleRoot, "bin")
	if cfg.ModuleRoot == "" {
		cache = filepath.Join(os.TempDir(), "summa-bench-bin")
	}
	drop := func(name string, err error) string {
		cfg.logf("%s: skipped: %v", name, err)
		var keep []string
		for _, e := range cfg.Engines {
			if e != name {
				keep = append(keep, e)
			}
		}
		cfg.Engines = keep
		return err.Error()
	}
	if slices.Contains(cfg.Engines, "xapian") && cfg.XapianBin == "" {
		if bin, err := BuildXapianDriver(cache, !cfg.NoInstall, cfg.Log); err != nil {
			res.XapianSkipped = drop("xapian", err)
		} else {
			cfg.XapianBin = bin
		}
	}
	if slices.Contains(cfg.Engines, "lucene") && cfg.Lucene == nil {
		if d, err := BuildLuceneDriver(cache, !cfg.NoInstall, cfg.Log); err != nil {
			res.LuceneSkipped = drop("lucene", err)
		} else {
			cfg.Lucene = d
		}
	}
}
