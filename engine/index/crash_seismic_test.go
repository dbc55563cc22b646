package index

import (
	"context"
	"testing"
)

// TestCrashAndFaultHarnessSeismic runs the crash and fault harness on
// documents with sparse vectors whose flushes leave Seismic debt: the
// maintenance step merges (copying encoded runs), compacts, reorders and
// then runs a Seismic maintenance pass; every crash image and injected
// error must recover to an acknowledged state with every file owned.
// One in three write points is exercised (the text harness covers all).
func TestCrashAndFaultHarnessSeismic(t *testing.T) {
	h := harness{
		schema: seisSchema,
		opts: func() Options {
			o := harnessOptions()
			o.SeismicBudget = 300
			return o
		},
		extra: []func(context.Context, *Index) (RewriteResult, error){
			func(ctx context.Context, idx *Index) (RewriteResult, error) {
				for _, s := range idx.Metadata().Segments {
					if s.SeismicPending() > 0 {
						return idx.SeismicSegment(ctx, s.ID, SeismicOptions{Budget: 200})
					}
				}
				return RewriteResult{}, ErrNothingToDo
			},
		},
	}
	steps := []step{
		{adds: seisDocs(t, 0, 30)},
		{adds: seisDocs(t, 20, 40), deletes: []string{"p0003", "p0005"}},
		{adds: append(seisDocs(t, 40, 50), seisDocs(t, 0, 5)...), deletes: []string{"p0021", "p0045"}},
		{adds: seisDocs(t, 50, 55), deletes: []string{"p0001"}},
	}
	runHarness(t, h, steps, 3)
}
