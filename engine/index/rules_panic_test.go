package index

import (
	"context"
	"maps"
	"testing"
)

// TestL06_PanicInsideARewriteReleasesItsClaimsAndDeletesItsOutput: a panic
// in a merge, a compaction and a reorder after their output was written
// (before publication) unwinds through the deferred cleanup: every claim
// released, the output's files deleted through the tracker, the sources
// and the generation untouched, and the next rewrite of the same sources
// succeeds.
func TestL06_PanicInsideARewriteReleasesItsClaimsAndDeletesItsOutput(t *testing.T) {
	var panicking bool
	opts := testOptions()
	opts.Hooks.BeforeRewritePublish = func(kind string) {
		if panicking {
			panic("injected panic in " + kind)
		}
	}
	fs, idx := createMemWith(t, opts)
	// Closed only on success: a leaked claim would make Close wait.
	for i := 0; i < 3; i++ {
		if err := idx.Add(docs(t, i*10, i*10+10, 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	if _, err := idx.Delete("p0004"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	ctx := context.Background()
	for _, op := range []struct {
		kind string
		run  func() (RewriteResult, error)
	}{
		{"merge", func() (RewriteResult, error) { return idx.ForceMerge(ctx, 1) }},
		{"compact", func() (RewriteResult, error) { return idx.Compact(ctx) }},
		{"reorder", func() (RewriteResult, error) {
			return idx.ReorderSegment(ctx, idx.Metadata().Segments[0].ID, ReorderOptions{})
		}},
	} {
		files, gen, docs := segFiles(t, fs), idx.Metadata().Generation, visible(t, idx)
		panicking = true
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Fatalf("%s: no panic", op.kind)
				}
			}()
			op.run()
		}()
		panicking = false
		idx.Manager().WaitDeletes()
		if n := idx.Manager().ActiveOperations(); n != 0 {
			t.Fatalf("%s: %d claims still held after the panic", op.kind, n)
		}
		if after := segFiles(t, fs); !maps.EqualFunc(after, files, func(a, b []string) bool { return len(a) == len(b) }) {
			t.Fatalf("%s: files after the panic %v, before %v", op.kind, after, files)
		}
		if idx.Metadata().Generation != gen || !maps.Equal(visible(t, idx), docs) {
			t.Fatalf("%s: the panic changed the generation or the documents", op.kind)
		}
		checkOwned(t, fs, idx)
		if _, err := op.run(); err != nil {
			t.Fatalf("%s after the panic: %v", op.kind, err)
		}
	}
	mustClose(t, idx)
}
