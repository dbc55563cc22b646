package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeResult is a run of ours and one peer on a corpus of n documents
// where every latency of ours is oursMS and of the peer peerMS, with no
// engine run (the report's arithmetic and layout only).
func fakeResult(n int, oursMS, peerMS float64, label string) *Result {
	q := Query{Name: "high: the", Kind: KindTerm, Terms: []string{"the"}}
	run := func(v float64, docsPerS float64) *EngineRun {
		d := time.Duration(v * 1e6)
		dist := Dist{N: 10, P50: d, P99: 2 * d, Max: 2 * d, Mean: d}
		modes := map[Mode]Dist{}
		classes := map[Mode]map[string]Dist{}
		for _, m := range Modes {
			modes[m] = dist
			classes[m] = map[string]Dist{q.Name: dist}
		}
		return &EngineRun{
			IngestDocsPerS: docsPerS, Ingest: time.Duration(float64(n) / docsPerS * 1e9), Search: dist, PerQuery: map[string]Dist{q.Name: dist},
			PerClass: map[string]Dist{q.Name: dist}, ModeSearch: modes, ModeClass: classes, Open: d, Merge: 10 * d,
			MergedBytes: int64(n) * 100, IndexBytes: int64(n) * 120, SmallCommit: dist, Commit: dist,
			Hits: map[string]int{q.Name: n}, BPDocBefore: -1, BPDocAfter: -1,
		}
	}
	docs := make([]Doc, n)
	c := &Corpus{Name: "fake", Docs: docs, Bytes: int64(n) * 1000}
	return &Result{
		Config: Config{Engines: []string{"ours", "bleve"}, Reps: 1}, Corpus: c, Queries: []Query{q}, Fixed: 1, Label: label,
		Reps: []Rep{{Engines: map[string]*EngineRun{"ours": run(oursMS, 2000), "bleve": run(peerMS, 1000)}}},
	}
}

// goalKeys are the keys ("ratio search_p50 ours/best_peer") of the goal
// and check lines of a report text.
func goalKeys(text string) []string {
	var keys []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "ratio ") && strings.Contains(l, "best_peer") || strings.HasPrefix(l, "bp doc-id") ||
			strings.HasPrefix(l, "bp search speedup") || strings.HasPrefix(l, "totalHits check") {
			k, _, _ := strings.Cut(l, ":")
			keys = append(keys, k)
		}
	}
	return keys
}

// TestLargeGoalLines checks that the large corpus's report has a twin of
// every goal line of the small one's, ending in " (large)", with its own
// figures, and that the small report has none.
func TestLargeGoalLines(t *testing.T) {
	small := fakeResult(1000, 1, 4, "")
	large := fakeResult(10000, 2, 5, LargeLabel)
	st, lt := small.Text("cmd"), large.Text("cmd")
	if strings.Contains(st, "(large)") {
		t.Errorf("small report has (large) lines:\n%s", st)
	}
	keys := goalKeys(st)
	if len(keys) < 10 {
		t.Fatalf("only %d goal lines in the small report:\n%s", len(keys), st)
	}
	for _, k := range keys {
		found := false
		for _, l := range strings.Split(lt, "\n") {
			found = found || (strings.HasPrefix(l, k+":") && strings.HasSuffix(l, " (large)"))
		}
		if !found {
			t.Errorf("large report lacks the twin of %q:\n%s", k, lt)
		}
	}
	for _, want := range []string{"ratio search_p50 ours/best_peer: 0.25\n", "ratio search_p50 ours/best_peer: 0.40 (large)\n",
		"ratio top10_p50 ours/best_peer: 0.40 (large)\n", "ratio ingest_docs_per_s ours/best_peer: 2.00 (large)\n"} {
		if !strings.Contains(st+lt, want) {
			t.Errorf("reports lack %q:\n%s\n%s", want, st, lt)
		}
	}
}

// TestGrowthTable checks the large/small figures of each engine.
func TestGrowthTable(t *testing.T) {
	g := GrowthTable(fakeResult(1000, 1, 4, ""), fakeResult(10000, 2, 5, LargeLabel))
	for _, want := range []string{"documents x10.00, text bytes x10.00", "ours small / large / x", "bleve small / large / x"} {
		if !strings.Contains(g, want) {
			t.Errorf("growth table lacks %q:\n%s", want, g)
		}
	}
	for _, row := range []struct{ key, cells string }{
		{"search_p50", "1.00 / 2.00 / 2.00"},
		{"index_bytes_merged", "0.100 / 1.00 / 10.00"},
		{"ingest_s", "0.500 / 5.00 / 10.00"},
	} {
		found := false
		for _, l := range strings.Split(g, "\n") {
			found = found || (strings.HasPrefix(l, row.key+" ") && strings.Contains(l, row.cells))
		}
		if !found {
			t.Errorf("growth table's %s row lacks %q:\n%s", row.key, row.cells, g)
		}
	}
}

// TestWriteReportKeepsSections writes the large corpus's section alone
// into an existing report and expects the small one's section and the
// hand-written notes kept, then both anew.
func TestWriteReportKeepsSections(t *testing.T) {
	md := filepath.Join(t.TempDir(), "performance.md")
	old := "# Performance\n\nheader\n\n" + mdResults + "\n```\nold small figures\n```\n\n" + mdMethod + "\nold method\n" + KeepMarker + "\nhand-written notes\n"
	if err := os.WriteFile(md, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	small, large := fakeResult(1000, 1, 4, ""), fakeResult(10000, 2, 5, LargeLabel)
	if err := WriteReport(md, "cmd -corpora large", nil, large); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(md)
	s := string(b)
	for _, want := range []string{"old small figures", mdLarge, "ratio search_p50 ours/best_peer: 0.40 (large)", "hand-written notes", "**Large corpus**"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "old method") || strings.Count(s, mdMethod) != 1 {
		t.Errorf("methodology not regenerated once:\n%s", s)
	}
	if err := WriteReport(md, "cmd", small, large); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(md)
	s = string(b)
	if strings.Contains(s, "old small figures") || !strings.Contains(s, "ratio search_p50 ours/best_peer: 0.25\n") ||
		!strings.Contains(s, "growth from the small corpus") || strings.Count(s, mdLarge) != 1 || !strings.Contains(s, "hand-written notes") {
		t.Errorf("both sections not regenerated:\n%s", s)
	}
}
