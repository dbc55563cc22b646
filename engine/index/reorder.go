package index

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/summadev/summa/engine/bp"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
)

// ErrNoReorderFields: a manual reorder of an index whose schema has no
// reorder field.
var ErrNoReorderFields = errors.New(`index: no field asks for reordering (set "reorder": true on a text field)`)

// ReorderOptions budget one BP pass over one segment.
type ReorderOptions struct {
	// TimeBudget bounds the pass's wall-clock time (0: 60 s).
	TimeBudget time.Duration
	// MemoryBudgetBytes bounds the document-term graph (0: 256 MiB); a
	// larger graph is trimmed.
	MemoryBudgetBytes int64
	// MaxDepth is the recursion depth floor (0: until partitions are small).
	MaxDepth int
	// Workers bounds the pass's parallelism (0: GOMAXPROCS).
	Workers int
	// Automatic marks background maintenance (M11): eligibility is
	// decided from the claimed source's metadata entry, so completed BP
	// (bpConverged) and capped lineages (MaxUnconvergedPasses reached) are
	// kept, and the pass is skipped with ErrNothingToDo.
	Automatic bool
	// MaxUnconvergedPasses is the lineage limit of automatic passes (Q13);
	// 0 means no limit beyond bpConverged.
	MaxUnconvergedPasses int
}

func (o ReorderOptions) withDefaults() ReorderOptions {
	if o.TimeBudget <= 0 {
		o.TimeBudget = 60 * time.Second
	}
	if o.MemoryBudgetBytes <= 0 {
		o.MemoryBudgetBytes = 256 << 20
	}
	return o
}

// Reorder runs one BP pass over every searchable segment of at least two
// documents (the explicit, manual reorder), one segment at a time.
func (idx *Index) Reorder(ctx context.Context, opts ReorderOptions) ([]RewriteResult, error) {
	if !idx.schema.HasReorderFields() {
		return nil, ErrNoReorderFields
	}
	var out []RewriteResult
	for _, s := range idx.Metadata().Segments {
		if s.Documents < 2 || idx.IsQuarantined(s.ID) {
			continue
		}
		res, err := idx.ReorderSegment(ctx, s.ID, opts)
		if errors.Is(err, ErrNothingToDo) {
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// ReorderSegment rewrites one segment in BP order. Every physical row is
// kept, permuted; the output's mask is the source's mask as it is at
// publication, permuted the same way, so deletes arriving meanwhile are
// kept. A budget-truncated pass is a successful replacement that counts
// one more unconverged pass of the lineage (Q13); the output is fully
// validated before publication (Q12).
func (idx *Index) ReorderSegment(ctx context.Context, id segid.ID, opts ReorderOptions) (RewriteResult, error) {
	if idx.readOnly {
		return RewriteResult{}, ErrReadOnly
	}
	if !idx.schema.HasReorderFields() {
		return RewriteResult{}, ErrNothingToDo
	}
	opts = opts.withDefaults()
	pick := func(s *Snapshot) []SnapshotSegment {
		for _, seg := range s.Segments {
			if seg.Meta.ID == id && seg.Meta.Documents >= 2 {
				return []SnapshotSegment{seg}
			}
		}
		return nil
	}
	return idx.claimedRewrite("reorder", pick, func(rw *rewrite) (RewriteResult, error) {
		if opts.Automatic {
			if err := rw.bpEligible(opts.MaxUnconvergedPasses); err != nil {
				return RewriteResult{}, err
			}
		}
		if err := rw.preflight(ctx); err != nil {
			return RewriteResult{}, err
		}
		src := rw.sources[0]
		g, err := idx.forwardGraph(ctx, src)
		if err != nil {
			return RewriteResult{}, err
		}
		res, err := bp.Reorder(ctx, g, nil, bp.Budget{
			MaxDepth: opts.MaxDepth, Deadline: time.Now().Add(opts.TimeBudget),
			MaxMemoryBytes: opts.MemoryBudgetBytes, Workers: opts.Workers,
		})
		if err != nil {
			return RewriteResult{}, fmt.Errorf("index: reorder %s: %w", id, err)
		}
		newPos := make([]uint32, len(res.Order))
		for n, old := range res.Order {
			newPos[old] = uint32(n)
		}
		info, r, err := rw.buildOrdered(ctx, res.Order)
		if err != nil {
			return RewriteResult{}, err
		}
		before, after := src.Reader.PostingsBytes(), r.PostingsBytes()
		docsBefore, _ := src.Reader.DocPostingsBytes()
		docsAfter, _ := r.DocPostingsBytes()
		idsBefore, _, _ := src.Reader.DocSectionBytes()
		idsAfter, _, _ := r.DocSectionBytes()
		rw.decorate = func(out *metadata.Segment, cur []metadata.Segment) {
			out.BPConverged = res.Converged
			out.BPUnconvergedPasses = cur[0].BPUnconvergedPasses
			if !res.Converged {
				out.BPUnconvergedPasses++
			}
		}
		out, err := rw.publish(ctx, info, r, func(cur []metadata.Segment) (*roaring.Bitmap, error) {
			return rw.permutedMask(cur[0], newPos), nil
		})
		if err != nil {
			return RewriteResult{}, err
		}
		out.PostingsBytesBefore, out.PostingsBytesAfter = before, after
		out.DocPostingsBytesBefore, out.DocPostingsBytesAfter = docsBefore, docsAfter
		out.DocIDBytesBefore, out.DocIDBytesAfter = idsBefore, idsAfter
		out.BPConverged = res.Converged
		return out, nil
	})
}

// bpEligible decides an automatic pass from the claimed source's current
// metadata entry, not from the optimizer's scan (M11, Q13): completed or
// capped BP is never redone. The claim keeps the entry from changing.
func (rw *rewrite) bpEligible(maxPasses int) error {
	s, err := rw.sourceEntry()
	switch {
	case err != nil:
		return err
	case s.BPConverged:
		return fmt.Errorf("%w: BP of %s already converged", ErrNothingToDo, s.ID)
	case maxPasses > 0 && s.BPUnconvergedPasses >= maxPasses:
		return fmt.Errorf("%w: BP lineage of %s reached %d unconverged passes", ErrNothingToDo, s.ID, maxPasses)
	}
	return nil
}

// forwardGraph builds the document-term graph of the reorder fields from
// the per-document term lists, checking cancellation between documents
// (S03).
func (idx *Index) forwardGraph(ctx context.Context, src SnapshotSegment) (*bp.Graph, error) {
	var fields []int
	var bases []uint32
	var total uint32
	for f := range idx.schema.Fields {
		if idx.schema.Fields[f].Reorder {
			fields = append(fields, f)
			bases = append(bases, total)
			total += src.Reader.NumTerms(f)
		}
	}
	b := bp.NewBuilder(total)
	var terms []uint32
	for doc := uint32(0); doc < src.Reader.NumDocs(); doc++ {
		if doc%1024 == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("index: reorder graph: %w", ctx.Err())
		}
		terms = terms[:0]
		for i, f := range fields {
			ts, err := src.Reader.ForwardTerms(f, doc)
			if err != nil {
				return nil, fmt.Errorf("index: reorder graph of %s: %w", src.Meta.ID, err)
			}
			for _, t := range ts {
				terms = append(terms, bases[i]+t)
			}
		}
		if err := b.Add(terms); err != nil {
			return nil, fmt.Errorf("index: reorder graph of %s: %w", src.Meta.ID, err)
		}
	}
	return b.Graph(), nil
}

// permutedMask maps the source's current mask through newPos.
func (rw *rewrite) permutedMask(cur metadata.Segment, newPos []uint32) *roaring.Bitmap {
	out := roaring.New()
	if cur.Deletes == nil {
		return out
	}
	rw.idx.mu.Lock()
	m := rw.idx.mu.masks[cur.Deletes.ID]
	rw.idx.mu.Unlock()
	if m == nil {
		return out
	}
	it := m.Iterator()
	for it.HasNext() {
		out.Add(newPos[it.Next()])
	}
	return out
}
