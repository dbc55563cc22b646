package vectors

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/summadev/summa/engine/ivf"
	"github.com/summadev/summa/engine/search"
)

// peerTarget is the recall@10 at which the curves are compared.
const peerTarget = 0.95

// peerPasses is the number of timed passes per curve point, ours and the
// peers' alike; the fastest counts.
const peerPasses = 5

// Sweeps of the curves.
var (
	peerNprobes = []int{8, 16, 32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 4096}
	peerEfs     = []int{10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512}
)

// curvePoint is one point of a recall/QPS curve.
type curvePoint struct {
	Param int
	// Recall is the recall@10 the curves are compared at: against the
	// exhaustive binary search (binary IVFs) or the exact float top 10
	// (hnswlib).
	Recall float64
	// FloatRecall is the recall@10 against the exact float top 10.
	FloatRecall float64
	QPS         float64
}

// runPeers compares the engine's binary IVF (Hamming candidates rescored
// by float dot product) with FAISS's IndexBinaryIVF on the same codes and
// the same rescoring, and with hnswlib's HNSW on the float vectors: the
// same queries, k = 10, one thread each, recall@10 against the exact
// float dot-product top 10 of the same run.
func runPeers(ctx context.Context, cfg Config) error {
	if why := EnsurePeers(true, cfg.Log); why != "" {
		cfg.Printf("peers: skipped: %s (install: apt-get install -y %s)", why, strings.Join(PeerPackages, " "))
		return nil
	}
	opts := DenseOptions{MinDocs: 500000, CacheDir: cfg.CacheDir, Log: cfg.Logf, Floats: true}
	if cfg.Quick {
		opts.MinDocs, opts.MaxQueries, opts.Sample = 100000, 200, 15000
	}
	set, err := LoadDenseSet(opts)
	if err != nil {
		return err
	}
	p := newPeerBench(set)
	cfg.Printf("peers set: %d vectors of %d dimensions (float) and %d bits (sign codes), %d held-out queries (%s)", p.n, set.Dims, set.Dims, p.nq, set.Source)
	start := time.Now()
	p.exactTop(ctx)
	cfg.Printf("exact float dot-product top-%d of every query by brute force: %.1f s (2 goroutines)", denseK, time.Since(start).Seconds())

	start = time.Now()
	docs := make([]uint32, p.n)
	for i := range docs {
		docs[i] = uint32(i)
	}
	icfg := ivf.DefaultConfig()
	run, err := ivf.Build(ctx, set.Codes, docs, p.w, icfg)
	if err != nil {
		return err
	}
	oursBuild := time.Since(start)
	if err := p.exhaustiveBinary(ctx, docs); err != nil {
		return err
	}
	var ours []curvePoint
	for _, np := range peerNprobes {
		if np > run.Model.K {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		ids, secs := p.oursPass(run, np)
		for pass := 1; pass < peerPasses; pass++ {
			_, s := p.oursPass(run, np)
			secs = min(secs, s)
		}
		ours = append(ours, curvePoint{Param: np, Recall: recallAgainst(ids, p.binary), FloatRecall: recallAgainst(ids, p.exact), QPS: float64(p.nq) / secs})
	}
	in := &PeerInput{Dims: set.Dims, Vectors: set.Vectors, Queries: set.QueryVectors, Codes: set.Codes, QueryCodes: set.Queries,
		K: denseK, Peers: []string{"faiss", "hnswlib"}, Nlist: run.Model.K, TrainIterations: icfg.Iterations,
		TrainSamplePerList: icfg.SamplePerCluster, Rescore: search.RescoreFactor * denseK, Nprobes: nprobesUpTo(run.Model.K),
		M: 16, EfConstruction: 200, Efs: peerEfs, Passes: peerPasses}
	res, err := RunPeers(ctx, cfg.WorkDir, in, cfg.Log)
	if err != nil {
		return err
	}
	faiss, hnsw := p.peerCurve(res, "faiss", p.binary), p.peerCurve(res, "hnswlib", p.exact)
	cfg.Printf("builds, one thread: ours %.1f s (K=%d lists, %d iterations on %d codes per list), faiss %s IndexBinaryIVF %.1f s (same lists and training budget), hnswlib %s %.1f s (M=16, ef_construction=200, space ip)",
		oursBuild.Seconds(), run.Model.K, icfg.Iterations, icfg.SamplePerCluster, res.Version["faiss"], res.Build["faiss"], res.Version["hnswlib"], res.Build["hnswlib"])
	cfg.Printf("recall@10 of the binary IVFs (ours, faiss) is against the exhaustive binary search with the same rescoring (every code's Hamming distance, top 40 rescored by float dot product); hnswlib's against the exact float dot-product top 10; both are printed for every point")
	printCurve(cfg, "ours: engine/ivf binary IVF, top-40 Hamming candidates rescored by float dot product", "nprobe", ours)
	printCurve(cfg, "faiss: IndexBinaryIVF on the same codes, top-40 candidates rescored by float dot product (numpy)", "nprobe", faiss)
	printCurve(cfg, "hnswlib: HNSW on the float vectors, space ip", "ef", hnsw)
	cfg.Printf("exhaustive binary search with the same rescoring: recall@10 %.4f against the exact float top 10 (the ceiling of both binary IVFs)", recallAgainst(p.binaryIDs(), p.exact))
	o, oHow := qpsAt(ours, peerTarget)
	f, fHow := qpsAt(faiss, peerTarget)
	h, hHow := qpsAt(hnsw, peerTarget)
	cfg.Printf("qps at recall %.2f (linear interpolation of QPS between the two measured points around it): ours %.0f (%s), faiss %.0f (%s), hnswlib %.0f (%s)", peerTarget, o, oHow, f, fHow, h, hHow)
	cfg.Printf("ratio binary_ivf qps ours/faiss at recall %.2f: %s", peerTarget, ratio(o, f))
	cfg.Printf("ratio dense qps ours/hnswlib at recall %.2f: %s", peerTarget, ratio(o, h))
	cfg.Printf("  (ours at recall %.2f of the exhaustive binary search, hnswlib at recall %.2f of the exact float top 10: not the same answers, see the ceiling above)", peerTarget, peerTarget)
	return nil
}

// nprobesUpTo returns the sweep's nprobes up to k lists.
func nprobesUpTo(k int) []int {
	var out []int
	for _, np := range peerNprobes {
		if np <= k {
			out = append(out, np)
		}
	}
	return out
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "n/a (a curve does not reach the recall)"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// printCurve prints a curve as a table.
func printCurve(cfg Config, title, param string, c []curvePoint) {
	cfg.Printf("%s:", title)
	cfg.Printf("  %6s  recall@10  recall@10_vs_float  %8s", param, "qps")
	for _, pt := range c {
		cfg.Printf("  %6d  %9.4f  %18.4f  %8.0f", pt.Param, pt.Recall, pt.FloatRecall, pt.QPS)
	}
}

// qpsAt returns the QPS of curve c at recall target: linear
// interpolation of QPS in recall between the first measured point at or
// above the target and the one before it. A curve starting above the
// target gives its first point's QPS (a lower bound); one never reaching
// it gives NaN.
func qpsAt(c []curvePoint, target float64) (float64, string) {
	pts := append([]curvePoint(nil), c...)
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].Param < pts[j].Param })
	for i, pt := range pts {
		if pt.Recall < target {
			continue
		}
		if i == 0 {
			return pt.QPS, fmt.Sprintf("first point, %d, is already at %.4f: a lower bound", pt.Param, pt.Recall)
		}
		a := pts[i-1]
		if pt.Recall == a.Recall {
			return pt.QPS, fmt.Sprintf("at %d", pt.Param)
		}
		t := (target - a.Recall) / (pt.Recall - a.Recall)
		return a.QPS + t*(pt.QPS-a.QPS), fmt.Sprintf("between %d and %d", a.Param, pt.Param)
	}
	best := 0.0
	for _, pt := range pts {
		best = max(best, pt.Recall)
	}
	return math.NaN(), fmt.Sprintf("not reached: best recall %.4f", best)
}

// peerBench holds the set and the exact answers of the peers section.
type peerBench struct {
	set   *DenseSet
	dims  int
	w     int
	n, nq int
	// exact holds each query's exact float top-k ids (nq × denseK).
	exact [][]int32
	// binary holds each query's answer from the exhaustive binary search
	// with the same rescoring (nq × denseK).
	binary [][]int32
}

// exhaustiveBinary computes p.binary: a flat run (one list: every code's
// Hamming distance), its top RescoreFactor × k rescored by float dot
// product.
func (p *peerBench) exhaustiveBinary(ctx context.Context, docs []uint32) error {
	flat, err := ivf.Build(ctx, p.set.Codes, docs, p.w, ivf.Config{TrainMin: p.n + 1})
	if err != nil {
		return err
	}
	ids, _ := p.oursPass(flat, 1)
	p.binary = make([][]int32, p.nq)
	for q := range p.binary {
		p.binary[q] = ids[q*denseK : (q+1)*denseK]
	}
	return nil
}

// binaryIDs returns p.binary flattened.
func (p *peerBench) binaryIDs() []int32 {
	var out []int32
	for _, b := range p.binary {
		out = append(out, b...)
	}
	return out
}

func newPeerBench(set *DenseSet) *peerBench {
	return &peerBench{set: set, dims: set.Dims, w: ivf.Words(set.Dims), n: set.Len(), nq: len(set.QueryVectors) / set.Dims}
}

func (p *peerBench) vec(i int) []float32  { return p.set.Vectors[i*p.dims : (i+1)*p.dims] }
func (p *peerBench) qvec(i int) []float32 { return p.set.QueryVectors[i*p.dims : (i+1)*p.dims] }

// exactTop computes every query's exact top-k by float dot product over
// every vector (two goroutines).
func (p *peerBench) exactTop(ctx context.Context) {
	p.exact = make([][]int32, p.nq)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for q := g; q < p.nq && ctx.Err() == nil; q += 2 {
				top := newScoredTop(denseK)
				qv := p.qvec(q)
				for i := 0; i < p.n; i++ {
					top.offer(int32(i), search.Dot(qv, p.vec(i)))
				}
				p.exact[q] = top.ids()
			}
		}(g)
	}
	wg.Wait()
}

// oursPass runs every query through the run at nprobe as the engine's
// searchIVF does (RescoreFactor × k Hamming candidates, rescored by float
// dot product) and returns the ids and the seconds taken.
func (p *peerBench) oursPass(run *ivf.Run, nprobe int) ([]int32, float64) {
	ids := make([]int32, 0, p.nq*denseK)
	start := time.Now()
	for q := 0; q < p.nq; q++ {
		cands := ivf.NewTopK(denseK * search.RescoreFactor)
		_, _ = run.Search(p.set.Queries[q*p.w:(q+1)*p.w], nprobe, 0, uint32(p.n), nil, cands)
		top := newScoredTop(denseK)
		qv := p.qvec(q)
		for _, c := range cands.Sorted() {
			top.offer(int32(c.Doc), search.Dot(qv, p.vec(int(c.Doc))))
		}
		ids = append(ids, top.padded()...)
	}
	return ids, time.Since(start).Seconds()
}

// peerCurve returns the curve of peer's points in res (the fastest pass
// of each parameter), Recall against truth.
func (p *peerBench) peerCurve(res *PeerResult, peer string, truth [][]int32) []curvePoint {
	var out []curvePoint
	at := map[int]int{}
	for _, pt := range res.Points {
		if pt.Peer != peer {
			continue
		}
		qps := float64(p.nq) / pt.Seconds
		if i, ok := at[pt.Param]; ok {
			out[i].QPS = max(out[i].QPS, qps)
			continue
		}
		at[pt.Param] = len(out)
		out = append(out, curvePoint{Param: pt.Param, Recall: recallAgainst(pt.IDs, truth), FloatRecall: recallAgainst(pt.IDs, p.exact), QPS: qps})
	}
	return out
}

// recallAgainst returns the recall@k of ids (k per query) against
// truth's answers (k per query; -1 and missing entries are never hits).
func recallAgainst(ids []int32, truth [][]int32) float64 {
	hit := 0
	for q, want := range truth {
		got := ids[q*denseK : (q+1)*denseK]
		for _, e := range want {
			if e < 0 {
				continue
			}
			for _, g := range got {
				if g == e {
					hit++
					break
				}
			}
		}
	}
	return float64(hit) / float64(len(truth)*denseK)
}

// scoredTop keeps the k highest-scoring ids (insertion into a sorted
// slice; k is small).
type scoredTop struct {
	k      int
	list   []int32
	scores []float64
}

func newScoredTop(k int) *scoredTop { return &scoredTop{k: k} }

func (t *scoredTop) offer(id int32, s float64) {
	if len(t.list) == t.k && s <= t.scores[t.k-1] {
		return
	}
	i := sort.Search(len(t.scores), func(i int) bool { return t.scores[i] < s })
	if len(t.list) < t.k {
		t.list, t.scores = append(t.list, 0), append(t.scores, 0)
	}
	copy(t.list[i+1:], t.list[i:])
	copy(t.scores[i+1:], t.scores[i:])
	t.list[i], t.scores[i] = id, s
}

// ids returns the kept ids, best first.
func (t *scoredTop) ids() []int32 { return append([]int32(nil), t.list...) }

// padded returns the kept ids padded with -1 to k.
func (t *scoredTop) padded() []int32 {
	out := t.ids()
	for len(out) < t.k {
		out = append(out, -1)
	}
	return out
}
