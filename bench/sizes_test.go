package bench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileKind checks the names the peers' files are grouped under.
func TestFileKind(t *testing.T) {
	for name, want := range map[string]string{
		"_0.pos": ".pos", "_3_Lucene84_0.doc": ".doc", "_a.fdt": ".fdt", "segments_12": "segments_N",
		"write.lock": "write.lock", "postlist.glass": "postlist.glass", "000000000a1f.zap": ".zap", "root.bolt": "root.bolt",
	} {
		if got := fileKind(name); got != want {
			t.Errorf("fileKind(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestOursSectionSizes merges a small index of ours and checks that its
// sections and the other files add up to the directory's size, and that
// the report prints every section with its share.
func TestOursSectionSizes(t *testing.T) {
	docs := []Doc{
		{ID: "a", Title: "alpha beta", Body: "gamma delta epsilon gamma"},
		{ID: "b", Title: "beta", Body: "beta gamma alpha"},
		{ID: "c", Title: "zeta", Body: "eta theta iota gamma"},
	}
	ctx := context.Background()
	o, err := NewOurs()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ours")
	if err := o.Create(dir); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := ingest(ctx, o, docs, NDJSON(docs), 1); err != nil {
		t.Fatal(err)
	}
	if err := o.ForceMerge(ctx); err != nil {
		t.Fatal(err)
	}
	secs, err := o.SectionSizes()
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Close(ctx); err != nil {
		t.Fatal(err)
	}
	total, err := dirSize(dir)
	if err != nil {
		t.Fatal(err)
	}
	secs = addOtherFiles(secs, total)
	var sum int64
	keys := map[string]bool{}
	for _, s := range secs {
		sum += s.Bytes
		keys[s.Key] = true
	}
	if sum != total {
		t.Fatalf("sections add up to %d bytes, the directory holds %d", sum, total)
	}
	for _, k := range []string{"post/text/positions", "post/text/doc ids", "terms/text/term suffixes", "store/compressed blocks", "bmp/text/block postings", otherFiles} {
		if !keys[k] {
			t.Errorf("no section %q in %v", k, secs)
		}
	}
	res := &Result{Config: Config{Engines: []string{"ours"}}, Reps: []Rep{{Engines: map[string]*EngineRun{"ours": {MergedBytes: total, MergedSections: secs}}}}}
	out := res.sizeLines()
	if n := strings.Count(out, "\n  ours "); n != len(secs) {
		t.Fatalf("%d section lines for %d sections:\n%s", n, len(secs), out)
	}
}
