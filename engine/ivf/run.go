package ivf

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Run is one encoded run: a model and its vectors' codes and document IDs
// grouped by cluster. Cluster c holds entries Offsets[c] to Offsets[c+1];
// within a cluster document IDs increase.
type Run struct {
	// Model is the centroid model the codes were assigned with.
	Model *Model
	// Offsets has K+1 cumulative entry counts, from 0 to Len().
	Offsets []uint32
	// Codes holds Len() codes of Model.Words words, cluster by cluster.
	Codes []uint64
	// Docs holds the document ID of each code.
	Docs []uint32
}

// Len returns the number of vectors in the run.
func (r *Run) Len() int { return len(r.Docs) }

// Build encodes one run from codes (back to back, words each) and their
// document IDs in increasing order: it trains a model when there are at
// least cfg.TrainMin codes (else the run is flat), assigns every code and
// groups the codes by cluster.
// It stops with ctx's error.
func Build(ctx context.Context, codes []uint64, docs []uint32, words int, cfg Config) (*Run, error) {
	n := len(docs)
	m, err := Train(ctx, codes, words, cfg.clusters(n), cfg)
	if err != nil {
		return nil, err
	}
	assign := make([]int32, n)
	if m.K > 1 {
		if _, err := assignAll(ctx, m, codes, assign); err != nil {
			return nil, err
		}
	}
	return group(m, codes, docs, assign), nil
}

// group lays out codes cluster by cluster, keeping each cluster's
// entries in the order given (increasing doc IDs when docs increase).
func group(m *Model, codes []uint64, docs []uint32, assign []int32) *Run {
	w := m.Words
	r := &Run{Model: m, Offsets: make([]uint32, m.K+1), Codes: make([]uint64, len(codes)), Docs: make([]uint32, len(docs))}
	for _, c := range assign {
		r.Offsets[c+1]++
	}
	for c := 0; c < m.K; c++ {
		r.Offsets[c+1] += r.Offsets[c]
	}
	next := append([]uint32(nil), r.Offsets[:m.K]...)
	for i, c := range assign {
		p := next[c]
		next[c]++
		r.Docs[p] = docs[i]
		copy(r.Codes[int(p)*w:int(p+1)*w], codes[i*w:(i+1)*w])
	}
	return r
}

// Remap returns the run with its document IDs mapped through remap and
// the entries remap drops removed, without re-encoding: the model and
// every kept code's cluster stay; each cluster is re-sorted by new ID.
func (r *Run) Remap(remap func(doc uint32) (uint32, bool)) *Run {
	w := r.Model.Words
	out := &Run{Model: r.Model, Offsets: make([]uint32, r.Model.K+1)}
	type entry struct {
		doc uint32
		src int
	}
	var tmp []entry
	for c := 0; c < r.Model.K; c++ {
		tmp = tmp[:0]
		for i := r.Offsets[c]; i < r.Offsets[c+1]; i++ {
			if d, ok := remap(r.Docs[i]); ok {
				tmp = append(tmp, entry{d, int(i)})
			}
		}
		slices.SortFunc(tmp, func(a, b entry) int { return int64cmp(int64(a.doc), int64(b.doc)) })
		for _, e := range tmp {
			out.Docs = append(out.Docs, e.doc)
			out.Codes = append(out.Codes, r.Codes[e.src*w:(e.src+1)*w]...)
		}
		out.Offsets[c+1] = uint32(len(out.Docs))
	}
	return out
}

func int64cmp(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ErrBadRun reports a run whose structure is inconsistent.
var ErrBadRun = errors.New("ivf: inconsistent run")

// Check verifies the run's cheap invariants: K >= 1, K+1 offsets from 0
// to Len() never decreasing, Len() codes of the model's width, centroids
// of the model's shape. It is O(K).
func (r *Run) Check() error {
	m := r.Model
	switch {
	case m == nil || m.K < 1 || m.Words < 1:
		return fmt.Errorf("%w: bad model shape", ErrBadRun)
	case len(m.Centroids) != m.K*m.Words:
		return fmt.Errorf("%w: %d centroid words for K=%d words=%d", ErrBadRun, len(m.Centroids), m.K, m.Words)
	case len(r.Offsets) != m.K+1 || r.Offsets[0] != 0 || int(r.Offsets[m.K]) != len(r.Docs):
		return fmt.Errorf("%w: cluster offsets do not span the %d entries", ErrBadRun, len(r.Docs))
	case len(r.Codes) != len(r.Docs)*m.Words:
		return fmt.Errorf("%w: %d code words for %d entries", ErrBadRun, len(r.Codes), len(r.Docs))
	}
	for c := 0; c < m.K; c++ {
		if r.Offsets[c] > r.Offsets[c+1] {
			return fmt.Errorf("%w: cluster %d offsets decrease", ErrBadRun, c)
		}
	}
	return nil
}

// CheckFull verifies Check's invariants, the document IDs (below
// numDocs, increasing within each cluster) and that every code sits in
// the cluster of its nearest centroid or at the same distance as it.
func (r *Run) CheckFull(numDocs uint32) error {
	if err := r.Check(); err != nil {
		return err
	}
	m := r.Model
	w := m.Words
	for c := 0; c < m.K; c++ {
		for i := r.Offsets[c]; i < r.Offsets[c+1]; i++ {
			if r.Docs[i] >= numDocs {
				return fmt.Errorf("%w: doc %d out of %d documents", ErrBadRun, r.Docs[i], numDocs)
			}
			if i > r.Offsets[c] && r.Docs[i] <= r.Docs[i-1] {
				return fmt.Errorf("%w: cluster %d doc ids not increasing at %d", ErrBadRun, c, r.Docs[i])
			}
			if m.K > 1 {
				code := r.Codes[int(i)*w : int(i+1)*w]
				if best := m.Assign(code); best != c && Hamming(code, m.Centroids[best*w:(best+1)*w]) != Hamming(code, m.Centroids[c*w:(c+1)*w]) {
					return fmt.Errorf("%w: doc %d in cluster %d, nearest is %d", ErrBadRun, r.Docs[i], c, best)
				}
			}
		}
	}
	return nil
}
