package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/summadev/summa/engine/index"
)

// maxStatusWait bounds the long poll of GET /v1/indexes/{index}.
const maxStatusWait = 30 * time.Second

// statusWait is the long-poll form of GET /v1/indexes/{index}: the
// values the caller last saw, and how long to wait for them to change.
type statusWait struct {
	// wait is the longest wait (0: answer at once).
	wait time.Duration
	// generation is ?waitGeneration (-1: not given).
	generation int64
	// quarantined is ?waitQuarantined (-1: not given).
	quarantined int64
}

// parseStatusWait reads ?wait=SECONDS (at most maxStatusWait),
// ?waitGeneration=G and ?waitQuarantined=N. A wait needs at least one of
// the two values to wait on.
func parseStatusWait(r *http.Request) (statusWait, error) {
	q := r.URL.Query()
	sw := statusWait{generation: -1, quarantined: -1}
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"waitGeneration", &sw.generation}, {"waitQuarantined", &sw.quarantined}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return sw, newError(http.StatusBadRequest, CodeBadRequest, "%s=%q is not a non-negative integer", p.name, clipString(v, 40))
		}
		*p.dst = n
	}
	if v := q.Get("wait"); v != "" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || secs < 0 || secs != secs {
			return sw, newError(http.StatusBadRequest, CodeBadRequest, "wait=%q is not a number of seconds", clipString(v, 40))
		}
		sw.wait = min(time.Duration(secs*float64(time.Second)), maxStatusWait)
	}
	if sw.wait > 0 && sw.generation < 0 && sw.quarantined < 0 {
		return sw, newError(http.StatusBadRequest, CodeBadRequest, "wait needs waitGeneration or waitQuarantined: the values to wait on")
	}
	return sw, nil
}

// waitForChange holds the request until the named index's generation or
// quarantine count differs from what the caller saw, its deletion starts,
// the server shuts down, the caller leaves, or the wait ends. It returns
// at once for an index it cannot hold (not found, deleting): the status
// that follows answers those. It wakes on the index's changes
// (index.Index.Changes), never on a timer.
func (s *Server) waitForChange(r *http.Request, name string, sw statusWait) {
	if sw.wait <= 0 {
		return
	}
	h, err := s.r.Acquire(name)
	if err != nil {
		return
	}
	defer h.Release()
	deadline := time.NewTimer(sw.wait)
	defer deadline.Stop()
	for {
		idx, err := h.Index()
		if err != nil {
			return
		}
		changes := idx.Changes() // before the look: a change after it closes this
		if sw.changed(idx) {
			return
		}
		select {
		case <-changes:
		case <-s.shutdown:
			return
		case <-deadline.C:
			return
		case <-r.Context().Done():
			return
		case <-h.Done():
			return
		}
	}
}

// changed reports whether the index moved away from the values waited on.
func (sw statusWait) changed(idx *index.Index) bool {
	if sw.generation >= 0 && int64(idx.Generation()) != sw.generation {
		return true
	}
	return sw.quarantined >= 0 && int64(idx.QuarantinedCount()) != sw.quarantined
}
