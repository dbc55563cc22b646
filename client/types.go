package client

import (
	"encoding/json"
	"time"
)

// Index states of a STATUS.
const (
	// StateOpen: the index serves.
	StateOpen = "open"
	// StateDeleting: the ordered deletion is running.
	StateDeleting = "deleting"
)

// IndexStatus is the STATUS of an index.
type IndexStatus struct {
	// Name is the index name.
	Name string `json:"name"`
	// State is StateOpen or StateDeleting.
	State string `json:"state"`
	// Generation is the published metadata generation.
	Generation uint64 `json:"generation"`
	// Documents counts live, committed, searchable documents.
	Documents uint64 `json:"documents"`
	// Segments lists the metadata-live segments.
	Segments []SegmentStatus `json:"segments"`
	// Quarantined lists segments that failed to open.
	Quarantined []QuarantinedSegment `json:"quarantined"`
	// DurabilityDegraded is true after a directory fsync failed post-commit.
	DurabilityDegraded bool `json:"durabilityDegraded"`
	// UncommittedDocuments counts accepted operations not yet committed.
	UncommittedDocuments int `json:"uncommittedDocuments"`
	// ActiveOperations counts segment IDs held by active operations.
	ActiveOperations int `json:"activeOperations"`
	// HeldPublication is set while a committed generation's publication
	// failed before the commit point and is retried by the engine in the
	// background (ingestion answers Backpressure meanwhile); nil otherwise.
	HeldPublication *HeldPublication `json:"heldPublication,omitempty"`
	// Storage is the data directory's volume; absent when the engine
	// could not read it.
	Storage *StorageStatus `json:"storage,omitempty"`
	// Replication is set on a read follower only: where it copies the
	// index from and how far behind it is.
	Replication *ReplicationStatus `json:"replication,omitempty"`
}

// Replication states of a follower's index.
const (
	// ReplicationFollowing: connected and serving the leader's latest
	// committed generation (or copying the next one within moments).
	ReplicationFollowing = "following"
	// ReplicationCatchingUp: connected and copying a newer generation.
	ReplicationCatchingUp = "catchingUp"
	// ReplicationDisconnected: the leader cannot be reached; the follower
	// serves what it has and retries with backoff.
	ReplicationDisconnected = "disconnected"
)

// ReplicationStatus is a follower's view of one index's replication.
type ReplicationStatus struct {
	// Leader is the leader's URL (--follow).
	Leader string `json:"leader"`
	// State is ReplicationFollowing, ReplicationCatchingUp or
	// ReplicationDisconnected.
	State string `json:"state"`
	// LeaderGeneration is the leader's last committed generation seen.
	LeaderGeneration uint64 `json:"leaderGeneration"`
	// LagSeconds is how long the follower has been behind the leader's
	// committed generation (0 when it serves it).
	LagSeconds float64 `json:"lagSeconds"`
}

// ReplicationFile is one file of a held generation.
type ReplicationFile struct {
	// Name is the file's name (seg_<ID>.<suffix>).
	Name string `json:"name"`
	// Size is its size in bytes.
	Size int64 `json:"size"`
}

// ReplicationState is the answer of GET /v1/indexes/{index}/replication:
// the leader's committed generation and, when it is newer than the
// follower's "after", a hold on its files with its metadata.
type ReplicationState struct {
	// Index is the index name.
	Index string `json:"index"`
	// Generation is the committed generation.
	Generation uint64 `json:"generation"`
	// UID identifies the leader's index across its generations (empty
	// for an index created before UIDs): another UID under the same name
	// is an index deleted and created again.
	UID string `json:"uid,omitempty"`
	// Hold is the hold's ID (files are downloaded through it); empty when
	// Generation is not newer than "after".
	Hold string `json:"hold,omitempty"`
	// HoldSeconds is the hold's time to live, renewed by each download.
	HoldSeconds float64 `json:"holdSeconds,omitempty"`
	// Metadata is the generation's metadata.json, verbatim.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Files are every file the generation names.
	Files []ReplicationFile `json:"files,omitempty"`
}

// StorageStatus is the space of the engine's data volume.
type StorageStatus struct {
	// FreeBytes is the space writes may still use.
	FreeBytes int64 `json:"freeBytes"`
	// UsedBytes is the space in use.
	UsedBytes int64 `json:"usedBytes"`
	// Full is true while ingestion, commits and maintenance are refused
	// (507 StorageFull): free space below the reserve, or a write failed
	// for space and none has returned since.
	Full bool `json:"full"`
}

// HeldPublication is a generation whose publication failed before the
// commit point; the engine keeps it and retries it with exponential
// backoff until it is published (a commit or a drain also retries it).
type HeldPublication struct {
	// Since is when its first publication attempt failed.
	Since time.Time `json:"since"`
	// Attempts counts its failed publication attempts.
	Attempts int `json:"attempts"`
	// LastError is the last attempt's error.
	LastError string `json:"lastError"`
	// NextRetry is when the engine retries it in the background; absent
	// once its background retries are exhausted (a commit or a drain
	// retries it then).
	NextRetry *time.Time `json:"nextRetry,omitempty"`
}

// IndexHeldPublication is one index's held publication in Lifecycle.
type IndexHeldPublication struct {
	// Index is the index name.
	Index string `json:"index"`
	HeldPublication
}

// SegmentStatus is one live segment.
type SegmentStatus struct {
	// ID is the segment ID in lowercase hex.
	ID string `json:"id"`
	// Documents counts rows, deleted ones included.
	Documents uint32 `json:"documents"`
	// DeletedDocuments counts rows hidden by the deletion mask.
	DeletedDocuments uint32 `json:"deletedDocuments"`
	// SizeBytes is the size of the segment's files and mask.
	SizeBytes int64 `json:"sizeBytes"`
	// Vectors lists the binary IVF payload of each binary dense_vector
	// field: encoded runs and fragmentation debt.
	Vectors []VectorRuns `json:"vectors,omitempty"`
}

// VectorRuns is one binary dense_vector field's IVF payload in a segment.
type VectorRuns struct {
	// Field is the field name.
	Field string `json:"field"`
	// Runs is the number of encoded runs (1 once coalesced).
	Runs int `json:"runs"`
	// Vectors is the number of encoded vectors.
	Vectors uint32 `json:"vectors"`
	// Fragmented is the persisted debt that maintenance coalesces.
	Fragmented bool `json:"fragmented"`
}

// QuarantinedSegment is a segment excluded from search.
type QuarantinedSegment struct {
	// Segment is the segment ID in lowercase hex.
	Segment string `json:"segment"`
	// Reason says why it failed to open.
	Reason string `json:"reason"`
}

// CommitResult is the answer of a commit.
type CommitResult struct {
	// Generation is the published metadata generation.
	Generation uint64 `json:"generation"`
	// Documents is the live document count after the commit.
	Documents uint64 `json:"documents"`
	// DurabilityDegraded is set when the commit stands but crash
	// durability is degraded.
	DurabilityDegraded bool `json:"durabilityDegraded"`
}

// CreateIndexRequest is the body of PUT /v1/indexes/{index}. (The server
// also accepts the bare schema as the body.)
type CreateIndexRequest struct {
	// Schema is the index's schema, {"fields":[...]}.
	Schema json.RawMessage `json:"schema"`
}

// IndexList is the answer of GET /v1/indexes.
type IndexList struct {
	// Indexes has the STATUS of every index, sorted by name.
	Indexes []IndexStatus `json:"indexes"`
}

// DeleteIndexResult is the answer (202) of DELETE /v1/indexes/{index}.
type DeleteIndexResult struct {
	// Name is the index name.
	Name string `json:"name"`
	// State is "deleting".
	State string `json:"state"`
}

// AddDocumentsResult is the answer of POST .../documents.
type AddDocumentsResult struct {
	// Accepted is the number of documents admitted (all of the request's).
	Accepted int `json:"accepted"`
}

// DeleteDocumentResult is the answer of DELETE .../documents/{primaryKey}.
type DeleteDocumentResult struct {
	// Deleted is 1 when a document of that key existed, 0 otherwise.
	Deleted int `json:"deleted"`
}

// Health is the answer (200) of /healthz ("ok") and /readyz ("ready").
type Health struct {
	// Status is "ok" or "ready".
	Status string `json:"status"`
}

// ErrorBody is the body of every error answer; APIError is its Go form.
type ErrorBody struct {
	// Error is the error object (nil only in a body that is not the API's).
	Error *ErrorDetail `json:"error"`
}

// ErrorDetail is the "error" member of an error answer.
type ErrorDetail struct {
	// Code is the API error code (see the Code constants).
	Code string `json:"code"`
	// Message explains the error to a human.
	Message string `json:"message"`
	// Retryable tells that the same request may succeed later.
	Retryable bool `json:"retryable"`
	// Line is the 1-based NDJSON line of an invalid document (absent
	// otherwise).
	Line int `json:"line,omitempty"`
	// Field is the offending field of an invalid document, if known.
	Field string `json:"field,omitempty"`
}

// SearchRequest is one search. Query is a string in the query language,
// a DenseQuery or SparseQuery (wrapped by VectorQuery), or any value that
// marshals to the query's JSON (json.RawMessage included).
type SearchRequest struct {
	// Query is the query.
	Query any `json:"query"`
	// Limit is the page size; 0 lets the server choose (10).
	Limit int `json:"limit,omitempty"`
	// Offset skips the best hits before the page.
	Offset int `json:"offset,omitempty"`
	// TotalHitsThreshold lets the server report TotalHits as a lower bound
	// (TotalHitsRelation "gte") once it reaches the threshold, which allows
	// block-max pruning; 0 keeps it exact.
	TotalHitsThreshold int `json:"totalHitsThreshold,omitempty"`
	// CountOnly asks for the exact TotalHits alone: the answer has no
	// hits, and the server scores nothing.
	CountOnly bool `json:"countOnly,omitempty"`
}

// VectorQuery is the JSON object form of a query: exactly one of Dense
// and Sparse.
type VectorQuery struct {
	// Dense asks for the k nearest documents by dot product.
	Dense *DenseQuery `json:"dense,omitempty"`
	// Sparse asks for a sparse dot-product search.
	Sparse *SparseQuery `json:"sparse,omitempty"`
}

// DenseQuery is {"field":F,"vector":[...],"k":K}.
type DenseQuery struct {
	// Field is a dense_vector field.
	Field string `json:"field"`
	// Vector has the field's dimension count.
	Vector []float32 `json:"vector"`
	// K is the number of neighbours (0: the server's default).
	K int `json:"k,omitempty"`
	// Nprobe is the number of clusters probed per encoded run of a binary
	// field (0: the server's default).
	Nprobe int `json:"nprobe,omitempty"`
	// Exact asks for brute force over the stored vectors (the ground
	// truth) instead of the binary IVF.
	Exact bool `json:"exact,omitempty"`
}

// SparseQuery is {"field":F,"vector":{"dim":weight}} and its options.
type SparseQuery struct {
	// Field is a sparse_vector field.
	Field string `json:"field"`
	// Vector maps dimension names to weights.
	Vector map[string]float32 `json:"vector"`
	// K is the number of best documents the Seismic search keeps (0: the
	// server's default).
	K int `json:"k,omitempty"`
	// Cut is the number of query dimensions whose lists Seismic visits
	// (0: the server's default).
	Cut int `json:"cut,omitempty"`
	// HeapFactor divides the heap minimum a block summary must beat (0:
	// the server's default).
	HeapFactor float64 `json:"heap_factor,omitempty"`
	// Exact asks for the exhaustive dot product instead of Seismic.
	Exact bool `json:"exact,omitempty"`
}

// SearchResult is the answer of a search.
type SearchResult struct {
	// TotalHits is the number of live documents that match.
	TotalHits int `json:"totalHits"`
	// TotalHitsRelation is "gte" when TotalHits is a lower bound, empty
	// when it is exact.
	TotalHitsRelation string `json:"totalHitsRelation,omitempty"`
	// Hits is the page, best first.
	Hits []Hit `json:"hits"`
}

// Hit is one returned document.
type Hit struct {
	// Score is BM25 for text queries, the dot product for vector queries.
	Score float64 `json:"score"`
	// Fields is the JSON object of the stored fields.
	Fields json.RawMessage `json:"fields"`
}

// MergeOptions are the options of a force merge (the body of POST
// .../merge).
type MergeOptions struct {
	// MaxSegments is the segment count to merge down to, at least 1; nil
	// (absent) means 1. A pointer, so that the server tells an explicit 0,
	// which it refuses, from the default (see MergeDownTo).
	MaxSegments *int `json:"maxSegments,omitempty"`
}

// MergeDownTo returns the MergeOptions of a merge down to n segments.
func MergeDownTo(n int) MergeOptions { return MergeOptions{MaxSegments: &n} }

// MaintenanceResult is the answer of merge, reorder and compact.
type MaintenanceResult struct {
	// Generation is the published generation (the current one when there
	// was nothing to do).
	Generation uint64 `json:"generation"`
	// Published is false when there was nothing to rewrite.
	Published bool `json:"published"`
	// Sources are the replaced segments (lowercase hex).
	Sources []string `json:"sources"`
	// Output is the new segment, when published (absent otherwise).
	Output string `json:"output,omitempty"`
	// Documents is the index's live document count afterwards.
	Documents uint64 `json:"documents"`
	// DurabilityDegraded is set when the result stands but crash
	// durability is degraded.
	DurabilityDegraded bool `json:"durabilityDegraded"`
	// PostingsBytesBefore and PostingsBytesAfter measure a published
	// reorder: the whole postings files of the reordered segments (absent
	// otherwise).
	PostingsBytesBefore int64 `json:"postingsBytesBefore,omitempty"`
	PostingsBytesAfter  int64 `json:"postingsBytesAfter,omitempty"`
	// BPConverged is set by a published reorder: false when a pass was
	// cut by its budget (absent otherwise).
	BPConverged *bool `json:"bpConverged,omitempty"`
	// Raw is the whole answer.
	Raw json.RawMessage `json:"-"`
}

// DrainStatus reports drain progress.
type DrainStatus struct {
	// Draining is true while writes are refused.
	Draining bool `json:"draining"`
	// Drained is true once everything accepted is committed.
	Drained bool `json:"drained"`
	// UncommittedDocuments counts accepted, uncommitted operations.
	UncommittedDocuments int `json:"uncommittedDocuments"`
	// ActiveOperations counts active operations and running commits.
	ActiveOperations int `json:"activeOperations"`
	// LastError is the drain's last commit failure, if any.
	LastError string `json:"lastError,omitempty"`
}

// Lifecycle is the drain estimate and the inputs it came from.
type Lifecycle struct {
	// DrainEstimateSeconds is how long a drain would take now.
	DrainEstimateSeconds float64 `json:"drainEstimateSeconds"`
	// UncommittedDocuments counts accepted, uncommitted operations.
	UncommittedDocuments int `json:"uncommittedDocuments"`
	// ActiveOperations counts active operations and running commits.
	ActiveOperations int `json:"activeOperations"`
	// QuarantinedSegments counts quarantined segments of all indexes.
	QuarantinedSegments int `json:"quarantinedSegments"`
	// DurabilityDegraded is true when any index's durability is degraded.
	DurabilityDegraded bool `json:"durabilityDegraded"`
	// FlushDocumentsPerSecond is the measured indexing throughput.
	FlushDocumentsPerSecond float64 `json:"flushDocumentsPerSecond"`
	// CommitOverheadSeconds is the measured fixed cost of one commit.
	CommitOverheadSeconds float64 `json:"commitOverheadSeconds"`
	// FsyncSeconds is the measured fsync latency of the data directory.
	FsyncSeconds float64 `json:"fsyncSeconds"`
	// IndexesWithPendingWrites counts indexes a drain must commit.
	IndexesWithPendingWrites int `json:"indexesWithPendingWrites"`
	// CommitsInFlight counts running commits.
	CommitsInFlight int `json:"commitsInFlight"`
	// HeldPublications lists the indexes whose last publication failed
	// before the commit point and is retried in the background; empty when
	// none is held.
	HeldPublications []IndexHeldPublication `json:"heldPublications,omitempty"`
}

// DoctorReport is the whole report of an offline doctor run
// (summa-server --doctor), as GET /v1/admin/doctor-reports/{id} serves it.
type DoctorReport struct {
	// Indexes has one entry per index, sorted by name.
	Indexes []DoctorIndexReport `json:"indexes"`
	// Error is set when the doctor could not run or finish.
	Error string `json:"error,omitempty"`
}

// DoctorIndexReport is one index's part of a doctor report.
type DoctorIndexReport struct {
	// Name is the index name.
	Name string `json:"name"`
	// CheckedSegments counts the metadata-live segments validated.
	CheckedSegments int64 `json:"checkedSegments"`
	// RemovedSegments lists every segment removed (lowercase hex).
	RemovedSegments []string `json:"removedSegments"`
	// RemovedDocuments counts the live documents lost with them.
	RemovedDocuments int64 `json:"removedDocuments"`
	// Reasons maps each removed segment to why it failed validation.
	Reasons map[string]string `json:"reasons,omitempty"`
	// Error is set when the index could not be repaired.
	Error string `json:"error,omitempty"`
}

// DoctorSummary is a doctor run's report in the form that always fits a
// Kubernetes termination message (summa-server --doctor --summary-file):
// counts are exact, the lists of removed segments may be cut, the
// per-segment reasons are left out.
type DoctorSummary struct {
	// Summary marks this form: lists may be cut, counts are exact.
	Summary bool `json:"summary"`
	// ReportID names the whole report kept in the data directory, when it
	// was kept.
	ReportID string `json:"reportId,omitempty"`
	// Indexes has one entry per index, sorted by name.
	Indexes []DoctorIndexSummary `json:"indexes"`
	// IndexesOmitted counts the indexes left out to fit.
	IndexesOmitted int `json:"indexesOmitted,omitempty"`
	// Error is set when the doctor could not run or finish.
	Error string `json:"error,omitempty"`
}

// DoctorIndexSummary is one index's part of a DoctorSummary.
type DoctorIndexSummary struct {
	// Name is the index name.
	Name string `json:"name"`
	// CheckedSegments counts the segments validated.
	CheckedSegments int64 `json:"checkedSegments"`
	// RemovedSegmentCount is the exact number of segments removed.
	RemovedSegmentCount int `json:"removedSegmentCount"`
	// RemovedSegments are the first of them (all unless the list was cut
	// to fit).
	RemovedSegments []string `json:"removedSegments"`
	// RemovedDocuments counts the documents lost with them.
	RemovedDocuments int64 `json:"removedDocuments"`
	// Error is set when the index could not be repaired.
	Error string `json:"error,omitempty"`
}

// Backup is one backup of an index to object storage (POST, GET
// /v1/indexes/{index}/backups[/{id}]).
type Backup struct {
	// ID names the backup: its start time (UTC, to the millisecond) and
	// a random suffix; IDs sort by time.
	ID string `json:"id"`
	// Index is the backed-up index.
	Index string `json:"index,omitempty"`
	// Generation is the backed-up committed generation.
	Generation uint64 `json:"generation"`
	// State is "running", "completed" or "failed".
	State string `json:"state"`
	// Documents counts the generation's live documents.
	Documents uint64 `json:"documents"`
	// Bytes is what the backup uploaded (so far, while running).
	Bytes int64 `json:"bytes"`
	// ReusedBytes is what it found in the bucket already (same file name
	// and checksum) and did not upload again.
	ReusedBytes int64 `json:"reusedBytes"`
	// TotalBytes is the size of the generation's files (Bytes plus
	// ReusedBytes once completed).
	TotalBytes int64 `json:"totalBytes,omitempty"`
	// Files and FilesDone count the generation's files and those done.
	Files     int `json:"files,omitempty"`
	FilesDone int `json:"filesDone,omitempty"`
	// Error says why a failed backup failed (empty otherwise; always
	// present, as the API documents the field).
	Error string `json:"error"`
	// EngineVersion is the engine version that wrote it.
	EngineVersion string `json:"engineVersion,omitempty"`
	// StartedAt and CompletedAt bound it (CompletedAt also for a failure).
	StartedAt   time.Time  `json:"startedAt"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
}

// Backup states.
const (
	BackupRunning   = "running"
	BackupCompleted = "completed"
	BackupFailed    = "failed"
)

// BackupList is the answer of GET /v1/indexes/{index}/backups.
type BackupList struct {
	// Backups are the completed backups in the bucket, newest first.
	Backups []Backup `json:"backups"`
}
