package vectors

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/summadev/summa/engine/ivf"
	"github.com/summadev/summa/engine/search"
)

// requireFaiss is the variable that turns the peer tests' skip (no
// python3-faiss, python3-hnswlib or python3-numpy) into a failure.
const requireFaiss = "SUMMA_BENCH_REQUIRE_FAISS"

// requirePeers skips the test where the driver cannot run, unless
// SUMMA_BENCH_REQUIRE_FAISS=1.
func requirePeers(t *testing.T) {
	t.Helper()
	if why := PeersAvailable(); why != "" {
		if os.Getenv(requireFaiss) == "1" {
			t.Fatalf("peers: %s (%s=1 requires them)", why, requireFaiss)
		}
		t.Skipf("peers: %s; install %s to run this test (set %s=1 to fail instead of skipping)", why, strings.Join(PeerPackages, " "), requireFaiss)
	}
}

// smallPeerSet returns n random Gaussian vectors of dims components and
// nq queries, with their sign codes.
func smallPeerSet(n, nq, dims int) *DenseSet {
	rng := rand.New(rand.NewPCG(7, 33))
	gen := func(m int) []float32 {
		v := make([]float32, m*dims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	s := &DenseSet{Source: "gaussian", Dims: dims, Vectors: gen(n), QueryVectors: gen(nq)}
	s.Codes, s.Queries = ivf.EncodeAll(s.Vectors, dims), ivf.EncodeAll(s.QueryVectors, dims)
	return s
}

// TestPeerDriverAgreesWithExact runs the Python driver on a small sample
// and checks it against exact answers computed here: FAISS's binary IVF
// probing every list, with the same 40-candidate rescoring, returns what
// our exhaustive Hamming scan rescored the same way returns (the same
// codes, byte layout and rescoring), and hnswlib at a large ef finds the
// exact float top 10 (the same float vectors and queries).
func TestPeerDriverAgreesWithExact(t *testing.T) {
	requirePeers(t)
	const n, nq, dims, nlist = 2000, 40, 64, 16
	set := smallPeerSet(n, nq, dims)
	p := newPeerBench(set)
	ctx := context.Background()
	p.exactTop(ctx)
	docs := make([]uint32, n)
	for i := range docs {
		docs[i] = uint32(i)
	}
	flat, err := ivf.Build(ctx, set.Codes, docs, p.w, ivf.Config{TrainMin: n + 1})
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := p.oursPass(flat, 1)
	in := &PeerInput{Dims: dims, Vectors: set.Vectors, Queries: set.QueryVectors, Codes: set.Codes, QueryCodes: set.Queries,
		K: denseK, Peers: []string{"faiss", "hnswlib"}, Nlist: nlist, TrainIterations: 8, TrainSamplePerList: 64,
		Rescore: search.RescoreFactor * denseK, Nprobes: []int{nlist}, M: 16, EfConstruction: 200, Efs: []int{400}, Passes: 1}
	res, err := RunPeers(ctx, t.TempDir(), in, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	faiss, hnsw := p.peerCurve(res, "faiss", p.exact), p.peerCurve(res, "hnswlib", p.exact)
	if len(faiss) != 1 || len(hnsw) != 1 {
		t.Fatalf("curves: faiss %v, hnswlib %v", faiss, hnsw)
	}
	var faissIDs []int32
	for _, pt := range res.Points {
		if pt.Peer == "faiss" {
			faissIDs = pt.IDs
		}
	}
	// Codes at the 40th Hamming distance tie often: every answer must be
	// among the codes at most at the exact 40th distance.
	if bad := outsideHammingTop(set, faissIDs, in.Rescore); bad > 0 {
		t.Errorf("faiss at nprobe=nlist: %d answers are not among the %d nearest codes", bad, in.Rescore)
	}
	oursRecall := recallAgainst(ours, p.exact)
	if math.Abs(faiss[0].Recall-oursRecall) > 0.01 {
		t.Errorf("recall@10: faiss %.4f, ours %.4f", faiss[0].Recall, oursRecall)
	}
	if hnsw[0].Recall < 0.99 {
		t.Errorf("hnswlib at ef=400 on %d vectors: recall@10 %.4f against the exact answers, want >= 0.99", n, hnsw[0].Recall)
	}
	// Rescoring every vector is the exact float search.
	in.Peers, in.Rescore = []string{"faiss"}, n
	all, err := RunPeers(ctx, t.TempDir(), in, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.peerCurve(all, "faiss", p.exact); len(c) != 1 || c[0].Recall != 1 {
		t.Errorf("faiss rescoring all %d vectors: %v, want recall 1", n, c)
	}
	if res.Build["faiss"] <= 0 || res.Build["hnswlib"] <= 0 || faiss[0].QPS <= 0 || hnsw[0].QPS <= 0 {
		t.Errorf("builds %v, curves %v %v", res.Build, faiss, hnsw)
	}
}

// outsideHammingTop counts the answers (denseK per query) farther from
// their query's code than its exact c-th nearest code.
func outsideHammingTop(set *DenseSet, ids []int32, c int) int {
	w := ivf.Words(set.Dims)
	bad := 0
	for q := 0; q < len(set.Queries)/w; q++ {
		qc := set.Queries[q*w : (q+1)*w]
		d := make([]int, set.Len())
		for i := range d {
			d[i] = ivf.Hamming(qc, set.Codes[i*w:(i+1)*w])
		}
		sorted := slices.Clone(d)
		slices.Sort(sorted)
		for _, id := range ids[q*denseK : (q+1)*denseK] {
			if id < 0 || d[id] > sorted[c-1] {
				bad++
			}
		}
	}
	return bad
}

// TestQPSAt: linear interpolation between the points around the target,
// a lower bound when the first point is above it, NaN when none reaches.
func TestQPSAt(t *testing.T) {
	c := []curvePoint{{Param: 64, Recall: 0.96, QPS: 1000}, {Param: 16, Recall: 0.90, QPS: 4000}, {Param: 32, Recall: 0.94, QPS: 2000}}
	if q, how := qpsAt(c, 0.95); math.Abs(q-1500) > 1e-6 {
		t.Errorf("qpsAt 0.95 = %v (%s), want 1500", q, how)
	}
	if q, _ := qpsAt(c, 0.5); q != 4000 {
		t.Errorf("qpsAt 0.5 = %v, want the first point's 4000", q)
	}
	if q, how := qpsAt(c, 0.99); !math.IsNaN(q) || !strings.Contains(how, "0.9600") {
		t.Errorf("qpsAt 0.99 = %v (%s), want NaN, best recall 0.9600", q, how)
	}
	if r := ratio(3, math.NaN()); !strings.HasPrefix(r, "n/a") {
		t.Errorf("ratio with NaN = %q", r)
	}
}

// TestCodeBytes: FAISS's byte codes are the words little-endian.
func TestCodeBytes(t *testing.T) {
	got := codeBytes([]uint64{0x0807060504030201, 0x100f0e0d0c0b0a09}, 1, 8)
	for i, b := range got {
		if int(b) != i%8+1+8*(i/8) {
			t.Fatalf("codeBytes = %v", got)
		}
	}
	if len(got) != 16 {
		t.Fatalf("codeBytes = %v", got)
	}
}
