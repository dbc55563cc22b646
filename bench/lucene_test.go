package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/summadev/summa/engine/analysis"
)

// requireLucene is the variable that turns the Lucene tests' skip (no
// Java or no liblucene8-java) into a failure.
const requireLucene = "SUMMA_BENCH_REQUIRE_LUCENE"

// luceneDriver builds the Java driver, skipping the test where Java or
// Lucene is absent unless SUMMA_BENCH_REQUIRE_LUCENE=1.
func luceneDriver(t *testing.T) *LuceneDriver {
	t.Helper()
	if why := LuceneAvailable(); why != "" {
		if os.Getenv(requireLucene) == "1" {
			t.Fatalf("lucene: %s (%s=1 requires it)", why, requireLucene)
		}
		t.Skipf("lucene: %s; install %s to run this test (set %s=1 to fail instead of skipping)", why, strings.Join(LucenePackages, " "), requireLucene)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	d, err := BuildLuceneDriver(filepath.Join(root, "bin"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLuceneAgreesWithOurs indexes the same documents (a corpus sample
// plus edge cases: a phrase that would span title and body, a term past
// the byte limit, non-ASCII letters, an upsert) into ours and Lucene and
// checks that every query's totalHits agrees in TOP_10_COUNT and COUNT,
// that TOP_10's is a lower bound of at least min(exact, 1000), and that
// the token streams read back from Lucene's postings hash to what our
// analysis produces.
func TestLuceneAgreesWithOurs(t *testing.T) {
	d := luceneDriver(t)
	c, err := PrepareCorpus(CorpusOptions{PrepareOptions: PrepareOptions{MaxDocs: 200, HeldOut: 40, NoInstall: true}})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("z", analysis.MaxTermBytes+1)
	docs := append([]Doc{
		{ID: "edge#1", Title: "alpha beta", Body: "gamma delta " + long + " epsilon"},
		{ID: "edge#2", Title: "Straße ÅNGSTRÖM", Body: "東京 tokyo pci_register_driver() x86-64"},
		{ID: "edge#3", Title: "beta", Body: "beta gamma alpha"},
	}, c.Docs...)
	qs := append(QuerySet(c), HeadingQueries(c)...)
	qs = append(qs,
		Query{Name: `edge: "beta gamma"`, Kind: KindPhrase, Terms: []string{"beta", "gamma"}},
		Query{Name: "edge: +straße +東京", Kind: KindAnd, Terms: []string{"straße", "東京"}},
		Query{Name: "edge: ångström register", Kind: KindOr, Terms: []string{"ångström", "register"}},
	)
	raw := NDJSON(docs)
	ctx := context.Background()
	ours, err := NewOurs()
	if err != nil {
		t.Fatal(err)
	}
	l := NewLucene(d)
	l.WarmMax = time.Second
	defer l.Shutdown()
	engines := []Engine{ours, l}
	for _, e := range engines {
		if err := e.Create(filepath.Join(t.TempDir(), e.Name())); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := ingest(ctx, e, docs, raw, 70); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		// An upsert of an existing document must not add one.
		if _, _, _, err := ingest(ctx, e, docs[1:2], raw[1:2], 1); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
	}
	if err := l.ForceMerge(ctx); err != nil {
		t.Fatal(err)
	}
	if n := l.Segments(); n != 1 {
		t.Errorf("lucene: %d segments after ForceMerge, want 1", n)
	}
	if err := l.Warmup(qs[:3]); err != nil || l.WarmRounds() < 10 {
		t.Errorf("lucene warm-up: %d rounds (%v), want at least 10", l.WarmRounds(), err)
	}
	nonzero := 0
	for _, q := range qs {
		want, top, err := ours.SearchTop(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, ltop, err := l.SearchTop(ctx, q)
		if err != nil {
			t.Fatalf("lucene: %q: %v", q.Name, err)
		}
		if got != want || len(ltop) != len(top) {
			t.Errorf("%q: totalHits ours=%d (%d ids) lucene=%d (%d ids)", q.Name, want, len(top), got, len(ltop))
		}
		for _, m := range Modes {
			n, err := l.SearchMode(ctx, q, m)
			if err != nil {
				t.Fatalf("lucene %s: %q: %v", m, q.Name, err)
			}
			o, err := ours.SearchMode(ctx, q, m)
			if err != nil {
				t.Fatalf("ours %s: %q: %v", m, q.Name, err)
			}
			if m == ModeTop10 {
				if n < min(want, top10Threshold) || n > want || o < min(want, top10Threshold) || o > want {
					t.Errorf("%q top10: lucene %d, ours %d, exact %d", q.Name, n, o, want)
				}
			} else if n != want || o != want {
				t.Errorf("%q %s: lucene %d, ours %d, want %d", q.Name, m, n, o, want)
			}
		}
		if want > 0 {
			nonzero++
		}
	}
	if nonzero < len(qs)/3 {
		t.Errorf("only %d of %d queries match anything", nonzero, len(qs))
	}
	if n, _, err := l.SearchTop(ctx, qs[len(qs)-3]); err != nil || n != 1 {
		t.Errorf(`"beta gamma": %d hits (%v), want 1 (edge#3 only, not across edge#1's title and body)`, n, err)
	}
	h, n, err := l.TokenHash()
	if err != nil {
		t.Fatal(err)
	}
	if want := TokenStreamHash(docs); h != want || n != len(docs) {
		t.Errorf("token-stream hash: lucene %s over %d docs, ours %s over %d", h, n, want, len(docs))
	}
	for _, e := range engines {
		if err := e.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
