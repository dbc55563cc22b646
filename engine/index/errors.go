package index

import "errors"

// Sentinel errors of the index, grouped by when they occur.
var (
	// ErrNotFound: Open found no metadata.json in the directory.
	ErrNotFound = errors.New("index: no index in this directory")
	// ErrExists: Create found an index with another schema.
	ErrExists = errors.New("index: an index with another schema exists")
	// ErrLocked: another writer holds the directory's single-writer lock.
	ErrLocked = errors.New("index: directory is locked by another writer")

	// ErrClosed: the index or its writer is closed (or being deleted).
	ErrClosed = errors.New("index: closed")
	// ErrReadOnly: a write on an index opened read-only.
	ErrReadOnly = errors.New("index: opened read-only")
	// ErrNoPrimaryKey: delete by primary key on a schema without one.
	ErrNoPrimaryKey = errors.New("index: schema has no primary field")

	// ErrBackpressure: a commit finalizer is running; retry ingestion after
	// it ends (C10).
	ErrBackpressure = errors.New("index: commit in progress, ingestion paused")
	// ErrCommitFlushTimeout: the workers did not finish flushing within the
	// flush timeout; the writer stays paused on the same generation and a
	// retried Commit completes it (C06).
	ErrCommitFlushTimeout = errors.New("index: commit flush timed out; retry commit")
	// ErrGenerationFailed: a worker build failed or panicked; none of the
	// generation's outputs was published (C05). Its accepted operations are
	// kept and the next Commit retries them.
	ErrGenerationFailed = errors.New("index: indexing generation failed, nothing was published; its operations are kept and the next commit retries them")
)
