package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/diskspace"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/replication"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/search"
)

// Error codes of the API. Every error answer carries one of them in
// {"error":{"code":...}}; clients branch on the code, never on the message.
// The vocabulary is defined once, in the client package.
const (
	// CodeIndexNotFound (404): no index of that name.
	CodeIndexNotFound = client.CodeIndexNotFound
	// CodeIndexExists (409): an index of that name exists with another schema.
	CodeIndexExists = client.CodeIndexExists
	// CodeIndexDeleting (409): the index is being deleted.
	CodeIndexDeleting = client.CodeIndexDeleting
	// CodeInvalidSchema (400): the schema is malformed or invalid.
	CodeInvalidSchema = client.CodeInvalidSchema
	// CodeInvalidDocument (400): a document of the request is invalid; the
	// message names its NDJSON line and field. Nothing was indexed.
	CodeInvalidDocument = client.CodeInvalidDocument
	// CodeInvalidQuery (400): the search request is refused.
	CodeInvalidQuery = client.CodeInvalidQuery
	// CodeInvalidIndexName (400): the name is not a DNS-1123 subdomain.
	CodeInvalidIndexName = client.CodeInvalidIndexName
	// CodeBadRequest (400): a malformed request body or parameter.
	CodeBadRequest = client.CodeBadRequest
	// CodeNotFound (404): no such route.
	CodeNotFound = client.CodeNotFound
	// CodeMethodNotAllowed (405): the route exists, the method does not.
	CodeMethodNotAllowed = client.CodeMethodNotAllowed
	// CodePayloadTooLarge (413): the body or one document is over its limit.
	CodePayloadTooLarge = client.CodePayloadTooLarge
	// CodeInternal (500): a server fault.
	CodeInternal = client.CodeInternal
	// CodeGenerationFailed (500, retryable): the indexing generation failed
	// and nothing was published; its documents are kept and the next commit
	// retries them.
	CodeGenerationFailed = client.CodeGenerationFailed
	// CodeStorageFull (507, retryable): the volume cannot take the write
	// (ENOSPC, EDQUOT, or free space below --min-free-bytes); nothing
	// acknowledged changed.
	CodeStorageFull = client.CodeStorageFull
	// CodeVisibilityChanged (409, retryable): deletes reached a compaction
	// source while it ran; nothing was published.
	CodeVisibilityChanged = client.CodeVisibilityChanged
	// CodeSourceQuarantined (409): a rewrite source failed validation and
	// is quarantined; the doctor repairs it.
	CodeSourceQuarantined = client.CodeSourceQuarantined
	// CodeDraining (503, retryable): writes are refused while the server drains.
	CodeDraining = client.CodeDraining
	// CodeBackpressure (503, retryable): a commit is being published.
	CodeBackpressure = client.CodeBackpressure
	// CodeCommitFlushTimeout (503, retryable): the commit goes on; a retried
	// commit request joins it.
	CodeCommitFlushTimeout = client.CodeCommitFlushTimeout
	// CodeShuttingDown (503, retryable): the server is stopping.
	CodeShuttingDown = client.CodeShuttingDown
	// CodeStarting (503, retryable): the server is opening its data directory.
	CodeStarting = client.CodeStarting
	// CodeNotReady (503, retryable): /readyz while starting, draining or
	// shutting down.
	CodeNotReady = client.CodeNotReady
	// CodeTimeout (503, retryable): the request's deadline passed.
	CodeTimeout = client.CodeTimeout
)

// Retry-After defaults of the retryable answers.
const (
	// retryBackpressure is the pause suggested after Backpressure: commits
	// publish within a second or so.
	retryBackpressure = time.Second
	// retryDraining is the pause suggested after Draining: a drained server
	// is usually replaced or resumed within seconds.
	retryDraining = 5 * time.Second
	// retryFlushTimeout is the pause before retrying a timed-out commit.
	retryFlushTimeout = 5 * time.Second
	// retryDefault is the pause of any other 503.
	retryDefault = time.Second
)

// apiError is one error answer.
type apiError struct {
	// status is the HTTP status.
	status int
	// code is the API error code.
	code string
	// message is the human-readable text.
	message string
	// retryable tells the client that the same request may succeed later.
	retryable bool
	// retryAfter is sent as Retry-After (required on every 503).
	retryAfter time.Duration
	// line and field locate an invalid document.
	line  int
	field string
	// cause is the error behind the answer, if any.
	cause error
}

// Error returns the message.
func (e *apiError) Error() string { return e.code + ": " + e.message }

// Unwrap returns the cause.
func (e *apiError) Unwrap() error { return e.cause }

// newError builds an apiError with a formatted message.
func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// unavailable builds a retryable 503.
func unavailable(code string, after time.Duration, format string, args ...any) *apiError {
	e := newError(http.StatusServiceUnavailable, code, format, args...)
	e.retryable, e.retryAfter = true, after
	return e
}

// toAPIError maps an engine error to its answer. Unknown errors are 500
// Internal with their text (they carry context, never a panic value).
func toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var de *schema.DocumentError
	var qe *search.QueryError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
			"request body larger than %s", describeLimit(mbe.Limit))
	case errors.As(err, &de):
		e := newError(http.StatusBadRequest, CodeInvalidDocument, "%s", de.Error())
		e.field = de.Field
		return e
	case errors.As(err, &qe):
		return newError(http.StatusBadRequest, CodeInvalidQuery, "%s", qe.Reason)
	case errors.Is(err, registry.ErrIndexNotFound):
		return newError(http.StatusNotFound, CodeIndexNotFound, "%v", err)
	case errors.Is(err, registry.ErrIndexExists), errors.Is(err, index.ErrExists):
		return newError(http.StatusConflict, CodeIndexExists, "%v", err)
	case errors.Is(err, registry.ErrIndexDeleting):
		return newError(http.StatusConflict, CodeIndexDeleting, "%v", err)
	case errors.Is(err, registry.ErrInvalidIndexName):
		return newError(http.StatusBadRequest, CodeInvalidIndexName, "%v", err)
	case diskspace.IsNoSpace(err):
		return storageFull(err)
	case errors.Is(err, registry.ErrDraining):
		return unavailable(CodeDraining, retryDraining, "%v", err)
	case errors.Is(err, registry.ErrShuttingDown), errors.Is(err, index.ErrClosed):
		return unavailable(CodeShuttingDown, retryDefault, "%v", err)
	case errors.Is(err, index.ErrBackpressure):
		return unavailable(CodeBackpressure, retryBackpressure, "%v", err)
	case errors.Is(err, index.ErrCommitFlushTimeout):
		return unavailable(CodeCommitFlushTimeout, retryFlushTimeout,
			"%v; the commit goes on and a retried commit request joins it", err)
	case errors.Is(err, index.ErrGenerationFailed):
		e := newError(http.StatusInternalServerError, CodeGenerationFailed,
			"%v; commit again: the accepted documents are kept and retried", err)
		e.retryable = true
		return e
	case errors.Is(err, index.ErrPublication):
		e := newError(http.StatusInternalServerError, CodeInternal,
			"%v; nothing was committed, the generation is held and the engine retries it in the background", err)
		e.retryable = true
		return e
	case errors.Is(err, index.ErrNoPrimaryKey), errors.Is(err, registry.ErrInvalidReportID):
		return newError(http.StatusBadRequest, CodeBadRequest, "%v", err)
	case errors.Is(err, registry.ErrDoctorReportNotFound), errors.Is(err, replication.ErrNotInHold):
		return newError(http.StatusNotFound, CodeNotFound, "%v", err)
	case errors.Is(err, replication.ErrNoHold):
		return newError(http.StatusNotFound, CodeHoldNotFound, "%v", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return unavailable(CodeTimeout, retryDefault, "%v", err)
	}
	return newError(http.StatusInternalServerError, CodeInternal, "%v", err)
}

// writeError answers err as the contract's error body. Every 503 carries
// Retry-After; a 413 closes the connection so that the rest of an
// oversized body is never read.
func writeError(w http.ResponseWriter, err error) *apiError {
	e := toAPIError(err)
	h := w.Header()
	if e.status == http.StatusServiceUnavailable && e.retryAfter <= 0 {
		e.retryAfter = retryDefault
	}
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(max(1, int((e.retryAfter+time.Second-1)/time.Second))))
	}
	if e.status == http.StatusRequestEntityTooLarge || e.status == http.StatusRequestTimeout {
		h.Set("Connection", "close")
	}
	writeJSON(w, e.status, client.ErrorBody{Error: &client.ErrorDetail{
		Code: e.code, Message: e.message, Retryable: e.retryable, Line: e.line, Field: e.field,
	}})
	return e
}

// writeJSON answers v as JSON with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"Internal","message":"encoding the answer failed","retryable":false}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
