package ivf

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/summadev/summa/engine/ivf/ivftest"
)

// opticks returns the paragraphs of Newton's Opticks (Go distribution).
func opticks(t testing.TB) []string {
	f, err := os.Open("/usr/local/go/src/testdata/Isaac.Newton-Opticks.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); len(line) > 20 {
			out = append(out, line)
		}
	}
	return out
}

func textCodes(t testing.TB, dims int) ([]uint64, []uint32) {
	lines := opticks(t)
	w := Words(dims)
	codes := make([]uint64, len(lines)*w)
	docs := make([]uint32, len(lines))
	for i, l := range lines {
		Encode(codes[i*w:(i+1)*w], ivftest.TextVector(l, dims))
		docs[i] = uint32(i)
	}
	return codes, docs
}

// exactTop returns the k-th smallest Hamming distance to q.
func kthDistance(codes []uint64, w int, q []uint64, k int) int {
	top := NewTopK(k)
	for i := 0; i < len(codes)/w; i++ {
		top.Push(Cand{Dist: Hamming(q, codes[i*w:(i+1)*w]), Doc: uint32(i)})
	}
	return top.Bound()
}

func TestBuildSearchRecall(t *testing.T) {
	const dims = 256
	codes, docs := textCodes(t, dims)
	w := Words(dims)
	cfg := DefaultConfig()
	cfg.TrainMin, cfg.PerCluster = 512, 64
	r, err := Build(context.Background(), codes, docs, w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Model.K < 8 {
		t.Fatalf("K = %d, want a trained model", r.Model.K)
	}
	if err := r.CheckFull(uint32(len(docs))); err != nil {
		t.Fatal(err)
	}
	// All clusters probed: exactly the brute-force answer.
	var hit, total, scannedSome int
	for qi := 0; qi < 200; qi++ {
		q := codes[qi*7%len(docs)*w:][:w]
		kth := kthDistance(codes, w, q, 10)
		full := NewTopK(10)
		n, err := r.Search(q, r.Model.K, 0, uint32(len(docs)), nil, full)
		if err != nil || n != len(docs) {
			t.Fatalf("full probe scanned %d of %d: %v", n, len(docs), err)
		}
		for _, c := range full.Sorted() {
			if c.Dist > kth {
				t.Fatalf("full probe returned distance %d > exact 10th %d", c.Dist, kth)
			}
		}
		part := NewTopK(10)
		n, _ = r.Search(q, r.Model.K/4, 0, uint32(len(docs)), nil, part)
		scannedSome += n
		for _, c := range part.Sorted() {
			total++
			if c.Dist <= kth {
				hit++
			}
		}
	}
	recall := float64(hit) / float64(total)
	t.Logf("K=%d recall@10 at nprobe=K/4: %.3f, scanned %.1f%%", r.Model.K, recall, 100*float64(scannedSome)/float64(200*len(docs)))
	if recall < 0.8 {
		t.Fatalf("recall %.3f at a quarter of the clusters", recall)
	}
}

func TestRemapKeepsModelAndClusters(t *testing.T) {
	codes, docs := textCodes(t, 128)
	cfg := DefaultConfig()
	cfg.TrainMin, cfg.PerCluster = 256, 64
	r, err := Build(context.Background(), codes, docs, 2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Drop odd docs, reverse the rest.
	n := uint32(len(docs))
	out := r.Remap(func(d uint32) (uint32, bool) { return n - 1 - d, d%2 == 0 })
	if out.Model != r.Model || out.Len() != (len(docs)+1)/2 {
		t.Fatalf("remap: model kept %v, %d entries", out.Model == r.Model, out.Len())
	}
	if err := out.CheckFull(n); err != nil {
		t.Fatal(err)
	}
}

func TestTrainIsDeterministic(t *testing.T) {
	codes, _ := textCodes(t, 256)
	cfg := DefaultConfig()
	a, _ := Train(context.Background(), codes, 4, 32, cfg)
	b, _ := Train(context.Background(), codes, 4, 32, cfg)
	if a.Hash() != b.Hash() {
		t.Fatal("same input, different models")
	}
}
