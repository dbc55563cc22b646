package blackbox

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"testing"
)

// queryResult is a search answer reduced to what must survive a restart.
type queryResult struct {
	total int
	hits  []string // "pk score" sorted by pk
}

func runQueries(t *testing.T, s *Server, index string, queries []string) map[string]queryResult {
	t.Helper()
	out := map[string]queryResult{}
	for _, q := range queries {
		res := s.Search(index, q, maxWindow)
		if len(res.Hits) != min(res.TotalHits, maxWindow) {
			t.Fatalf("query %q: totalHits %d but %d hits", q, res.TotalHits, len(res.Hits))
		}
		qr := queryResult{total: res.TotalHits}
		prev := math.Inf(1)
		for i, h := range res.Hits {
			d, err := hitDoc(h)
			if err != nil {
				t.Fatalf("query %q hit %d: %v", q, i, err)
			}
			if h.Score > prev+1e-9 {
				t.Fatalf("query %q: hits not ordered by score: hit %d has %v after %v", q, i, h.Score, prev)
			}
			prev = h.Score
			qr.hits = append(qr.hits, fmt.Sprintf("%s %.6g", d.ID, h.Score))
		}
		sort.Strings(qr.hits)
		out[q] = qr
	}
	return out
}

// TestIngestCommitSearchRestart ingests real text, commits, checks search
// answers against the model, restarts (SIGTERM, then SIGKILL) and requires
// the same answers.
func TestIngestCommitSearchRestart(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	s := startServer(t, dir)

	const index = "opticks"
	s.CreateIndex(index, testSchema)
	// The same schema again is a no-op.
	s.Expect(http.StatusOK, "PUT", "/v1/indexes/"+index, map[string]any{"schema": testSchema}, nil)

	// Every paragraph of Opticks, cycled under distinct keys.
	n := 1500
	if longMode() {
		n = 6000
	}
	docs := makeDocs(ps, "p", 0, n)
	for i := 0; i < n; i += 250 {
		s.Ingest(index, docs[i:min(i+250, n)])
	}
	// Nothing is visible before the commit.
	if res := s.Search(index, allQuery, 10); res.TotalHits != 0 {
		t.Fatalf("before commit: %d documents visible, want 0", res.TotalHits)
	}
	cr := s.Commit(index)
	if cr.Documents != int64(n) {
		t.Fatalf("commit answered documents=%d, want %d", cr.Documents, n)
	}
	st := s.Status(index)
	if st.Documents != uint64(n) || st.Name != index || st.State != "open" {
		t.Fatalf("status after commit: name=%q state=%q documents=%d, want %q open %d", st.Name, st.State, st.Documents, index, n)
	}

	// Expected totals from the model for single-term queries.
	want := map[string]bool{}
	for _, d := range docs {
		for _, tok := range tokens(d.Body) {
			want[tok] = true
		}
	}
	countBody := func(term string) int {
		c := 0
		for _, d := range docs {
			for _, tok := range tokens(d.Body) {
				if tok == term {
					c++
					break
				}
			}
		}
		return c
	}
	terms := []string{"prism", "refraction", "colours", "rays", "spectrum", "newton"}
	for _, term := range terms {
		res := s.Search(index, "body:"+term, maxWindow)
		if w := countBody(term); res.TotalHits != w {
			t.Errorf("body:%s: totalHits %d, want %d (documents whose body has the term)", term, res.TotalHits, w)
		}
		for _, h := range res.Hits {
			d, _ := hitDoc(h)
			if !strings.Contains(" "+strings.Join(tokens(d.Body), " ")+" ", " "+term+" ") {
				t.Errorf("body:%s returned %s whose body lacks the term", term, d.ID)
				break
			}
		}
	}
	// A primary-key lookup finds exactly that document.
	for _, i := range []int{0, 7, n / 2, n - 1} {
		res := s.Search(index, "+id:"+pk("p", i), 10)
		if res.TotalHits != 1 || len(res.Hits) != 1 {
			t.Fatalf("+id:%s: %d hits, want 1", pk("p", i), res.TotalHits)
		}
		if d, _ := hitDoc(res.Hits[0]); d.ID != pk("p", i) || d.N != uint64(i) {
			t.Fatalf("+id:%s returned %+v", pk("p", i), d)
		}
	}
	if got := s.LiveDocs(index); len(got) != n {
		t.Fatalf("live documents %d, want %d", len(got), n)
	}

	queries := []string{
		allQuery,
		"prism",
		"light colours",
		"+refraction -reflexion",
		`"the same manner"`,
		"body:spectrum title:experiment",
		"+rays +glass",
	}
	before := runQueries(t, s, index, queries)
	for _, q := range queries {
		if before[q].total == 0 {
			t.Errorf("query %q found nothing; the corpus has matches", q)
		}
	}

	compare := func(how string, after map[string]queryResult) {
		t.Helper()
		for _, q := range queries {
			b, a := before[q], after[q]
			if a.total != b.total {
				t.Errorf("after %s: query %q totalHits %d, before %d", how, q, a.total, b.total)
				continue
			}
			if strings.Join(a.hits, "\n") != strings.Join(b.hits, "\n") {
				t.Errorf("after %s: query %q returns other hits or scores:\n%s", how, q, firstDiff(b.hits, a.hits))
			}
		}
	}

	s.Stop()
	s = startServer(t, dir)
	if st := s.Status(index); st.Documents != uint64(n) {
		t.Fatalf("after SIGTERM restart: documents %d, want %d", st.Documents, n)
	}
	compare("SIGTERM restart", runQueries(t, s, index, queries))

	s.Kill()
	s = startServer(t, dir)
	compare("SIGKILL restart", runQueries(t, s, index, queries))
	s.Stop()
}

func firstDiff(a, b []string) string {
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("  first difference at %d: before %q, after %q", i, x, y)
		}
	}
	return "  (none)"
}
