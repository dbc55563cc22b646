package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/replication"
)

// Error codes of replication.
const (
	// CodeReadOnlyReplica (409): a write on a read follower.
	CodeReadOnlyReplica = client.CodeReadOnlyReplica
	// CodeHoldNotFound (404): the replication hold expired or was released.
	CodeHoldNotFound = client.CodeHoldNotFound
)

// Follower is what the server asks of the follower loop when it runs as a
// read follower (Options.Follower; nil on a leader).
type Follower interface {
	// Status returns the replication status of an index.
	Status(index string) (client.ReplicationStatus, bool)
	// Statuses returns the replication status of every followed index.
	Statuses() map[string]client.ReplicationStatus
	// Ready reports whether the follower has what to serve (its first
	// copy of the leader's indexes, or what its data directory held at
	// start): /readyz answers 503 until then.
	Ready() bool
}

// maxReplicationWait bounds the long poll of the replication route.
const maxReplicationWait = 30 * time.Second

// readOnly wraps a write route: on a follower it answers 409
// ReadOnlyReplica and changes nothing (F05).
func (s *Server) readOnly(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.follower != nil {
			return newError(http.StatusConflict, CodeReadOnlyReplica,
				"this server is a read follower: write to its leader")
		}
		return h(w, r)
	}
}

// withReplication adds a follower's replication status to a STATUS.
func (s *Server) withReplication(st IndexStatus) IndexStatus {
	if s.follower == nil {
		return st
	}
	if rs, ok := s.follower.Status(st.Name); ok {
		st.Replication = &rs
	}
	return st
}

// replicationState is the long poll of a follower: it waits (up to
// ?wait=SECONDS, and never past the start of shutdown, which answers 503
// NotReady) until the committed generation is above ?after=G, then
// answers that generation, pinned by a new hold (F01) with its metadata
// and files, or just the generation number when the wait ran out. With
// ?uid=U other than the index's UID (the follower copied another index
// of this name) it answers at once, as for no ?after.
func (s *Server) replicationState(w http.ResponseWriter, r *http.Request) error {
	after, wait, err := replicationQuery(r)
	if err != nil {
		return err
	}
	h, idx, err := opened(s.acquire(r))
	if err != nil {
		return err
	}
	if uid := r.URL.Query().Get("uid"); uid != "" && idx.UID() != "" && uid != idx.UID() {
		// The follower's copy is of another index of this name (deleted
		// and created again): whatever its generation, it needs this one.
		after = -1
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
wait:
	for {
		changes := idx.Changes() // before the look: a commit after it closes this
		if int64(idx.Generation()) > after {
			break
		}
		select {
		case <-changes:
		case <-s.shutdown:
			break wait
		case <-deadline.C:
			break wait
		case <-r.Context().Done():
			break wait
		case <-h.Done():
			break wait
		}
	}
	if g := idx.Generation(); int64(g) <= after {
		h.Release()
		if s.shuttingDown.Load() {
			// A follower's wait must not hold the shutdown: it backs off
			// and asks again (this process, restarted, or the next leader).
			return unavailable(CodeNotReady, retryDraining, "shutting down")
		}
		writeJSON(w, http.StatusOK, client.ReplicationState{Index: h.Name(), Generation: g, UID: idx.UID()})
		return nil
	}
	snap, meta, err := pinCommitted(h, idx, "run the doctor on the leader")
	if err != nil {
		return err
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		snap.Close()
		h.Release()
		return fmt.Errorf("encode metadata: %w", err)
	}
	// The hold owns the snapshot (the files) and the handle (an index
	// deletion ends the hold through h.Done, then waits for the handle).
	id := s.holds.Add(h.Name(), idx.FS(), idx.Dir(), meta, h.Done(), func() { snap.Close(); h.Release() })
	out := client.ReplicationState{Index: h.Name(), Generation: meta.Generation, UID: meta.UID, Hold: id,
		HoldSeconds: s.holds.TTL().Seconds(), Metadata: raw}
	for _, f := range index.CommittedFiles(meta) {
		out.Files = append(out.Files, client.ReplicationFile{Name: f.Name, Size: f.Size})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// replicationQuery reads ?after=G (absent: -1, any generation is newer) and ?wait=SECONDS (default
// 0, at most maxReplicationWait).
func replicationQuery(r *http.Request) (after int64, wait time.Duration, err error) {
	q := r.URL.Query()
	after = -1
	if v := q.Get("after"); v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			return 0, 0, newError(http.StatusBadRequest, CodeBadRequest, "after=%q is not a generation", clipString(v, 40))
		}
	}
	if v := q.Get("wait"); v != "" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || secs < 0 || secs != secs {
			return 0, 0, newError(http.StatusBadRequest, CodeBadRequest, "wait=%q is not a number of seconds", clipString(v, 40))
		}
		wait = min(time.Duration(secs*float64(time.Second)), maxReplicationWait)
	}
	return after, wait, nil
}

// replicationFile streams one file of a held generation and renews the
// hold.
func (s *Server) replicationFile(w http.ResponseWriter, r *http.Request) error {
	name, err := indexName(r)
	if err != nil {
		return err
	}
	f, size, err := s.holds.Open(name, r.PathValue("hold"), r.PathValue("file"))
	if err != nil {
		return err
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	if _, err := sendFile(w, f, size, s.writeTimeout); err != nil {
		// The status is sent: the follower sees a short body and refuses it.
		s.log.Error(err, "Replication download cut", "index", name, "file", r.PathValue("file"))
	}
	return nil
}

// releaseHold ends a hold early (the follower published or gave up).
func (s *Server) releaseHold(w http.ResponseWriter, r *http.Request) error {
	name, err := indexName(r)
	if err != nil {
		return err
	}
	if !s.holds.Release(name, r.PathValue("hold")) {
		return replication.ErrNoHold
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// StopHolds ends every replication hold (shutdown, before the registry
// closes).
func (s *Server) StopHolds() { s.holds.Close() }

// lagDesc describes summa_replication_lag_seconds.
var lagDesc = prometheus.NewDesc("summa_replication_lag_seconds",
	"How long a follower's index has been behind its leader's committed generation (0 when it serves it).",
	[]string{"index"}, nil)

// replicationCollector reads a follower's lag at scrape time.
type replicationCollector struct{ f Follower }

// Describe sends the lag's description.
func (c *replicationCollector) Describe(ch chan<- *prometheus.Desc) { ch <- lagDesc }

// Collect sends the lag of every followed index.
func (c *replicationCollector) Collect(ch chan<- prometheus.Metric) {
	for name, st := range c.f.Statuses() {
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, st.LagSeconds, name)
	}
}

// sendChunk is how much of a file goes out under one write deadline.
const sendChunk = 1 << 20

// sendFile sends the first size bytes of f, sendChunk bytes at a time,
// renewing the connection's write deadline (timeout, 0: none) before
// each: a segment file may take longer than --write-timeout to send, so
// only a follower that stops reading is cut off. Each chunk goes through
// w's ReadFrom as an *io.LimitedReader of f: on a plain TCP connection
// net/http hands it to sendfile when f is backed by an *os.File (it is
// a syscall.Conn), so the file never passes through user space; TLS, or
// a file without a descriptor, is copied through a buffer.
func sendFile(w http.ResponseWriter, f io.Reader, size int64, timeout time.Duration) (int64, error) {
	rc := http.NewResponseController(w)
	var sent int64
	for sent < size {
		if timeout > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(timeout))
		}
		n, err := io.Copy(w, io.LimitReader(f, min(sendChunk, size-sent)))
		sent += n
		if err != nil {
			return sent, fmt.Errorf("send file at byte %d: %w", sent, err)
		}
		if n == 0 {
			return sent, fmt.Errorf("send file: %w at byte %d of %d", io.ErrUnexpectedEOF, sent, size)
		}
	}
	return sent, nil
}
