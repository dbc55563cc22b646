package blackbox

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestCountOnlyAgreesWithSearch: "countOnly": true answers the exact
// totalHits a full search reports, with an empty hits array, over two
// segments with deleted documents, for terms, fields, must, must-not and
// phrase queries; a mistyped countOnly is InvalidQuery.
func TestCountOnlyAgreesWithSearch(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	s := startServer(t, t.TempDir(), "--optimizer-threads", "0")
	const index = "counted"
	s.CreateIndex(index, testSchema)
	s.Ingest(index, makeDocs(ps, "c", 0, 300))
	s.Commit(index)
	s.Ingest(index, makeDocs(ps, "c", 300, 500))
	s.Commit(index)
	for i := 0; i < 500; i += 7 {
		s.Expect(http.StatusOK, "DELETE", "/v1/indexes/"+index+"/documents/"+pk("c", i), nil, nil)
	}
	s.Commit(index)
	queries := []string{allQuery, "light", "body:light", "light colours", "+light +red", "+light -red", `"of the"`, "+light colours -red", "nonexistentword"}
	for _, q := range queries {
		full := s.Search(index, q, maxWindow)
		var out struct {
			TotalHits int               `json:"totalHits"`
			Hits      []json.RawMessage `json:"hits"`
		}
		s.Expect(http.StatusOK, "POST", "/v1/indexes/"+index+"/search", map[string]any{"query": q, "countOnly": true}, &out)
		if out.TotalHits != full.TotalHits || out.Hits == nil || len(out.Hits) != 0 {
			t.Errorf("%s: countOnly answered %d with %d hits (nil %v), the search %d", q, out.TotalHits, len(out.Hits), out.Hits == nil, full.TotalHits)
		}
	}
	if full := s.Search(index, allQuery, maxWindow); full.TotalHits != 500-72 {
		t.Errorf("%s: %d live documents, want %d", allQuery, full.TotalHits, 500-72)
	}
	r := s.MustDo("POST", "/v1/indexes/"+index+"/search", map[string]any{"query": "light", "countOnly": "yes"})
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "InvalidQuery") {
		t.Errorf("countOnly \"yes\": %s", r)
	}
}
