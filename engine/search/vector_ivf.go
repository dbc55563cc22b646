package search

import (
	"context"
	"fmt"

	"github.com/summadev/summa/engine/ivf"
)

// MaxNprobe bounds the nprobe of a dense query.
const MaxNprobe = 1 << 16

// DefaultNprobe is the number of clusters probed per encoded run when a
// query does not say: chosen by `make bench-vectors` (docs/performance.md,
// section "Dense vectors: binary IVF") as the smallest measured value
// reaching recall@10 >= 0.95 on 500,000 vectors (clusters of about 64
// codes: about 5 % of a coalesced run of that size is scanned; runs of
// fewer than 384 clusters, about 24,000 vectors, are scanned whole).
const DefaultNprobe = 384

// RescoreFactor: the binary IVF keeps RescoreFactor × k Hamming
// candidates, which are rescored exactly from the stored float vectors.
const RescoreFactor = 4

// ivfSegment is implemented by segments with binary IVF payloads
// (*segment.Reader).
type ivfSegment interface {
	// IVFRuns returns a binary field's encoded runs; ok false when the
	// segment has none (search it exactly).
	IVFRuns(field int) ([]*ivf.Run, bool)
}

// searchIVF answers q from the encoded runs of every view that has them:
// per run, the nprobe clusters nearest to the query's sign code are
// scanned by Hamming distance, and the best RescoreFactor×k candidates
// over all views are rescored by their exact dot product into top. It
// returns the views it could not answer (the others' Segment nil), which
// the caller searches exactly; scores are dot products either way, so no
// Hamming distance is ever compared with a dot product.
func searchIVF(ctx context.Context, views []SegmentView, q *DenseQuery, top *topK) ([]SegmentView, error) {
	nprobe := q.Nprobe
	if nprobe <= 0 {
		nprobe = DefaultNprobe
	}
	code := make([]uint64, ivf.Words(len(q.Vector)))
	ivf.Encode(code, q.Vector)
	cands := ivf.NewTopK(q.K * RescoreFactor)
	rest := make([]SegmentView, len(views))
	for vi := range views {
		v := &views[vi]
		is, ok := v.Segment.(ivfSegment)
		var runs []*ivf.Run
		if ok {
			runs, ok = is.IVFRuns(q.Field)
		}
		if !ok {
			rest[vi] = *v
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("search: segment view %d: %w", vi, err)
		}
		skip := func(doc uint32) bool { return v.isDeleted(doc) }
		for k, r := range runs {
			if _, err := r.Search(code, nprobe, int32(vi), v.Segment.NumDocs(), skip, cands); err != nil {
				return nil, fmt.Errorf("search: segment view %d run %d: %w", vi, k, err)
			}
		}
	}
	for _, c := range cands.Sorted() {
		vec, ok, err := views[c.Tag].Segment.DenseVector(q.Field, c.Doc)
		if err != nil {
			return nil, fmt.Errorf("search: segment view %d: dense vector of doc %d: %w", c.Tag, c.Doc, err)
		}
		if !ok || len(vec) != len(q.Vector) {
			return nil, fmt.Errorf("search: segment view %d: doc %d is encoded but has no %d-dimension vector", c.Tag, c.Doc, len(q.Vector))
		}
		top.offer(scored{view: int(c.Tag), doc: c.Doc, score: Dot(q.Vector, vec)})
	}
	return rest, nil
}
