package bench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/summadev/summa/engine/analysis"
)

// xapianDriver builds the driver, skipping the test only where g++ or
// libxapian-dev is absent (CI installs both).
func xapianDriver(t *testing.T) string {
	t.Helper()
	if why := XapianAvailable(); why != "" {
		t.Skipf("xapian: %s", why)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := BuildXapianDriver(filepath.Join(root, "bin"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestXapianAgreesWithOurs indexes the same documents (a corpus sample
// plus edge cases: a phrase that would span title and body, a term past
// the byte limit, non-ASCII letters, an upsert) into ours and Xapian and
// checks that every query's totalHits agrees and that the token streams
// read back from Xapian's index hash to what our analysis produces.
func TestXapianAgreesWithOurs(t *testing.T) {
	bin := xapianDriver(t)
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
		Query{Name: `edge: "delta epsilon"`, Kind: KindPhrase, Terms: []string{"delta", "epsilon"}},
		Query{Name: "edge: +straße +東京", Kind: KindAnd, Terms: []string{"straße", "東京"}},
		Query{Name: "edge: ångström register", Kind: KindOr, Terms: []string{"ångström", "register"}},
	)
	raw := NDJSON(docs)
	ctx := context.Background()
	ours, err := NewOurs()
	if err != nil {
		t.Fatal(err)
	}
	x := NewXapian(bin)
	defer x.Shutdown()
	engines := []Engine{ours, x}
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
	nonzero := 0
	for _, q := range qs {
		var got [2]int
		for i, e := range engines {
			n, top, err := e.SearchTop(ctx, q)
			if err != nil {
				t.Fatalf("%s: %q: %v", e.Name(), q.Name, err)
			}
			if len(top) != min(n, 10) {
				t.Errorf("%s: %q: %d top ids for %d hits", e.Name(), q.Name, len(top), n)
			}
			got[i] = n
		}
		if got[0] != got[1] {
			t.Errorf("%q: totalHits ours=%d xapian=%d", q.Name, got[0], got[1])
		}
		if got[0] > 0 {
			nonzero++
		}
	}
	if nonzero < len(qs)/3 {
		t.Errorf("only %d of %d queries match anything", nonzero, len(qs))
	}
	if err := x.ForceMerge(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _, err := x.SearchTop(ctx, qs[len(qs)-4]); err != nil || n != 1 {
		t.Errorf(`"beta gamma" after merge: %d hits (%v), want 1 (edge#3 only, not across edge#1's title and body)`, n, err)
	}
	// replace_document keeps the upserted document's docid: the hash is
	// in docid order, the order of docs.
	h, n, err := x.TokenHash()
	if err != nil {
		t.Fatal(err)
	}
	if want := TokenStreamHash(docs); h != want || n != len(docs) {
		t.Errorf("token-stream hash: xapian %s over %d docs, ours %s over %d", h, n, want, len(docs))
	}
	for _, e := range engines {
		if err := e.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
