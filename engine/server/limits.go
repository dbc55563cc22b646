package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/summadev/summa/engine/internal/strictjson"
	"github.com/summadev/summa/engine/search"
	"github.com/summadev/summa/internal/defaults"
)

// Limits bound what one request may send. The zero value of a field means
// its default.
type Limits struct {
	// MaxRequestBytes bounds a request body (default 64 MiB); larger bodies
	// get 413 PayloadTooLarge without being read whole.
	MaxRequestBytes int64
	// MaxDocumentBytes bounds one NDJSON line (default 1 MiB); a longer
	// line gets 413 PayloadTooLarge.
	MaxDocumentBytes int
	// MaxQueryBytes bounds the text of a string query (default 16 KiB); a
	// longer one gets 400 InvalidQuery.
	MaxQueryBytes int
	// MaxSchemaBytes bounds the body of an index creation (default 1 MiB).
	MaxSchemaBytes int64
	// MaxSearchBytes bounds a search body (default 1 MiB: a dense query
	// vector of the largest dimension fits with room to spare).
	MaxSearchBytes int64
	// MaxSmallBodyBytes bounds the optional bodies of maintenance and admin
	// requests (default 64 KiB).
	MaxSmallBodyBytes int64
	// BackpressureWait bounds how long ingestion waits for a running commit
	// before answering 503 Backpressure (default 10 s).
	BackpressureWait time.Duration
}

// Default limits.
const (
	// DefaultMaxRequestBytes is the default of Limits.MaxRequestBytes.
	DefaultMaxRequestBytes = 64 << 20
	// DefaultMaxDocumentBytes is the default of Limits.MaxDocumentBytes.
	DefaultMaxDocumentBytes = 1 << 20
	// DefaultMaxQueryBytes is the default of Limits.MaxQueryBytes.
	DefaultMaxQueryBytes = search.MaxQueryBytes
	// DefaultMaxSchemaBytes is the default of Limits.MaxSchemaBytes.
	DefaultMaxSchemaBytes = 1 << 20
	// DefaultMaxSearchBytes is the default of Limits.MaxSearchBytes.
	DefaultMaxSearchBytes = 1 << 20
	// DefaultMaxSmallBodyBytes is the default of Limits.MaxSmallBodyBytes.
	DefaultMaxSmallBodyBytes = 64 << 10
	// DefaultBackpressureWait is the default of Limits.BackpressureWait.
	DefaultBackpressureWait = 10 * time.Second
)

// withDefaults fills zero fields with their defaults. No per-kind bound
// exceeds MaxRequestBytes.
func (l Limits) withDefaults() Limits {
	defaults.Set(&l.MaxRequestBytes, DefaultMaxRequestBytes)
	defaults.Set(&l.MaxDocumentBytes, DefaultMaxDocumentBytes)
	defaults.Set(&l.MaxQueryBytes, DefaultMaxQueryBytes)
	defaults.Set(&l.MaxSchemaBytes, DefaultMaxSchemaBytes)
	defaults.Set(&l.MaxSearchBytes, DefaultMaxSearchBytes)
	defaults.Set(&l.MaxSmallBodyBytes, DefaultMaxSmallBodyBytes)
	defaults.Set(&l.BackpressureWait, DefaultBackpressureWait)
	l.MaxSchemaBytes = min(l.MaxSchemaBytes, l.MaxRequestBytes)
	l.MaxSearchBytes = min(l.MaxSearchBytes, l.MaxRequestBytes)
	l.MaxSmallBodyBytes = min(l.MaxSmallBodyBytes, l.MaxRequestBytes)
	return l
}

// limitBody bounds r's body to limit bytes. A declared Content-Length over
// the limit fails at once, before any byte is read; a body that turns out
// longer fails at the first read past the limit with *http.MaxBytesError.
func limitBody(w http.ResponseWriter, r *http.Request, limit int64) error {
	if r.ContentLength > limit {
		return &http.MaxBytesError{Limit: limit}
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	return nil
}

// decodeBody reads a bounded JSON body into v. An empty body leaves v
// untouched when allowEmpty is set. Malformed JSON, trailing data, unknown
// or case-mismatched members, a member given twice and null where the
// member has no null are BadRequest (the error's cause is the
// *strictjson.Error or the encoding/json error, for handlers that answer
// with a more specific code); an oversized body is PayloadTooLarge.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, allowEmpty bool, v any) error {
	if err := limitBody(w, r, limit); err != nil {
		return err
	}
	data, err := io.ReadAll(r.Body) // bounded by limitBody
	if err != nil {
		return bodyReadError(err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if allowEmpty {
			return nil
		}
		return newError(http.StatusBadRequest, CodeBadRequest, "the request needs a JSON body")
	}
	if err := strictjson.Decode(data, v, strictjson.Options{}); err != nil {
		e := newError(http.StatusBadRequest, CodeBadRequest, "malformed JSON body: %v", err)
		e.cause = err
		return e
	}
	return nil
}

// bodyReadError maps a failed body read: over the limit is 413, anything
// else (a client that went away, a broken chunked encoding) is 400.
func bodyReadError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	if errors.Is(err, errBodyTimeout) {
		e := newError(http.StatusRequestTimeout, CodeRequestTimeout, "%v; nothing of it was applied", err)
		e.cause = err
		return e
	}
	return newError(http.StatusBadRequest, CodeBadRequest, "reading the request body: %v", err)
}

// errLineTooLong is returned by readLine for a line over its limit.
var errLineTooLong = errors.New("line too long")

// readLine reads one line of at most max bytes (excluding its newline) into
// buf[:0] without ever buffering more than max+1 bytes plus one read
// buffer. It returns io.EOF with the last, unterminated line.
func readLine(br *bufio.Reader, max int, buf []byte) ([]byte, error) {
	buf = buf[:0]
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > max+1 || (err != nil && len(buf)+len(frag) > max) {
			return buf, errLineTooLong
		}
		buf = append(buf, frag...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return buf, err
		}
		return buf, nil
	}
}

// checkQuerySize refuses a string query longer than the limit.
func checkQuerySize(q json.RawMessage, limit int) error {
	q = bytes.TrimSpace(q)
	if len(q) == 0 || q[0] != '"' || len(q) <= limit+2 {
		return nil
	}
	var text string
	if err := json.Unmarshal(q, &text); err != nil {
		return newError(http.StatusBadRequest, CodeInvalidQuery, "malformed query string: %v", err)
	}
	if len(text) > limit {
		return newError(http.StatusBadRequest, CodeInvalidQuery, "query longer than %d bytes", limit)
	}
	return nil
}

// lineError builds the InvalidDocument answer of NDJSON line n.
func lineError(n int, err error) error {
	ae := toAPIError(err)
	if ae.code != CodeInvalidDocument {
		return err
	}
	e := newError(http.StatusBadRequest, CodeInvalidDocument, "line %d: %s", n, ae.message)
	e.line, e.field = n, ae.field
	return e
}

// lineTooLong builds the PayloadTooLarge answer of NDJSON line n.
func lineTooLong(n, limit int) error {
	e := newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
		"line %d: document larger than %d bytes", n, limit)
	e.line = n
	return e
}

// describeLimit renders a byte count for messages.
func describeLimit(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
