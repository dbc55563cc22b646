package blackbox

import (
	"encoding/json"
	"net/http"
	"sort"
	"testing"
)

// checkSparse asks the default (Seismic) sparse search and the exact scan
// for a sample of the live documents by their own dimension: each must
// come back first, so the seis and vec files a crash left behind serve
// every surviving segment.
func checkSparse(t *testing.T, v *Server, name string, live state, trial int) {
	t.Helper()
	ids := make([]string, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	step := max(1, len(ids)/20)
	for i := 0; i < len(ids); i += step {
		for _, exact := range []bool{false, true} {
			q := map[string]any{"sparse": map[string]any{"field": "sp", "vector": map[string]float64{ids[i]: 1}, "k": 3, "exact": exact}}
			var out SearchResult
			r := v.MustDo("POST", "/v1/indexes/"+name+"/search", map[string]any{"query": q, "limit": 3})
			if r.Status != http.StatusOK || json.Unmarshal(r.Body, &out) != nil || len(out.Hits) == 0 {
				t.Errorf("trial %d: %s: sparse query (exact %v) for %s: %s", trial, name, exact, ids[i], r)
				continue
			}
			d, err := hitDoc(out.Hits[0])
			if err != nil || d.ID != ids[i] {
				t.Errorf("trial %d: %s: sparse query (exact %v) for %s returned %q first (%v)", trial, name, exact, ids[i], d.ID, err)
			}
		}
	}
}
