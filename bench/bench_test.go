package bench

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/summadev/summa/engine/analysis"
)

// TestPipeline runs the whole benchmark on about 300 documents (the
// linux-doc corpus when installed, else the Go distribution's) so that
// the command keeps compiling and working. The HTTP ingest runs only with
// SUMMA_BENCH_TEST_HTTP=1 (building summa-server takes longer than this
// test should).
func TestPipeline(t *testing.T) {
	// SUMMA_BENCH_TEST_FALLBACK=1 tests the corpus used where linux-doc is
	// not installed (as on a fresh CI machine).
	c, err := PrepareCorpus(CorpusOptions{PrepareOptions: PrepareOptions{MaxDocs: 300, HeldOut: 30, NoInstall: true}, ForceFallback: os.Getenv("SUMMA_BENCH_TEST_FALLBACK") == "1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Docs) == 0 || c.Bytes == 0 {
		t.Fatalf("empty corpus %q", c.Name)
	}
	root, _ := filepath.Abs("..")
	engines := []string{"ours", "bleve"}
	if XapianAvailable() == "" {
		engines = append(engines, "xapian")
	}
	if LuceneAvailable() == "" {
		engines = append(engines, "lucene")
	} else if os.Getenv(requireLucene) == "1" {
		t.Fatalf("lucene: %s (%s=1 requires it)", LuceneAvailable(), requireLucene)
	}
	cfg := Config{
		WorkDir:       t.TempDir(),
		Quick:         true,
		CommitEvery:   50,
		OpenCommits:   10,
		SearchRounds:  3,
		HeadingRounds: 1,
		ManyCommits:   20,
		SmallCommits:  2,
		OpenRounds:    2,
		Reps:          1,
		FloorSeqMB:    4,
		FloorSyncs:    3,
		WarmMax:       time.Second,
		Engines:       engines,
		NoInstall:     true,
		HTTP:          os.Getenv("SUMMA_BENCH_TEST_HTTP") == "1",
		ModuleRoot:    root,
	}
	if testing.Verbose() {
		cfg.Log = os.Stderr
	}
	res, err := Run(context.Background(), cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Mismatches {
		t.Errorf("hit count mismatch: %s", m)
	}
	for name, r := range res.Reps[0].Engines {
		if r.IngestDocsPerS <= 0 || r.IndexBytes <= 0 || r.Search.N == 0 || r.QPS <= 0 || r.Open <= 0 {
			t.Errorf("%s: missing measurements: %+v", name, r)
		}
		if r.MergeErr != "" {
			t.Errorf("%s: merge: %s", name, r.MergeErr)
		}
	}
	if cfg.HTTP {
		if h := res.Reps[0].HTTP; h == nil || h.Err != "" {
			t.Errorf("http run failed: %+v (skipped: %q)", h, res.HTTPSkipped)
		}
	}
	if len(res.Queries)-res.Fixed != len(c.HeldOut) || len(c.HeldOut) != 30 {
		t.Errorf("%d heading queries from %d held-out sections, want 30", len(res.Queries)-res.Fixed, len(c.HeldOut))
	}
	if o := res.Reps[0].Engines["ours"]; o.OpenMany <= 0 || o.OpenManySegments < cfg.ManyCommits {
		t.Errorf("open at many segments not measured: %v over %d segments", o.OpenMany, o.OpenManySegments)
	}
	if s := res.Reps[0].Engines["ours"].BPShuffled; s == nil || s.Err != "" || s.DocBefore <= 0 || s.DocAfter <= 0 || s.SearchBefore <= 0 || s.SearchAfter <= 0 {
		t.Errorf("bp on the shuffled order not measured: %+v", s)
	}
	text := res.Text("go test")
	for _, line := range []string{"ratio search_p50 ours/best_peer: ", "ratio search_p50_worst_class ours/best_peer: ",
		"ratio small_commit_p50 ours/best_peer: ", "ratio merge_ms ours/best_peer: ", "open_ms at ", "bp doc-id bytes smaller: ",
		"top10 overlap with xapian: ", "top10 overlap with bleve: ", "headings: phrase (", "all (",
		"ratio top10_p50 ours/best_peer: ", "ratio top10_worst_class ours/best_peer: ", "ratio count_p50 ours/best_peer: ",
		"ratio ingest_docs_per_s ours/best_peer: ", "ratio index_bytes_merged ours/best_peer: ", "ratio open_ms ours/best_peer: ",
		"TOP_10: class (queries)", "COUNT: class (queries)", "bp doc-id bytes smaller (shuffled): ", "bp search speedup (shuffled): "} {
		if !strings.Contains(text, line) {
			t.Errorf("report lacks %q:\n%s", line, text)
		}
	}
	for _, p := range []string{"xapian", "lucene"} {
		if slices.Contains(engines, p) && !strings.Contains(text, p+" (read back from its index) ") {
			t.Errorf("report lacks %s's token-stream hash:\n%s", p, text)
		}
	}
	if strings.Contains(text, "MISMATCH") {
		t.Errorf("report has a mismatch:\n%s", text)
	}
	for _, key := range []string{"ingest_docs_per_s", "ingest_mb_per_s", "commit_p50", "search_p50", "search_p99", "qps", "index_bytes", "open_ms", "merge_ms"} {
		if !strings.Contains(text, "ratio "+key+" ours/bleve: ") {
			t.Errorf("report lacks the ratio line of %s:\n%s", key, text)
		}
	}
	if !strings.Contains(text, "ratio commit_p50 ours/fsync_floor: ") {
		t.Errorf("report lacks the fsync floor ratio:\n%s", text)
	}
	if !strings.Contains(text, "bp postings bytes: before=") && !strings.Contains(text, "bp: ") {
		t.Errorf("report lacks the bp line:\n%s", text)
	}
	md := filepath.Join(t.TempDir(), "performance.md")
	if err := os.WriteFile(md, []byte("old\n"+KeepMarker+"\nhand-written notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteMarkdown(md, "go test"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(md)
	if !strings.Contains(string(b), "hand-written notes") || !strings.Contains(string(b), "ratio qps ours/bleve") || strings.HasPrefix(string(b), "old") {
		t.Errorf("markdown not regenerated with the kept notes:\n%s", b)
	}
}

// TestTokenizerMatchesOurs checks that the Bleve tokenizer yields our
// analysis's terms at the same relative positions.
func TestTokenizerMatchesOurs(t *testing.T) {
	long := strings.Repeat("x", analysis.MaxTermBytes+1)
	for _, text := range []string{
		"", "  ", "pci_register_driver() don't 3.14 x86-64",
		"Ünïcödé ΣΊΣΥΦΟΣ straße ÅNGSTRÖM 東京 tokyo",
		"a " + long + " b " + strings.Repeat("é", 40) + " c",
		"tabs\tand\nnewlines—dashes…ellipsis",
	} {
		type tok struct {
			term string
			pos  int
		}
		var want []tok
		analysis.Tokenize(text, func(term string, pos uint32) { want = append(want, tok{term, int(pos)}) })
		var got []tok
		for _, tk := range (letterDigitTokenizer{}).Tokenize([]byte(text)) {
			got = append(got, tok{strings.ToLower(string(tk.Term)), tk.Position})
		}
		if len(got) != len(want) {
			t.Fatalf("%q: got %v want %v", text, got, want)
		}
		for i := range got {
			// Positions differ by a constant (Bleve counts from 1).
			if got[i].term != want[i].term || got[i].pos-got[0].pos != want[i].pos-want[0].pos {
				t.Fatalf("%q: got %v want %v", text, got, want)
			}
		}
	}
}

func TestSplitSections(t *testing.T) {
	text := `.. SPDX-License-Identifier: GPL-2.0

=========
Top Title
=========

Intro text.

Section A
---------
Body of A.

Section B
~~~~~~~~~

=====  =====
col1   col2
=====  =====

Short
==
not a heading underline
`
	docs := splitSections("x/y.rst", text)
	var titles, ids []string
	for _, d := range docs {
		titles = append(titles, d.Title)
		ids = append(ids, d.ID)
	}
	// The preamble holds only the SPDX line: no document.
	wantTitles := []string{"Top Title", "Section A", "Section B"}
	if !reflect.DeepEqual(titles, wantTitles) {
		t.Fatalf("titles %q, want %q", titles, wantTitles)
	}
	if ids[0] != "x/y.rst#1" || !strings.Contains(docs[2].Body, "col1   col2") || !strings.Contains(docs[2].Body, "Short\n==") {
		t.Fatalf("unexpected split: %+v", docs)
	}
}
