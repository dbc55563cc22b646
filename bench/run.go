package bench

import (
	"context"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"sort"
	"syscall"
	"time"
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
	// Name labels the query in the report (its class and text); unique
	// in a query set.
	Name string
	// Class groups queries in the report ("" = the query is its own
	// class, see ClassOf).
	Class string
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
	// SearchTop is Search returning the top 10 documents' ids too (not
	// timed: ids may cost a decode the timed Search does not do).
	SearchTop(ctx context.Context, q Query) (int, []string, error)
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
	// SearchRounds is how many times the fixed query set is timed.
	SearchRounds int
	// HeadingRounds is how many times the heading queries are timed.
	HeadingRounds int
	// ManyCommits, when positive, builds (once) an index of that many
	// one-document commits whose Open ours times in every repetition.
	ManyCommits int
	// SmallCommits is the number of one-document commits timed.
	SmallCommits int
	// OpenRounds is the number of timed Open-plus-first-query cycles of
	// the many-segment index per repetition (their median is open_ms).
	OpenRounds int
	// Reps repeats every measurement.
	Reps int
	// FloorSeqMB and FloorSyncs size the floor measurement.
	FloorSeqMB, FloorSyncs int
	// Engines to run ("ours", "bleve", "xapian", "lucene").
	Engines []string
	// XapianBin is the built driver (set by Run when "xapian" is run).
	XapianBin string
	// Lucene is the built Java driver (set by Run when "lucene" is run).
	Lucene *LuceneDriver
	// WarmMax bounds Lucene's JIT warm-up before the timed searches
	// (DefaultWarmMax when 0).
	WarmMax time.Duration
	// NoInstall never runs apt-get for Xapian or Lucene.
	NoInstall bool
	// HTTP also ingests through summa-server when it builds.
	HTTP bool
	// ModuleRoot is the main module's directory (for building the server).
	ModuleRoot string
	// CPUProfile, when set, is the path prefix of CPU profiles of the first
	// repetition: PREFIX-ENGINE-PHASE.pprof for the phases ingest,
	// small-commit, open, merge, search (and ours' open-many and bp);
	// for Xapian, PREFIX-xapian-PHASE.perf.data (perf record).
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
	// MergedSections breaks MergedBytes down: ours by section of the
	// segment format, a peer by kind of file (see sizeLines).
	MergedSections []SizeEntry
	// Search latencies (one query at a time, fixed and heading queries)
	// and QPS (GOMAXPROCS clients, fixed queries).
	Search   Dist
	QPS      float64
	PerQuery map[string]Dist
	// PerClass is the latency of each query class (see ClassOf).
	PerClass map[string]Dist
	// ModeSearch and ModeClass are Search and PerClass in each Mode
	// (ModeTop10Count's are Search and PerClass).
	ModeSearch map[Mode]Dist
	ModeClass  map[Mode]map[string]Dist
	// WarmRounds is the number of JIT warm-up rounds (Lucene).
	WarmRounds int
	// Hits is each query's total hit count; Top its top 10 ids.
	Hits map[string]int
	Top  map[string][]string
	// OpenMany is Open of the ManyCommits index (ours), OpenManySegments
	// its segment count.
	OpenMany         time.Duration
	OpenManySegments int
	// TokenHash and TokenDocs are the hash of the indexed token streams
	// and the documents hashed, for engines that can report them (Xapian,
	// Lucene).
	TokenHash string
	TokenDocs int
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
	// BPShuffled is BP on the shuffled arrival order (ours only).
	BPShuffled *BPShuffled
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
	// Fixed is the number of fixed queries at the start of Queries (the
	// rest are heading queries).
	Fixed int
	// XapianSkipped says why Xapian did not run ("" when it ran or was
	// not asked for).
	XapianSkipped string
	// LuceneSkipped says why Lucene did not run.
	LuceneSkipped string
	// TokenHash is our analysis's token-stream hash of the corpus (see
	// TokenStreamHash), when Xapian or Lucene ran.
	TokenHash string
	// Label, when set ("large"), names the corpus in the goal and check
	// lines, each of which then ends in " (Label)".
	Label string
	// Started is when the run began.
	Started time.Time
	// Elapsed is the run's duration.
	Elapsed time.Duration
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
