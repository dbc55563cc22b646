package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error codes of the API (see the engine contract). Branch on them, never
// on messages.
const (
	// CodeIndexNotFound (404): no index of that name.
	CodeIndexNotFound = "IndexNotFound"
	// CodeIndexExists (409): the name exists with another schema.
	CodeIndexExists = "IndexExists"
	// CodeIndexDeleting (409): the index is being deleted.
	CodeIndexDeleting = "IndexDeleting"
	// CodeInvalidSchema (400): the schema is malformed or invalid.
	CodeInvalidSchema = "InvalidSchema"
	// CodeInvalidDocument (400): a document is invalid; nothing was indexed.
	CodeInvalidDocument = "InvalidDocument"
	// CodeInvalidQuery (400): the search request is refused.
	CodeInvalidQuery = "InvalidQuery"
	// CodeInvalidIndexName (400): the name is not a DNS-1123 subdomain.
	CodeInvalidIndexName = "InvalidIndexName"
	// CodeBadRequest (400): a malformed body or parameter.
	CodeBadRequest = "BadRequest"
	// CodeNotFound (404): no such route.
	CodeNotFound = "NotFound"
	// CodeMethodNotAllowed (405): wrong method for the route.
	CodeMethodNotAllowed = "MethodNotAllowed"
	// CodePayloadTooLarge (413): the body or a document is over its limit.
	CodePayloadTooLarge = "PayloadTooLarge"
	// CodeInternal (500): a server fault.
	CodeInternal = "Internal"
	// CodeGenerationFailed (500, retryable): nothing was published; the
	// accepted documents are kept and the next commit retries them.
	CodeGenerationFailed = "GenerationFailed"
	// CodeStorageFull (507, retryable): the data directory's volume cannot
	// take the write (no space, or free space below the engine's
	// --min-free-bytes reserve); nothing acknowledged changed. Retry once
	// space returns.
	CodeStorageFull = "StorageFull"
	// CodeVisibilityChanged (409, retryable): deletes reached a compaction
	// source while it ran; retry the compaction.
	CodeVisibilityChanged = "VisibilityChanged"
	// CodeSourceQuarantined (409): a rewrite source is quarantined; run the doctor.
	CodeSourceQuarantined = "SourceQuarantined"
	// CodeDraining (503, retryable): writes are refused during a drain.
	CodeDraining = "Draining"
	// CodeBackpressure (503, retryable): a commit is being published.
	CodeBackpressure = "Backpressure"
	// CodeCommitFlushTimeout (503, retryable): the commit goes on; retry to join it.
	CodeCommitFlushTimeout = "CommitFlushTimeout"
	// CodeShuttingDown (503, retryable): the server is stopping.
	CodeShuttingDown = "ShuttingDown"
	// CodeStarting (503, retryable): the server is opening its data directory.
	CodeStarting = "Starting"
	// CodeNotReady (503, retryable): /readyz while starting, draining or stopping.
	CodeNotReady = "NotReady"
	// CodeTimeout (503, retryable): the request's deadline passed.
	CodeTimeout = "Timeout"
	// CodeUnauthorized (401): no token, an unknown token or another
	// Authorization form; nothing was changed.
	CodeUnauthorized = "Unauthorized"
	// CodeForbidden (403): a known token of too low a scope; nothing was
	// changed.
	CodeForbidden = "Forbidden"
	// CodeBackupNotConfigured (409): the engine has no object store
	// (--s3-* flags); backup routes change nothing.
	CodeBackupNotConfigured = "BackupNotConfigured"
	// CodeBackupNotFound (404): no backup of that ID is running in the
	// engine or complete in the bucket.
	CodeBackupNotFound = "BackupNotFound"
	// CodeBackupStoreUnavailable (503, retryable): the object store could
	// not be read.
	CodeBackupStoreUnavailable = "BackupStoreUnavailable"
)

// APIError is an error answer of the server.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is the API error code ("IndexNotFound", ...); empty when the
	// answer did not carry the API's error body (a proxy's page, say).
	Code string
	// Message is the server's explanation.
	Message string
	// Retryable tells that the same request may succeed later.
	Retryable bool
	// RetryAfter is the server's Retry-After, or zero.
	RetryAfter time.Duration
	// Line is the NDJSON line of an InvalidDocument error, or zero.
	Line int
	// Field is the offending field of an InvalidDocument error, if known.
	Field string
}

// Error formats the status, code and message.
func (e *APIError) Error() string {
	code := e.Code
	if code == "" {
		code = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("summa: %d %s: %s", e.StatusCode, code, e.Message)
}

// IsCode reports whether err is (or wraps) an *APIError with that code.
func IsCode(err error, code string) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == code
}

// IsRetryable reports whether err is (or wraps) a retryable *APIError.
func IsRetryable(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Retryable
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// readAPIError builds the *APIError of a non-2xx answer.
func readAPIError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{StatusCode: resp.StatusCode, RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"))}
	var body ErrorBody
	if json.Unmarshal(data, &body) == nil && body.Error != nil {
		e.Code, e.Message, e.Retryable = body.Error.Code, body.Error.Message, body.Error.Retryable
		e.Line, e.Field = body.Error.Line, body.Error.Field
		return e
	}
	e.Message = strings.TrimSpace(string(data))
	if len(e.Message) > 200 {
		e.Message = e.Message[:200] + "..."
	}
	e.Retryable = resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests
	return e
}

// parseRetryAfter reads Retry-After in seconds or as an HTTP date.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}
