package registry

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/optimizer"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

var reorderSchema = schema.MustNew(
	schema.Field{Name: "id", Type: schema.Text, Primary: true},
	schema.Field{Name: "body", Type: schema.Text, Reorder: true},
)

// TestM11_BackgroundReorderTaskChecksTheClaimedLineage: a reorder task the
// optimizer chose from an older scan runs against the claimed source's
// current metadata: once the lineage reached the pass limit, the task is
// skipped, never a fourth pass.
func TestM11_BackgroundReorderTaskChecksTheClaimedLineage(t *testing.T) {
	fs := vfs.NewMem()
	r := openTest(t, fs, Options{Optimizer: optimizer.Config{Threads: 0},
		Reorder: index.ReorderOptions{MaxDepth: 1}})
	defer r.Close(context.Background())
	if _, err := r.Create(context.Background(), "articles", reorderSchema); err != nil {
		t.Fatal(err)
	}
	h, err := r.Acquire("articles")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	ps := corpustest.Paragraphs(t)
	var batch []*schema.Document
	for i := 0; i < 300; i++ {
		d, err := reorderSchema.ParseDocument([]byte(fmt.Sprintf(`{"id":"p%04d","body":%q}`, i, ps[i%len(ps)])))
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, d)
	}
	if err := h.Add(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	idx, err := h.Index()
	if err != nil {
		t.Fatal(err)
	}
	tg := &target{h: h}
	limit := r.opt.Policy().MaxUnconvergedPasses
	for i := 0; i < limit; i++ {
		task := optimizer.Task{Kind: "reorder", Sources: []segid.ID{idx.Metadata().Segments[0].ID}}
		if err := tg.Run(context.Background(), task); err != nil {
			t.Fatalf("pass %d: %v", i+1, err)
		}
	}
	seg := idx.Metadata().Segments[0]
	if seg.BPConverged || seg.BPUnconvergedPasses != limit {
		t.Fatalf("setup: converged=%v passes=%d", seg.BPConverged, seg.BPUnconvergedPasses)
	}
	stale := optimizer.Task{Kind: "reorder", Sources: []segid.ID{seg.ID}}
	if err := tg.Run(context.Background(), stale); !errors.Is(err, optimizer.ErrSkip) {
		t.Fatalf("a task over a capped lineage: %v", err)
	}
	if got := idx.Metadata().Segments[0].BPUnconvergedPasses; got != limit {
		t.Fatalf("the lineage ran %d passes, limit %d", got, limit)
	}
}
