package index

import (
	"runtime"
	"time"

	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/segment"
)

// Defaults of the background retry of a held publication.
const (
	// DefaultPublicationRetryMin is the default of Options.PublicationRetryMin.
	DefaultPublicationRetryMin = time.Second
	// DefaultPublicationRetryMax is the default of Options.PublicationRetryMax.
	DefaultPublicationRetryMax = time.Minute
	// DefaultPublicationRetryLimit is the default of
	// Options.PublicationRetryLimit.
	DefaultPublicationRetryLimit = 120
)

// Options tune an index. The zero value is usable.
type Options struct {
	// Logger receives lifecycle events.
	Logger logr.Logger
	// UID is the UID Create gives a new index (metadata.Metadata.UID);
	// empty, one drawn at random. A follower's copy takes its leader's.
	UID string
	// IndexingWorkers is the number of parallel indexing workers (default:
	// GOMAXPROCS, at most 8).
	IndexingWorkers int
	// WorkerBufferBytes is the in-memory size at which a worker flushes a
	// prepared segment before the commit (default 64 MiB).
	WorkerBufferBytes int64
	// CommitFlushTimeout bounds how long Commit waits for the workers'
	// flush before returning ErrCommitFlushTimeout (default 5 minutes).
	CommitFlushTimeout time.Duration
	// PublicationRetryMin is the first delay before the writer retries, in
	// the background, a publication that failed before its commit point
	// (C11); the delay doubles after every failed attempt (default 1s).
	PublicationRetryMin time.Duration
	// PublicationRetryMax caps that delay (default 1 minute).
	PublicationRetryMax time.Duration
	// PublicationRetryLimit bounds the background retries of one held
	// publication (default 120: about two hours at the maximum delay).
	// Past it the generation stays held, owned and lossless, and only a
	// commit or a drain retries it: publication failures are not
	// retried indefinitely (docs/engine.md, C07 and C11).
	PublicationRetryLimit int
	// SeismicBudget bounds the postings one flush clusters into Seismic
	// blocks (default DefaultSeismicBudget, negative: none); dimensions
	// past it stay pending, persisted as Seismic debt for maintenance.
	SeismicBudget int64
	// SpareFiles is the number of spare slots (at most 6): empty files a
	// writer keeps ready in the index directory, created in the background
	// (or, on vfs.Default on Linux, recycling the replaced metadata.json
	// and adopted retired deletion masks), so that a commit renames them
	// into place instead of creating its files (default: 6 on vfs.Default
	// on Linux, none on other filesystems; negative: none).
	SpareFiles int
	// Cache keeps the decompressed store blocks of every segment reader
	// the index opens (stored fields of search hits, out-of-order merges);
	// several indexes may share one, as summa-server's do (default: a
	// cache of the index's own of segment.DefaultCacheBytes).
	Cache *segment.Cache
	// Hooks are test-only fault points.
	Hooks Hooks
}

// Hooks are fault points for tests; nil hooks do nothing.
type Hooks struct {
	// BeforeWorkerFlush runs in a worker before it writes a flush output;
	// it may block or panic.
	BeforeWorkerFlush func(worker int)
	// BeforePublish runs in the commit finalizer before the metadata save.
	BeforePublish func() error
	// AfterMaskPlan runs in the commit task once the committed segments'
	// masks were planned ahead (maskplan.go), before it waits for the
	// workers' flush.
	AfterMaskPlan func()
	// DuringPrimaryKeyLookup runs in Delete while it looks a key up in
	// the committed segments; it may block.
	DuringPrimaryKeyLookup func(pk string)
	// BeforeRewritePublish runs after a merge or compaction output was
	// written and validated, before its publication.
	BeforeRewritePublish func(kind string)
	// CommitPoint runs as a generation reaches the commit point, before its
	// metadata save, naming the caller: "flush", "rewrite" or "doctor".
	CommitPoint func(caller string)
	// SpareRefill, when set, runs the refill of the spare files (see
	// Options.SpareFiles) instead of a new goroutine: called inline, it
	// keeps the filesystem operations in a deterministic order.
	SpareRefill func(refill func())
}

func (o Options) withDefaults() Options {
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	if o.IndexingWorkers <= 0 {
		o.IndexingWorkers = min(runtime.GOMAXPROCS(0), 8)
	}
	if o.WorkerBufferBytes <= 0 {
		o.WorkerBufferBytes = 64 << 20
	}
	if o.CommitFlushTimeout <= 0 {
		o.CommitFlushTimeout = 5 * time.Minute
	}
	if o.PublicationRetryMin <= 0 {
		o.PublicationRetryMin = DefaultPublicationRetryMin
	}
	if o.PublicationRetryMax <= 0 {
		o.PublicationRetryMax = DefaultPublicationRetryMax
	}
	o.PublicationRetryMax = max(o.PublicationRetryMax, o.PublicationRetryMin)
	if o.PublicationRetryLimit <= 0 {
		o.PublicationRetryLimit = DefaultPublicationRetryLimit
	}
	if o.SeismicBudget == 0 {
		o.SeismicBudget = DefaultSeismicBudget
	}
	if o.Cache == nil {
		o.Cache = segment.NewCache(segment.DefaultCacheBytes)
	}
	return o
}

// Cache returns the block cache of the index's segment readers
// (Options.Cache, or the index's own).
func (idx *Index) Cache() *segment.Cache { return idx.opts.Cache }

// readerOptions are the options of every segment reader the index opens.
func (idx *Index) readerOptions() segment.ReaderOptions {
	return segment.ReaderOptions{Cache: idx.opts.Cache}
}
