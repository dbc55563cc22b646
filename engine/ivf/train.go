package ivf

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
)

// Model is a coarse quantizer: K centroids of Words words each.
type Model struct {
	// K is the number of clusters (1 for a flat run).
	K int
	// Words is the code width in 64-bit words.
	Words int
	// Centroids holds K codes back to back.
	Centroids []uint64
}

// Hash identifies the model: FNV-64a of the quantizer, K, Words and the
// centroid words. Runs encoded with the same model have the same hash.
func (m *Model) Hash() uint64 { return ModelHash(m.K, m.Words, m.Centroids) }

// ModelHash is Model.Hash for a model given by its parts.
func ModelHash(k, words int, centroids []uint64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, x := range []uint64{QuantizerSign, uint64(k), uint64(words)} {
		binary.LittleEndian.PutUint64(b[:], x)
		h.Write(b[:])
	}
	for _, x := range centroids {
		binary.LittleEndian.PutUint64(b[:], x)
		h.Write(b[:])
	}
	return h.Sum64()
}

// Config decides how a run is encoded.
type Config struct {
	// TrainMin is the number of vectors from which centroids are trained;
	// a smaller run is flat (one cluster, scanned whole).
	TrainMin int
	// PerCluster is the target mean cluster size: K = n / PerCluster,
	// clamped to [1, MaxK].
	PerCluster int
	// MaxK bounds K.
	MaxK int
	// Iterations of k-majority.
	Iterations int
	// SamplePerCluster bounds the training sample to SamplePerCluster × K codes.
	SamplePerCluster int
}

// DefaultConfig is the encoding used by segments: clusters of about 64
// codes (measured by make bench-vectors, docs/performance.md: smaller
// clusters give better recall for the codes scanned), trained on 16
// sampled codes per centroid.
func DefaultConfig() Config {
	return Config{TrainMin: 2048, PerCluster: 64, MaxK: 16384, Iterations: 8, SamplePerCluster: 16}
}

// clusters returns K for n vectors.
func (c Config) clusters(n int) int {
	if n < c.TrainMin || c.PerCluster <= 0 {
		return 1
	}
	k := n / c.PerCluster
	return max(1, min(k, c.MaxK))
}

// Train returns a model for the n codes of words words each (codes holds
// them back to back): k-majority clustering, Hamming assignment and
// per-bit majority update, on a deterministic sample. k == 1 gives the
// flat model (an all-zero centroid). It stops with ctx's error between
// iterations and every few thousand assignments.
func Train(ctx context.Context, codes []uint64, words, k int, cfg Config) (*Model, error) {
	n := len(codes) / words
	m := &Model{K: k, Words: words, Centroids: make([]uint64, k*words)}
	if k <= 1 || n == 0 {
		m.K = 1
		m.Centroids = m.Centroids[:words]
		return m, nil
	}
	rng := rand.New(rand.NewPCG(uint64(n), uint64(k)))
	sample := codes
	if s := cfg.SamplePerCluster * k; s > 0 && s < n {
		idx := rng.Perm(n)[:s]
		sample = make([]uint64, 0, s*words)
		for _, i := range idx {
			sample = append(sample, codes[i*words:(i+1)*words]...)
		}
	}
	ns := len(sample) / words
	for c, i := range rng.Perm(ns)[:min(k, ns)] {
		copy(m.Centroids[c*words:], sample[i*words:(i+1)*words])
	}
	assign := make([]int32, ns)
	counts := make([]int, k*words*64)
	sizes := make([]int, k)
	for it := 0; it < max(1, cfg.Iterations); it++ {
		changed, err := assignAll(ctx, m, sample, assign)
		if err != nil {
			return nil, err
		}
		clear(counts)
		clear(sizes)
		for i, c := range assign {
			sizes[c]++
			code := sample[i*words : (i+1)*words]
			base := int(c) * words * 64
			for w, x := range code {
				for x != 0 {
					b := bits.TrailingZeros64(x)
					counts[base+w*64+b]++
					x &= x - 1
				}
			}
		}
		for c := 0; c < k; c++ {
			cen := m.Centroids[c*words : (c+1)*words]
			if sizes[c] == 0 {
				// Reseed an empty cluster with a random sample code.
				i := rng.IntN(ns)
				copy(cen, sample[i*words:(i+1)*words])
				continue
			}
			clear(cen)
			base := c * words * 64
			for b := 0; b < words*64; b++ {
				if 2*counts[base+b] > sizes[c] {
					cen[b>>6] |= 1 << (uint(b) & 63)
				}
			}
		}
		if it > 0 && changed == 0 {
			break
		}
	}
	return m, nil
}

// assignAll assigns every code to its nearest centroid and returns how
// many assignments changed.
func assignAll(ctx context.Context, m *Model, codes []uint64, assign []int32) (int, error) {
	changed := 0
	for i := range assign {
		if i%4096 == 4095 && ctx.Err() != nil {
			return 0, fmt.Errorf("ivf: train: %w", ctx.Err())
		}
		c := int32(m.Assign(codes[i*m.Words : (i+1)*m.Words]))
		if c != assign[i] {
			changed++
		}
		assign[i] = c
	}
	return changed, nil
}

// Assign returns the nearest centroid of code (the lowest index on ties).
func (m *Model) Assign(code []uint64) int {
	best, bestD := 0, math.MaxInt
	w := m.Words
	for c := 0; c < m.K; c++ {
		var d int
		if w == 4 {
			d = hamming4(code, m.Centroids[c*4:])
		} else {
			d = Hamming(code, m.Centroids[c*w:(c+1)*w])
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
