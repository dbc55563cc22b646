package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/server"
	"github.com/summadev/summa/internal/corpus"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

// testSchema covers every field type of the contract.
const testSchema = `{"fields":[
 {"name":"id","type":"keyword","primary":true},
 {"name":"title","type":"text"},
 {"name":"body","type":"text","reorder":true},
 {"name":"year","type":"u64"},
 {"name":"tags","type":"keyword","multi":true},
 {"name":"emb","type":"dense_vector","dims":4},
 {"name":"terms","type":"sparse_vector"}
]}`

// env is a real registry on a temporary directory behind an httptest
// server, and a client of it.
type env struct {
	t   *testing.T
	dir string
	r   *registry.Registry
	srv *server.Server
	ts  *httptest.Server
	c   *client.Client
	ctx context.Context
}

// newEnv starts a server with the given limits.
func newEnv(t *testing.T, limits server.Limits) *env {
	t.Helper()
	return newEnvWith(t, limits, index.Options{IndexingWorkers: 2})
}

// newEnvWith starts a server with the given limits and index options.
func newEnvWith(t *testing.T, limits server.Limits, opts index.Options) *env {
	t.Helper()
	dir := t.TempDir()
	log := testLogger(t)
	r, err := registry.Open(vfs.Default, dir, registry.Options{Logger: log, Index: opts})
	if err != nil {
		t.Fatalf("open registry: %v", err)
	}
	srv := server.New(r, server.Options{Logger: log, Limits: limits})
	ts := httptest.NewServer(srv)
	e := &env{t: t, dir: dir, r: r, srv: srv, ts: ts, c: client.New(ts.URL, ts.Client()), ctx: context.Background()}
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("close registry: %v", err)
		}
	})
	return e
}

// testLogger logs through t at V(1) only when -v is given.
func testLogger(t *testing.T) logr.Logger {
	if !testing.Verbose() {
		return logr.Discard()
	}
	return testr.NewWithOptions(t, testr.Options{Verbosity: 1})
}

// create creates an index with testSchema.
func (e *env) create(name string) {
	e.t.Helper()
	created, err := e.c.CreateIndex(e.ctx, name, json.RawMessage(testSchema))
	if err != nil || !created {
		e.t.Fatalf("create %s: created=%v err=%v", name, created, err)
	}
}

// paragraphDocs returns n documents made of Opticks paragraphs.
func paragraphDocs(t *testing.T, n int) []any {
	t.Helper()
	ps := corpustest.Paragraphs(t)
	if n > len(ps) {
		n = len(ps)
	}
	docs := make([]any, n)
	for i := range n {
		docs[i] = map[string]any{
			"id": fmt.Sprintf("p%04d", i), "title": corpus.Title(ps[i]), "body": ps[i],
			"year": 1704 + i%3, "tags": []string{"opticks", fmt.Sprintf("book%d", 1+i%3)},
			"emb":   []float32{float32(i % 7), 1, float32(i % 3), 0.5},
			"terms": map[string]float32{fmt.Sprintf("t%d", i%5): 1},
		}
	}
	return docs
}

// mustAdd ingests docs.
func (e *env) mustAdd(name string, docs ...any) {
	e.t.Helper()
	n, err := e.c.AddDocuments(e.ctx, name, docs...)
	if err != nil || n != len(docs) {
		e.t.Fatalf("add %d documents to %s: accepted %d, %v", len(docs), name, n, err)
	}
}

// mustCommit commits.
func (e *env) mustCommit(name string) *client.CommitResult {
	e.t.Helper()
	res, err := e.c.Commit(e.ctx, name)
	if err != nil {
		e.t.Fatalf("commit %s: %v", name, err)
	}
	return res
}

// status returns an index's STATUS.
func (e *env) status(name string) *client.IndexStatus {
	e.t.Helper()
	st, err := e.c.GetIndex(e.ctx, name)
	if err != nil {
		e.t.Fatalf("status %s: %v", name, err)
	}
	return st
}

// hits runs a text query and returns the total.
func (e *env) hits(name, q string) int {
	e.t.Helper()
	res, err := e.c.Search(e.ctx, name, client.SearchRequest{Query: q, Limit: 100})
	if err != nil {
		e.t.Fatalf("search %s %q: %v", name, q, err)
	}
	return res.TotalHits
}

// wantAPIError checks an error's status and code.
func wantAPIError(t *testing.T, err error, status int, code string) *client.APIError {
	t.Helper()
	ae, ok := err.(*client.APIError)
	if !ok {
		t.Fatalf("want %d %s, got %v (%T)", status, code, err, err)
	}
	if ae.StatusCode != status || ae.Code != code {
		t.Fatalf("want %d %s, got %d %s: %s", status, code, ae.StatusCode, ae.Code, ae.Message)
	}
	if status == 503 && ae.RetryAfter <= 0 {
		t.Fatalf("503 %s without Retry-After", code)
	}
	return ae
}
