package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/server"
)

// TestRoundTrip creates an index, ingests Opticks, commits, searches,
// deletes and upserts documents, reads STATUS and deletes the index, all
// through the client package.
func TestRoundTrip(t *testing.T) {
	e := newEnv(t, server.Limits{})
	e.create("opticks")
	if created, err := e.c.CreateIndex(e.ctx, "opticks", json.RawMessage(testSchema)); err != nil || created {
		t.Fatalf("same schema again: created=%v err=%v, want a no-op", created, err)
	}
	_, err := e.c.CreateIndex(e.ctx, "opticks", json.RawMessage(`{"fields":[{"name":"id","type":"text"}]}`))
	wantAPIError(t, err, 409, client.CodeIndexExists)

	docs := paragraphDocs(t, 1000)
	e.mustAdd("opticks", docs...)
	st := e.status("opticks")
	if st.UncommittedDocuments != len(docs) || st.Documents != 0 {
		t.Fatalf("before commit: %+v", st)
	}
	if n := e.hits("opticks", "light"); n != 0 {
		t.Fatalf("uncommitted documents are visible: %d hits", n)
	}
	res := e.mustCommit("opticks")
	if res.Documents != uint64(len(docs)) || res.Generation == 0 {
		t.Fatalf("commit: %+v", res)
	}
	light := e.hits("opticks", "light")
	if light == 0 || light >= len(docs) {
		t.Fatalf("light: %d hits of %d", light, len(docs))
	}
	if n := e.hits("opticks", `+prism +colours`); n == 0 || n > light*10 {
		t.Fatalf("+prism +colours: %d hits", n)
	}
	if n := e.hits("opticks", `"angle of incidence"`); n == 0 {
		t.Fatalf("phrase: no hit")
	}
	if n := e.hits("opticks", "id:p0007"); n != 1 {
		t.Fatalf("id:p0007: %d hits", n)
	}
	sr, err := e.c.Search(e.ctx, "opticks", client.SearchRequest{Query: "light", Limit: 3, Offset: 2})
	if err != nil || len(sr.Hits) != 3 || sr.TotalHits != light {
		t.Fatalf("page: %+v %v", sr, err)
	}
	var fields struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal(sr.Hits[0].Fields, &fields); err != nil || !strings.HasPrefix(fields.ID, "p") || fields.Title == "" {
		t.Fatalf("hit fields %s: %v", sr.Hits[0].Fields, err)
	}
	dense, err := e.c.Search(e.ctx, "opticks", client.SearchRequest{
		Query: client.VectorQuery{Dense: &client.DenseQuery{Field: "emb", Vector: []float32{1, 0, 0, 0}, K: 5}}})
	if err != nil || len(dense.Hits) != 5 {
		t.Fatalf("dense: %+v %v", dense, err)
	}
	sparse, err := e.c.Search(e.ctx, "opticks", client.SearchRequest{
		Query: client.VectorQuery{Sparse: &client.SparseQuery{Field: "terms", Vector: map[string]float32{"t1": 1}}}, Limit: 1000})
	if err != nil || sparse.TotalHits == 0 {
		t.Fatalf("sparse: %v %v", sparse, err)
	}

	// Delete, upsert and a primary key that needs escaping.
	if ok, err := e.c.DeleteDocument(e.ctx, "opticks", "p0000"); err != nil || !ok {
		t.Fatalf("delete p0000: %v %v", ok, err)
	}
	if ok, err := e.c.DeleteDocument(e.ctx, "opticks", "no-such-doc"); err != nil || ok {
		t.Fatalf("delete of a missing document: %v %v", ok, err)
	}
	e.mustAdd("opticks", map[string]any{"id": "p0001", "title": "Replaced", "body": "an upserted paragraph about zyxquux"},
		map[string]any{"id": "a/b c?d", "title": "slash", "body": "escaped key"})
	res = e.mustCommit("opticks")
	if res.Documents != uint64(len(docs)) {
		t.Fatalf("after delete+upsert+add: %d documents, want %d", res.Documents, len(docs))
	}
	if n := e.hits("opticks", "id:p0000"); n != 0 {
		t.Fatalf("deleted document still found")
	}
	if n := e.hits("opticks", "zyxquux"); n != 1 {
		t.Fatalf("upserted document: %d hits", n)
	}
	if ok, err := e.c.DeleteDocument(e.ctx, "opticks", "a/b c?d"); err != nil || !ok {
		t.Fatalf("delete escaped key: %v %v", ok, err)
	}
	e.mustCommit("opticks")

	// STATUS as the contract writes it.
	st = e.status("opticks")
	if st.Name != "opticks" || st.State != "open" || st.Documents != uint64(len(docs)-1) || len(st.Segments) == 0 ||
		st.UncommittedDocuments != 0 || st.Quarantined == nil {
		t.Fatalf("status: %+v", st)
	}
	checkRawStatus(t, e.ts.URL+"/v1/indexes/opticks")
	list, err := e.c.ListIndexes(e.ctx)
	if err != nil || len(list) != 1 || list[0].Name != "opticks" {
		t.Fatalf("list: %+v %v", list, err)
	}

	// Deletion: 202, then gone, directory included.
	if err := e.c.DeleteIndex(e.ctx, "opticks"); err != nil {
		t.Fatalf("delete index: %v", err)
	}
	if st, err := e.c.GetIndex(e.ctx, "opticks"); err == nil && st.State != "deleting" {
		t.Fatalf("status during deletion: %+v", st)
	}
	waitGone(t, e, "opticks")
	if _, err := os.Stat(filepath.Join(e.dir, "opticks")); !os.IsNotExist(err) {
		t.Fatalf("index directory left behind: %v", err)
	}
	_, err = e.c.Search(e.ctx, "opticks", client.SearchRequest{Query: "light"})
	wantAPIError(t, err, 404, client.CodeIndexNotFound)
	e.create("opticks")
	if st := e.status("opticks"); st.Documents != 0 {
		t.Fatalf("recreated index has %d documents", st.Documents)
	}
}

// checkRawStatus checks the STATUS JSON member by member.
func checkRawStatus(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "state", "generation", "documents", "segments", "quarantined", "durabilityDegraded", "uncommittedDocuments"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("STATUS lacks %q: %s", k, data)
		}
	}
	if string(m["quarantined"]) != "[]" {
		t.Fatalf("quarantined = %s, want []", m["quarantined"])
	}
	var segs []map[string]any
	if err := json.Unmarshal(m["segments"], &segs); err != nil || len(segs) == 0 {
		t.Fatalf("segments %s: %v", m["segments"], err)
	}
	if _, ok := segs[0]["id"].(string); !ok {
		t.Fatalf("segment id is not a string: %s", m["segments"])
	}
	for _, k := range []string{"documents", "deletedDocuments", "sizeBytes"} {
		if _, ok := segs[0][k].(float64); !ok {
			t.Fatalf("segment lacks %q: %s", k, m["segments"])
		}
	}
}

// waitGone waits until an index answers 404.
func waitGone(t *testing.T, e *env, name string) {
	t.Helper()
	if err := e.r.WaitDeleted(e.ctx, name); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := e.c.GetIndex(e.ctx, name)
		if client.IsCode(err, client.CodeIndexNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("index %s still there: %v", name, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
