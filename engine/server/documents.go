package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/schema"
)

// ndjsonBufferBytes is the read buffer of NDJSON ingestion.
const ndjsonBufferBytes = 64 << 10

// addDocuments ingests an NDJSON body, all or nothing: every line is read
// and validated first, then the documents are admitted in one call.
// Blank lines are skipped. The first invalid line answers 400
// InvalidDocument naming the line and the field; an oversized line or body
// answers 413; nothing of a refused request is indexed.
func (s *Server) addDocuments(w http.ResponseWriter, r *http.Request) error {
	h, err := s.acquire(r)
	if err != nil {
		return err
	}
	name := h.Name()
	idx, err := h.Index()
	// The handle is not held while the body arrives: a slow client must
	// not hold up a deletion (which drains issued handles).
	h.Release()
	if err != nil {
		return fmt.Errorf("index %q: %w", name, err)
	}
	if s.r.Draining() {
		return fmt.Errorf("index %q: %w", name, registry.ErrDraining)
	}
	sch := idx.Schema()
	if err := limitBody(w, r, s.limits.MaxRequestBytes); err != nil {
		return err
	}
	docs, err := s.readNDJSON(r.Body, sch)
	if err != nil {
		return err
	}
	if h, err = s.r.Acquire(name); err != nil {
		return fmt.Errorf("index %q: %w", name, err)
	}
	defer h.Release()
	if idx2, err := h.Index(); err != nil {
		return fmt.Errorf("index %q: %w", name, err)
	} else if idx2 != idx {
		return newError(http.StatusConflict, CodeIndexDeleting,
			"index %q was deleted and created again while the request was read; send it again", name)
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.limits.BackpressureWait)
	defer cancel()
	if err := h.Add(ctx, docs); err != nil {
		return fmt.Errorf("index %q: add %d documents: %w", name, len(docs), err)
	}
	s.metrics.DocumentsAccepted.WithLabelValues(name).Add(float64(len(docs)))
	writeJSON(w, http.StatusOK, client.AddDocumentsResult{Accepted: len(docs)})
	return nil
}

// readNDJSON reads and validates every line of body. It streams: no line
// longer than MaxDocumentBytes is ever buffered.
func (s *Server) readNDJSON(body io.Reader, sch *schema.Schema) ([]*schema.Document, error) {
	br := bufio.NewReaderSize(body, ndjsonBufferBytes)
	var docs []*schema.Document
	var buf []byte
	for n := 1; ; n++ {
		line, err := readLine(br, s.limits.MaxDocumentBytes, buf)
		buf = line
		if errors.Is(err, errLineTooLong) {
			return nil, lineTooLong(n, s.limits.MaxDocumentBytes)
		}
		if err != nil && err != io.EOF {
			return nil, bodyReadError(err)
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			doc, perr := sch.ParseDocument(trimmed)
			if perr != nil {
				return nil, lineError(n, perr)
			}
			docs = append(docs, doc)
		}
		if err == io.EOF {
			return docs, nil
		}
	}
}

// deleteDocument deletes one document by primary key at the next commit
// and answers {"deleted":0|1}. A schema without a primary key is 400.
func (s *Server) deleteDocument(w http.ResponseWriter, r *http.Request) error {
	h, err := s.acquire(r)
	if err != nil {
		return err
	}
	defer h.Release()
	pk := r.PathValue("primaryKey")
	if pk == "" {
		return newError(http.StatusBadRequest, CodeBadRequest, "empty primary key")
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.limits.BackpressureWait)
	defer cancel()
	existed, err := h.Delete(ctx, pk)
	if err != nil {
		return fmt.Errorf("index %q: delete document %q: %w", h.Name(), clipString(pk, 80), err)
	}
	deleted := 0
	if existed {
		deleted = 1
	}
	s.metrics.DocumentsDeleted.WithLabelValues(h.Name()).Inc()
	writeJSON(w, http.StatusOK, client.DeleteDocumentResult{Deleted: deleted})
	return nil
}

// commit flushes and publishes one generation through the registry's
// owned commit task. A flush timeout answers 503 CommitFlushTimeout
// (retryable): the commit goes on and a retried request joins it; a client
// that goes away stops waiting, not the commit.
func (s *Server) commit(w http.ResponseWriter, r *http.Request) error {
	h, err := s.acquire(r)
	if err != nil {
		return err
	}
	defer h.Release()
	start := time.Now()
	res, err := h.Commit(r.Context())
	s.metrics.observeCommit(h.Name(), err, time.Since(start))
	if err != nil {
		return fmt.Errorf("index %q: commit: %w", h.Name(), err)
	}
	writeJSON(w, http.StatusOK, client.CommitResult{Generation: res.Generation, Documents: res.Documents,
		DurabilityDegraded: res.DurabilityDegraded})
	return nil
}
