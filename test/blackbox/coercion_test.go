package blackbox

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// vectorSchema has a dense and a sparse vector field.
var vectorSchema = json.RawMessage(`{"fields":[
 {"name":"id","type":"keyword","primary":true},
 {"name":"emb","type":"dense_vector","dims":4},
 {"name":"terms","type":"sparse_vector"}
]}`)

// TestNullInsideVectorsIsRefused sends null inside vectors, in documents
// and in queries, and nulls in place of request members, to the real
// binary: each is a 400 with the contract's code and a message naming the
// field, and nothing is indexed.
func TestNullInsideVectorsIsRefused(t *testing.T) {
	needBinary(t)
	s := startServer(t, t.TempDir())
	s.CreateIndex("vec", vectorSchema)
	const docs, search = "/v1/indexes/vec/documents", "/v1/indexes/vec/search"
	for _, c := range []struct {
		path, body, code, names string
	}{
		{docs, `{"id":"a","emb":[null,0,0,0]}` + "\n", "InvalidDocument", "emb"},
		{docs, `{"id":"ok","emb":[1,0,0,0]}` + "\n" + `{"id":"b","emb":[1,0,0,null]}` + "\n", "InvalidDocument", "emb"},
		{docs, `{"id":"c","terms":{"a":null}}` + "\n", "InvalidDocument", "terms"},
		{docs, `{"id":"d","terms":{"a":1,"a":2}}` + "\n", "InvalidDocument", "terms"},
		{search, `{"query":{"dense":{"field":"emb","vector":[null,0,0,0]}}}`, "InvalidQuery", "emb"},
		{search, `{"query":{"sparse":{"field":"terms","vector":{"a":null}}}}`, "InvalidQuery", "terms"},
		{search, `{"query":{"dense":{"field":"emb","vector":[1,0,0,0],"k":null}}}`, "InvalidQuery", "k"},
		{search, `{"query":"x","limit":null}`, "InvalidQuery", "limit"},
		{search, `{"query":"x","limit":5,"limit":500}`, "InvalidQuery", "limit"},
		{"/v1/indexes/vec/merge", `{"maxSegments":null}`, "BadRequest", "maxSegments"},
	} {
		r := s.MustDo("POST", c.path, c.body)
		var e ErrorBody
		json.Unmarshal(r.Body, &e)
		if r.Status != http.StatusBadRequest || e.Error.Code != c.code || !strings.Contains(e.Error.Message, c.names) {
			t.Errorf("POST %s %s: %s; want 400 %s naming %q", c.path, c.body, r, c.code, c.names)
		}
	}
	s.Commit("vec")
	if st := s.Status("vec"); st.Documents != 0 || st.UncommittedDocuments != 0 {
		t.Errorf("refused documents were indexed: %d documents, %d uncommitted", st.Documents, st.UncommittedDocuments)
	}
	s.Stop()
}
