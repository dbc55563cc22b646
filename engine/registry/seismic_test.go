package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/analysis"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/optimizer"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

var sparseSchema = schema.MustNew(
	schema.Field{Name: "id", Type: schema.Text, Primary: true},
	schema.Field{Name: "sp", Type: schema.SparseVector},
)

// TestM09_BackgroundSeismicTaskPlacesPersistedDebt: the optimizer's
// "seismic" task runs a Seismic pass through the registry's target; the
// policy chose it from the persisted debt, and once the pass cleared the
// debt a stale task for the (now debt-free) output is skipped, not run.
func TestM09_BackgroundSeismicTaskPlacesPersistedDebt(t *testing.T) {
	fs := vfs.NewMem()
	r := openTest(t, fs, Options{Optimizer: optimizer.Config{Threads: 0}, Index: index.Options{SeismicBudget: 200}})
	defer r.Close(context.Background())
	if _, err := r.Create(context.Background(), "vectors", sparseSchema); err != nil {
		t.Fatal(err)
	}
	h, err := r.Acquire("vectors")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	ps := corpustest.Paragraphs(t)
	var batch []*schema.Document
	for i := 0; i < 100; i++ {
		sp := map[string]float64{}
		for _, w := range analysis.Terms(ps[i%len(ps)]) {
			sp[w]++
		}
		raw, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("p%04d", i), "sp": sp})
		d, err := sparseSchema.ParseDocument(raw)
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
	segs := idx.Metadata().Segments
	task, ok := r.opt.Policy().Choose(segs, func(segid.ID) bool { return true }, false)
	if !ok || task.Kind != "seismic" || segs[0].SeismicPending() == 0 {
		t.Fatalf("policy on a segment with debt %d: %+v %v", segs[0].SeismicPending(), task, ok)
	}
	tg := &target{h: h}
	if err := tg.Run(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	out := idx.Metadata().Segments[0]
	if out.Seismic != nil || out.ID == segs[0].ID {
		t.Fatalf("after the pass: segment %s debt %+v", out.ID, out.Seismic)
	}
	stale := optimizer.Task{Kind: "seismic", Sources: []segid.ID{out.ID}}
	if err := tg.Run(context.Background(), stale); !errors.Is(err, optimizer.ErrSkip) {
		t.Fatalf("pass over a debt-free segment: %v, want a skip", err)
	}
}
