package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/internal/strictjson"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/schema"
)

// IndexStatus is the STATUS object of the contract. The wire types are
// defined once, in the client package, and shared here.
type IndexStatus = client.IndexStatus

// SegmentStatus is one live segment of a STATUS.
type SegmentStatus = client.SegmentStatus

// QuarantinedSegment is one quarantined segment of a STATUS.
type QuarantinedSegment = client.QuarantinedSegment

// Index states of a STATUS.
const (
	// StateOpen: the index serves.
	StateOpen = client.StateOpen
	// StateDeleting: the ordered deletion is running.
	StateDeleting = client.StateDeleting
)

// toIndexStatus converts a registry status to the contract's STATUS.
func toIndexStatus(st registry.Status) IndexStatus {
	out := IndexStatus{
		Name: st.Name, State: StateOpen, Generation: st.Generation, Documents: st.Documents,
		Segments: make([]SegmentStatus, 0, len(st.Segments)), Quarantined: make([]QuarantinedSegment, 0, len(st.Quarantined)),
		DurabilityDegraded: st.DurabilityDegraded, UncommittedDocuments: st.UncommittedDocuments,
		ActiveOperations: st.ActiveOperations,
	}
	if st.Deleting {
		out.State = StateDeleting
	}
	if h := st.HeldPublication; h != nil {
		held := toHeldPublication(*h)
		out.HeldPublication = &held
	}
	out.Storage = toStorageStatus(st.Storage)
	for _, s := range st.Segments {
		ss := SegmentStatus{ID: s.ID.String(), Documents: s.Documents,
			DeletedDocuments: s.DeletedDocuments, SizeBytes: s.SizeBytes}
		for _, v := range s.Vectors {
			ss.Vectors = append(ss.Vectors, client.VectorRuns{Field: v.Field, Runs: v.Runs, Vectors: v.Vectors, Fragmented: v.Fragmented})
		}
		out.Segments = append(out.Segments, ss)
	}
	for _, q := range st.Quarantined {
		out.Quarantined = append(out.Quarantined, QuarantinedSegment{Segment: q.Segment.String(), Reason: q.Reason})
	}
	return out
}

// indexName returns the {index} path value, refusing names that are not
// DNS-1123 subdomains.
func indexName(r *http.Request) (string, error) {
	name := r.PathValue("index")
	if !registry.ValidIndexName(name) {
		return "", newError(http.StatusBadRequest, CodeInvalidIndexName,
			"invalid index name %q: lowercase letters, digits, '-' and '.', at most 253 characters, "+
				"each dot-separated part starting and ending with a letter or digit", clipString(name, 80))
	}
	return name, nil
}

// acquire validates the {index} name and issues a handle; the caller
// releases it.
func (s *Server) acquire(r *http.Request) (*registry.Handle, error) {
	name, err := indexName(r)
	if err != nil {
		return nil, err
	}
	h, err := s.r.Acquire(name)
	if err != nil {
		return nil, fmt.Errorf("index %q: %w", name, err)
	}
	return h, nil
}

// createIndex creates an index: 201 when created, 200 when it exists with
// the same schema, 409 IndexExists with another one. It answers the STATUS.
func (s *Server) createIndex(w http.ResponseWriter, r *http.Request) error {
	name, err := indexName(r)
	if err != nil {
		return err
	}
	sch, err := s.readSchema(w, r)
	if err != nil {
		return err
	}
	created, err := s.r.Create(r.Context(), name, sch)
	if err != nil {
		return fmt.Errorf("create index %q: %w", name, err)
	}
	h, err := s.r.Acquire(name)
	if err != nil {
		return fmt.Errorf("index %q: %w", name, err)
	}
	defer h.Release()
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, toIndexStatus(h.Status()))
	return nil
}

// readSchema reads and validates the schema of a creation body. The
// contract's form is {"schema":SCHEMA} (client.CreateIndexRequest); a bare
// SCHEMA ({"fields":[...]}) is accepted too, so the body is read as a map.
func (s *Server) readSchema(w http.ResponseWriter, r *http.Request) (*schema.Schema, error) {
	var raw map[string]json.RawMessage
	if err := decodeBody(w, r, s.limits.MaxSchemaBytes, false, &raw); err != nil {
		if strictjson.IsKind(err, strictjson.Duplicate) {
			// {"schema":A,"schema":B} must not silently create B.
			return nil, newError(http.StatusBadRequest, CodeInvalidSchema, "%v", errors.Unwrap(err))
		}
		return nil, err
	}
	body, hasSchema := raw["schema"]
	_, hasFields := raw["fields"]
	switch {
	case hasSchema && len(raw) == 1:
	case !hasSchema && hasFields:
		body, _ = json.Marshal(raw)
	case hasSchema:
		return nil, newError(http.StatusBadRequest, CodeBadRequest, "the body has members other than \"schema\"")
	default:
		return nil, newError(http.StatusBadRequest, CodeInvalidSchema, "the body needs a \"schema\" object")
	}
	if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '{' {
		return nil, newError(http.StatusBadRequest, CodeInvalidSchema, "the schema must be a JSON object {\"fields\":[...]}")
	}
	sch, err := schema.Parse(body)
	if err != nil {
		return nil, newError(http.StatusBadRequest, CodeInvalidSchema, "%v", err)
	}
	return sch, nil
}

// getIndex answers one STATUS, also while the index is being deleted.
// With ?wait=SECONDS and ?waitGeneration=G and/or ?waitQuarantined=N it
// is a long poll: the answer waits until the index no longer has that
// generation or that many quarantined segments (statuswait.go).
func (s *Server) getIndex(w http.ResponseWriter, r *http.Request) error {
	name, err := indexName(r)
	if err != nil {
		return err
	}
	sw, err := parseStatusWait(r)
	if err != nil {
		return err
	}
	s.waitForChange(r, name, sw)
	st, err := s.status(name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// status returns the STATUS of an index, open or being deleted.
func (s *Server) status(name string) (IndexStatus, error) {
	h, err := s.r.Acquire(name)
	if err == nil {
		defer h.Release()
		return s.withReplication(toIndexStatus(h.Status())), nil
	}
	if !errors.Is(err, registry.ErrIndexDeleting) && !errors.Is(err, registry.ErrShuttingDown) {
		return IndexStatus{}, fmt.Errorf("index %q: %w", name, err)
	}
	// A deleting index (or a closing registry) issues no handles; its
	// status is still listed until the deletion ends.
	for _, st := range s.r.Statuses() {
		if st.Name == name {
			return toIndexStatus(st), nil
		}
	}
	return IndexStatus{}, fmt.Errorf("index %q: %w", name, registry.ErrIndexNotFound)
}

// listIndexes answers {"indexes":[STATUS...]} sorted by name.
func (s *Server) listIndexes(w http.ResponseWriter, r *http.Request) error {
	out := client.IndexList{Indexes: []IndexStatus{}}
	for _, st := range s.r.Statuses() {
		out.Indexes = append(out.Indexes, s.withReplication(toIndexStatus(st)))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteIndex starts the ordered deletion and answers 202 once its marker
// is durable; the deletion goes on after the request.
func (s *Server) deleteIndex(w http.ResponseWriter, r *http.Request) error {
	name, err := indexName(r)
	if err != nil {
		return err
	}
	if err := s.r.Delete(r.Context(), name); err != nil {
		return fmt.Errorf("delete index %q: %w", name, err)
	}
	s.metrics.forgetIndex(name)
	s.log.Info("Index deletion started", "index", name)
	writeJSON(w, http.StatusAccepted, client.DeleteIndexResult{Name: name, State: StateDeleting})
	return nil
}

// clipString shortens s for messages.
func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
