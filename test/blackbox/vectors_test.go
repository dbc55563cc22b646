package blackbox

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/summadev/summa/client"
)

// vecDims is the dimension count of the binary vector index.
const vecDims = 128

const binaryVectorSchema = `{"fields":[
 {"name":"id","type":"keyword","primary":true},
 {"name":"body","type":"text"},
 {"name":"tag","type":"keyword"},
 {"name":"emb","type":"dense_vector","dims":128,"binary":true}
]}`

// signVector is a ±1 vector derived from text: each word adds a
// pseudo-random ±1 vector seeded by its FNV hash; the signs are kept, so
// a vector's dot product with itself (vecDims) is the largest possible.
func signVector(text string) []float32 {
	sum := make([]int, vecDims)
	for _, w := range strings.Fields(strings.ToLower(text)) {
		h := fnv.New64a()
		h.Write([]byte(w))
		x := h.Sum64() | 1
		for i := range sum {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			sum[i] += int(x&2) - 1
		}
	}
	v := make([]float32, vecDims)
	for i, s := range sum {
		v[i] = 1
		if s < 0 || (s == 0 && i%2 == 1) {
			v[i] = -1
		}
	}
	return v
}

type vecDoc struct {
	ID   string    `json:"id"`
	Body string    `json:"body"`
	Tag  string    `json:"tag"`
	Emb  []float32 `json:"emb"`
}

// denseHits runs a dense query and returns "id score" of the hits.
func denseHits(t *testing.T, s *Server, vec []float32, extra map[string]any) []SearchHit {
	t.Helper()
	q := map[string]any{"field": "emb", "vector": vec, "k": 10}
	for k, v := range extra {
		q[k] = v
	}
	var out SearchResult
	s.Expect(http.StatusOK, "POST", "/v1/indexes/vec/search", map[string]any{"query": map[string]any{"dense": q}, "limit": 10}, &out)
	return out.Hits
}

// vectorRecall is the mean share of the IVF top-10 (default nprobe)
// scoring at least the exact 10th score, over the query vectors.
func vectorRecall(t *testing.T, s *Server, queries [][]float32) float64 {
	var hit, total int
	for _, q := range queries {
		exact := denseHits(t, s, q, map[string]any{"exact": true})
		kth := exact[len(exact)-1].Score
		for _, h := range denseHits(t, s, q, nil) {
			total++
			if h.Score >= kth-1e-9 {
				hit++
			}
		}
	}
	return float64(hit) / float64(total)
}

// foundByExact requires every document to be among the exact top-10 of
// its own vector (or tied with the 10th: identical vectors).
func foundByExact(t *testing.T, s *Server, docs []vecDoc, label string) {
	t.Helper()
	for _, d := range docs {
		hits := denseHits(t, s, d.Emb, map[string]any{"exact": true})
		found := false
		for _, h := range hits {
			hd, err := hitDoc(h)
			found = found || (err == nil && hd.ID == d.ID)
		}
		if !found && (len(hits) < 10 || hits[9].Score < vecDims) {
			t.Fatalf("%s: committed document %s not found by an exact query on its own vector", label, d.ID)
		}
	}
}

func vecRuns(st client.IndexStatus) (runs, fragmented int) {
	for _, seg := range st.Segments {
		for _, v := range seg.Vectors {
			runs += v.Runs
			if v.Fragmented {
				fragmented++
			}
		}
	}
	return runs, fragmented
}

// TestVectorMergeCoalesceKill9: create a binary vector index, ingest in
// several commits, merge (the runs are concatenated: fragmentation debt),
// then restart with background maintenance, which coalesces the runs, and
// kill -9 the server at random moments of that coalescing, restarting each
// time. After every restart every committed document is found by an exact
// query and the recall of the default IVF search is what it was; in the
// end maintenance has coalesced the runs. The first kill follows the first
// sight of the output, so that a fast coalescing is cut too.
func TestVectorMergeCoalesceKill9(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	s := startServer(t, dir, "--optimizer-threads=0")
	s.CreateIndex("vec", json.RawMessage(binaryVectorSchema))
	const perCommit, commits = 4000, 4
	var all []vecDoc
	for c := 0; c < commits; c++ {
		var batch []vecDoc
		for i := c * perCommit; i < (c+1)*perCommit; i++ {
			body := fmt.Sprintf("%s (copy %d)", ps[i%len(ps)], i/len(ps))
			batch = append(batch, vecDoc{ID: fmt.Sprintf("v%06d", i), Body: body, Tag: "everydoc", Emb: signVector(body)})
		}
		for k := 0; k < len(batch); k += 1000 {
			var buf strings.Builder
			enc := json.NewEncoder(&buf)
			for _, d := range batch[k:min(k+1000, len(batch))] {
				enc.Encode(d)
			}
			s.Expect(http.StatusOK, "POST", "/v1/indexes/vec/documents", []byte(buf.String()), nil)
		}
		s.Commit("vec")
		all = append(all, batch...)
	}
	s.Expect(http.StatusOK, "POST", "/v1/indexes/vec/merge", map[string]int{"maxSegments": 1}, nil)
	if runs, frag := vecRuns(s.Status("vec")); frag != 1 || runs < 2 {
		t.Fatalf("after the merge: %d runs, %d fragmented segments", runs, frag)
	}
	rng := rand.New(rand.NewPCG(13, 13))
	sample := func(n int) []vecDoc {
		out := make([]vecDoc, n)
		for i := range out {
			out[i] = all[rng.IntN(len(all))]
		}
		return out
	}
	var queries [][]float32
	for _, d := range sample(40) {
		queries = append(queries, signVector(d.Body+" light colours"))
	}
	fragRecall := vectorRecall(t, s, queries)
	foundByExact(t, s, sample(200), "before the kills")
	s.Kill()

	coalesced := false
	midCoalesce := 0
	for trial := 0; trial < 5 && !coalesced; trial++ {
		s = startServer(t, dir, "--optimizer-threads=1", "--optimizer-scan-interval=100ms")
		// Wait until the coalescing output is being written (files that
		// metadata.json does not name), then kill at a random moment of it.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if unpublishedFiles(t, dir) > 0 {
				break
			}
		}
		// The first kill comes as soon as the output is seen, so that one
		// kill surely cuts a coalescing however fast it runs; later ones
		// at a random moment (one may land after publication).
		if trial > 0 {
			time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		}
		s.Kill()
		if unpublishedFiles(t, dir) > 0 {
			midCoalesce++ // cut mid-coalescing: the next start sweeps the output
		}
		s = startServer(t, dir, "--optimizer-threads=0")
		if st := s.Status("vec"); st.Documents != uint64(len(all)) {
			t.Fatalf("trial %d: %d documents after the restart, %d committed", trial, st.Documents, len(all))
		}
		foundByExact(t, s, sample(100), fmt.Sprintf("trial %d", trial))
		runs, frag := vecRuns(s.Status("vec"))
		r := vectorRecall(t, s, queries)
		if frag == 0 && runs == 1 {
			coalesced = true
			if r < 0.9 {
				t.Fatalf("trial %d: recall %.3f after coalescing", trial, r)
			}
			t.Logf("trial %d: coalesced; recall %.3f (fragmented: %.3f)", trial, r, fragRecall)
		} else if r != fragRecall {
			t.Fatalf("trial %d: recall %.3f on the same fragmented runs, was %.3f", trial, r, fragRecall)
		}
		s.Kill()
	}
	t.Logf("kills that cut a coalescing output: %d", midCoalesce)
	if midCoalesce == 0 {
		t.Fatal("no kill landed in the middle of a coalescing")
	}
	if !coalesced {
		s = startServer(t, dir, "--optimizer-threads=1", "--optimizer-scan-interval=100ms")
		deadline := time.Now().Add(60 * time.Second)
		for {
			if runs, frag := vecRuns(s.Status("vec")); runs == 1 && frag == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("maintenance never coalesced the runs")
			}
			time.Sleep(100 * time.Millisecond)
		}
		foundByExact(t, s, all[:300], "after coalescing")
	}
}

// unpublishedFiles counts seg_ files of the index directory that
// metadata.json does not name (as a segment or a deletion mask).
func unpublishedFiles(t *testing.T, dir string) int {
	var idxDir string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "metadata.json" {
			idxDir = filepath.Dir(p)
		}
		return nil
	})
	if idxDir == "" {
		return 0
	}
	raw, err := os.ReadFile(filepath.Join(idxDir, "metadata.json"))
	if err != nil {
		return 0
	}
	var meta struct {
		Segments []struct {
			ID      string `json:"id"`
			Deletes *struct {
				ID string `json:"id"`
			} `json:"deletes"`
		} `json:"segments"`
	}
	if json.Unmarshal(raw, &meta) != nil {
		return 0
	}
	live := map[string]bool{}
	for _, s := range meta.Segments {
		live[s.ID] = true
		if s.Deletes != nil {
			live[s.Deletes.ID] = true
		}
	}
	entries, _ := os.ReadDir(idxDir)
	n := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "seg_") {
			continue
		}
		if id := strings.TrimPrefix(strings.SplitN(name, ".", 2)[0], "seg_"); !live[id] {
			n++
		}
	}
	return n
}
