package registry

import (
	"sync"
	"time"

	"github.com/summadev/summa/engine/index"
)

// Defaults of the drain estimate before anything was measured.
const (
	// defaultFlushRate is the assumed indexing throughput in documents/s.
	defaultFlushRate = 5000.0
	// defaultCommitOverhead is the assumed fixed cost of one commit.
	defaultCommitOverhead = 50 * time.Millisecond
	// ewmaWeight is the weight of a new measurement.
	ewmaWeight = 0.3
)

// commitStats measures commits for the drain estimate.
type commitStats struct {
	mu sync.Mutex
	// flushRate is an EWMA of documents per second over commits of at
	// least minRateDocs documents.
	flushRate float64
	// overhead is an EWMA of the duration of small commits (fsyncs, rename,
	// reader refresh).
	overhead time.Duration
	// fsync is the latest measured file+directory fsync latency.
	fsync time.Duration
	// inFlight counts running commit tasks.
	inFlight int
	// commits counts finished commits.
	commits int
}

// minRateDocs is the smallest commit whose duration measures throughput.
const minRateDocs = 200

func (s *commitStats) init() {
	s.flushRate = defaultFlushRate
	s.overhead = defaultCommitOverhead
}

func (s *commitStats) commitStarted() {
	s.mu.Lock()
	s.inFlight++
	s.mu.Unlock()
}

func (s *commitStats) commitEnded() {
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
}

// recordCommit adds one measured commit.
func (s *commitStats) recordCommit(docs int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commits++
	if docs >= minRateDocs && d > 0 {
		rate := float64(docs) / d.Seconds()
		s.flushRate = (1-ewmaWeight)*s.flushRate + ewmaWeight*rate
		return
	}
	s.overhead = time.Duration((1-ewmaWeight)*float64(s.overhead) + ewmaWeight*float64(d))
}

// setFsync records a measured fsync latency.
func (s *commitStats) setFsync(d time.Duration) {
	s.mu.Lock()
	s.fsync = d
	s.mu.Unlock()
}

// Estimate is the drain estimate and the inputs it came from.
type Estimate struct {
	// DrainEstimateSeconds is how long a drain would take now.
	DrainEstimateSeconds float64
	// UncommittedDocuments counts accepted, uncommitted operations.
	UncommittedDocuments int
	// ActiveOperations counts IDs held by active operations plus running commits.
	ActiveOperations int
	// QuarantinedSegments counts quarantined segments over all indexes.
	QuarantinedSegments int
	// DurabilityDegraded is true when any index's durability is degraded.
	DurabilityDegraded bool
	// FlushDocumentsPerSecond is the measured indexing throughput.
	FlushDocumentsPerSecond float64
	// CommitOverheadSeconds is the measured fixed cost of one commit.
	CommitOverheadSeconds float64
	// FsyncSeconds is the measured fsync latency of the data directory.
	FsyncSeconds float64
	// IndexesWithPendingWrites counts indexes a drain must commit.
	IndexesWithPendingWrites int
	// CommitsInFlight counts running commit tasks.
	CommitsInFlight int
	// HeldPublications lists, by index name, the generations whose
	// publication failed before the commit point and is being retried
	// (C11); nil when none is held.
	HeldPublications []HeldPublication
}

// HeldPublication is one index's held publication in the estimate.
type HeldPublication struct {
	// Index is the index name.
	Index string
	index.HeldPublication
}

// Lifecycle returns the drain estimate: for every index with pending
// writes, its uncommitted documents divided by the measured flush rate plus
// one commit's fixed cost (at least three fsyncs: tmp file, directory
// before and after the rename); plus, for commits already running, their
// expected remaining time.
func (r *Registry) Lifecycle() Estimate {
	r.stats.mu.Lock()
	rate, overhead, fsync, inFlight := r.stats.flushRate, r.stats.overhead, r.stats.fsync, r.stats.inFlight
	r.stats.mu.Unlock()
	fixed := max(overhead, 3*fsync).Seconds()
	est := Estimate{FlushDocumentsPerSecond: rate, CommitOverheadSeconds: overhead.Seconds(),
		FsyncSeconds: fsync.Seconds(), CommitsInFlight: inFlight}
	for _, e := range r.entries() {
		st := e.idx.Status()
		est.UncommittedDocuments += st.UncommittedDocuments
		est.ActiveOperations += st.ActiveOperations
		est.QuarantinedSegments += len(st.Quarantined)
		est.DurabilityDegraded = est.DurabilityDegraded || st.DurabilityDegraded
		if h := st.HeldPublication; h != nil {
			est.HeldPublications = append(est.HeldPublications, HeldPublication{Index: e.name, HeldPublication: *h})
		}
		if st.UncommittedDocuments > 0 {
			est.IndexesWithPendingWrites++
			est.DrainEstimateSeconds += float64(st.UncommittedDocuments)/rate + fixed
		}
		if t := e.activeCommit(); t != nil {
			expected := float64(t.pending)/rate + fixed
			est.DrainEstimateSeconds += max(0, expected-time.Since(t.started).Seconds())
		}
	}
	return est
}
