package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/server"
	"github.com/summadev/summa/internal/corpus"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

const schema = `{"fields":[
 {"name":"id","type":"keyword","primary":true},
 {"name":"title","type":"text"},
 {"name":"body","type":"text"},
 {"name":"n","type":"u64"},
 {"name":"emb","type":"dense_vector","dims":3}
]}`

// newClient starts a real server on a temporary registry.
func newClient(t *testing.T) (*client.Client, *server.Server) {
	t.Helper()
	r, err := registry.Open(vfs.Default, t.TempDir(), registry.Options{Index: index.Options{IndexingWorkers: 2}})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(r, server.Options{})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return client.New(ts.URL+"/", ts.Client()), srv
}

type doc struct {
	ID    string    `json:"id"`
	Title string    `json:"title,omitempty"`
	Body  string    `json:"body,omitempty"`
	N     uint64    `json:"n"`
	Emb   []float32 `json:"emb,omitempty"`
}

// TestClientRoundTrip exercises every method against a real server.
func TestClientRoundTrip(t *testing.T) {
	c, _ := newClient(t)
	ctx := context.Background()
	if err := c.Healthz(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Readyz(ctx); err != nil {
		t.Fatal(err)
	}
	if created, err := c.CreateIndex(ctx, "books", json.RawMessage(schema)); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if created, err := c.CreateIndex(ctx, "books", json.RawMessage(schema)); err != nil || created {
		t.Fatalf("create again: %v %v", created, err)
	}
	ps := corpustest.Paragraphs(t)
	var docs []any
	for i, p := range ps[:60] {
		docs = append(docs, doc{ID: fmt.Sprintf("d%d", i), Title: corpus.Title(p), Body: p, N: uint64(i), Emb: []float32{float32(i), 1, 0}})
	}
	docs = append(docs, json.RawMessage(`{"id":"raw", "body":"raw message"}`), []byte(`{"id":"bytes","body":"byte slice"}`))
	if n, err := c.AddDocuments(ctx, "books", docs...); err != nil || n != len(docs) {
		t.Fatalf("add: %d %v", n, err)
	}
	if n, err := c.AddNDJSON(ctx, "books", strings.NewReader(`{"id":"nd1"}`+"\n"+`{"id":"nd2"}`+"\n")); err != nil || n != 2 {
		t.Fatalf("ndjson: %d %v", n, err)
	}
	res, err := c.Commit(ctx, "books")
	if err != nil || res.Documents != uint64(len(docs)+2) || res.Generation == 0 {
		t.Fatalf("commit: %+v %v", res, err)
	}
	sr, err := c.Search(ctx, "books", client.SearchRequest{Query: "light", Limit: 5})
	if err != nil || sr.TotalHits == 0 || len(sr.Hits) == 0 || sr.Hits[0].Score <= 0 {
		t.Fatalf("search: %+v %v", sr, err)
	}
	var got doc
	if err := json.Unmarshal(sr.Hits[0].Fields, &got); err != nil || got.ID == "" {
		t.Fatalf("fields %s: %v", sr.Hits[0].Fields, err)
	}
	sr, err = c.Search(ctx, "books", client.SearchRequest{Query: json.RawMessage(`"raw"`)})
	if err != nil || sr.TotalHits != 1 {
		t.Fatalf("raw query: %+v %v", sr, err)
	}
	sr, err = c.Search(ctx, "books", client.SearchRequest{Query: client.VectorQuery{Dense: &client.DenseQuery{Field: "emb", Vector: []float32{1, 0, 0}, K: 3}}})
	if err != nil || len(sr.Hits) != 3 {
		t.Fatalf("dense: %+v %v", sr, err)
	}
	if ok, err := c.DeleteDocument(ctx, "books", "d1"); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if ok, err := c.DeleteDocument(ctx, "books", "nope"); err != nil || ok {
		t.Fatalf("delete missing: %v %v", ok, err)
	}
	if _, err := c.Commit(ctx, "books"); err != nil {
		t.Fatal(err)
	}
	st, err := c.GetIndex(ctx, "books")
	if err != nil || st.Name != "books" || st.State != "open" || st.Documents != uint64(len(docs)+1) || len(st.Segments) == 0 || st.Segments[0].ID == "" {
		t.Fatalf("status: %+v %v", st, err)
	}
	list, err := c.ListIndexes(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if _, err := c.Merge(ctx, "books", client.MergeDownTo(1)); err != nil {
		t.Fatalf("merge: %v", err)
	}
	if _, err := c.Compact(ctx, "books"); err != nil {
		t.Fatalf("compact: %v", err)
	}
	// The test schema has no reorder field: a manual reorder is a bad request.
	if _, err := c.Reorder(ctx, "books"); !client.IsCode(err, client.CodeBadRequest) {
		t.Fatalf("reorder without reorder fields: %v", err)
	}
	lc, err := c.Lifecycle(ctx)
	if err != nil || lc.FlushDocumentsPerSecond <= 0 {
		t.Fatalf("lifecycle: %+v %v", lc, err)
	}
	m, err := c.Metrics(ctx)
	if err != nil || !strings.Contains(m, `summa_index_documents{index="books"}`) {
		t.Fatalf("metrics: %v\n%s", err, m)
	}
	if err := c.DeleteIndex(ctx, "books"); err != nil {
		t.Fatal(err)
	}
}

// TestClientErrors checks APIError: code, status, retryable, Retry-After,
// line and field, and IsCode through wrapping.
func TestClientErrors(t *testing.T) {
	c, srv := newClient(t)
	ctx := context.Background()
	_, err := c.GetIndex(ctx, "missing")
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Code != client.CodeIndexNotFound || ae.Retryable || ae.Message == "" {
		t.Fatalf("not found: %#v", err)
	}
	if !client.IsCode(fmt.Errorf("wrapped: %w", err), client.CodeIndexNotFound) || client.IsRetryable(err) {
		t.Fatalf("IsCode/IsRetryable through wrapping")
	}
	if !strings.Contains(err.Error(), "404 IndexNotFound") {
		t.Fatalf("Error() = %q", err)
	}
	if _, err := c.CreateIndex(ctx, "Bad_Name", json.RawMessage(schema)); !client.IsCode(err, client.CodeInvalidIndexName) {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := c.CreateIndex(ctx, "s", json.RawMessage(`{"fields":[]}`)); !client.IsCode(err, client.CodeInvalidSchema) {
		t.Fatalf("bad schema: %v", err)
	}
	if _, err := c.CreateIndex(ctx, "books", json.RawMessage(schema)); err != nil {
		t.Fatal(err)
	}
	_, err = c.AddDocuments(ctx, "books", doc{ID: "ok"}, map[string]any{"id": "bad", "n": "x"})
	if !errors.As(err, &ae) || ae.Code != client.CodeInvalidDocument || ae.Line != 2 || ae.Field != "n" {
		t.Fatalf("invalid document: %#v", err)
	}
	if _, err := c.AddDocuments(ctx, "books", json.RawMessage(`{not json`)); err == nil || errors.As(err, &ae) {
		t.Fatalf("local JSON check: %v", err)
	}
	if _, err := c.Search(ctx, "books", client.SearchRequest{Query: "light", Limit: -1}); !client.IsCode(err, client.CodeInvalidQuery) {
		t.Fatalf("limit -1: %v", err)
	}
	if _, err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = c.AddDocuments(ctx, "books", doc{ID: "late"})
	if !errors.As(err, &ae) || ae.StatusCode != 503 || ae.Code != client.CodeDraining || !ae.Retryable || ae.RetryAfter < time.Second {
		t.Fatalf("draining: %#v", err)
	}
	if err := c.Readyz(ctx); !client.IsCode(err, client.CodeNotReady) {
		t.Fatalf("readyz while draining: %v", err)
	}
	for {
		ds, err := c.DrainStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ds.Drained {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ds, err := c.Resume(ctx); err != nil || ds.Draining {
		t.Fatalf("resume: %+v %v", ds, err)
	}
	srv.SetShuttingDown()
	if _, err := c.Resume(ctx); !client.IsCode(err, client.CodeShuttingDown) {
		t.Fatalf("resume while shutting down: %v", err)
	}
}

// TestNonAPIErrorBody: an answer without the API's error body (a proxy's
// page) still becomes an *APIError, with its status and text.
func TestNonAPIErrorBody(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		http.Error(w, "upstream unavailable", http.StatusBadGateway)
	}))
	defer ts.Close()
	_, err := client.New(ts.URL, nil).GetIndex(context.Background(), "x")
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 502 || ae.Code != "" || ae.Message != "upstream unavailable" || ae.RetryAfter != 7*time.Second {
		t.Fatalf("%#v", err)
	}
}
