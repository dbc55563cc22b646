package vectors

import (
	"context"
	"sort"
	"time"

	"github.com/summadev/summa/engine/ivf"
	"github.com/summadev/summa/engine/search"
)

// denseK is the k of every measured query.
const denseK = 10

// runDense measures the binary IVF of engine/ivf (the code path of the
// engine's ivf file and of search on binary fields) on the dense set:
// exact Hamming top-10 by brute force is the ground truth of the same run.
func runDense(ctx context.Context, cfg Config) error {
	opts := DenseOptions{MinDocs: 500000, CacheDir: cfg.CacheDir, Log: cfg.Logf}
	if cfg.Quick {
		opts.MinDocs, opts.MaxQueries, opts.Sample = 100000, 200, 15000
	}
	set, err := LoadDenseSet(opts)
	if err != nil {
		return err
	}
	b := &denseBench{set: set, w: ivf.Words(set.Dims), n: set.Len()}
	b.nq = len(set.Queries) / b.w
	cfg.Printf("dense set: %d vectors of %d bits, %d held-out queries (%s)", b.n, set.Dims, b.nq, set.Source)
	b.docs = make([]uint32, b.n)
	for i := range b.docs {
		b.docs[i] = uint32(i)
	}
	if err := b.groundTruth(ctx); err != nil {
		return err
	}
	cfg.Printf("exact Hamming brute force p50_ms: %.3f", ms(b.exactP50))

	start := time.Now()
	one, err := ivf.Build(ctx, set.Codes, b.docs, b.w, ivf.DefaultConfig())
	if err != nil {
		return err
	}
	coalesced := []*ivf.Run{one}
	cfg.Printf("binary_ivf build (one run, K=%d): %.1f s", one.Model.K, time.Since(start).Seconds())
	if err := b.nprobeCurve(ctx, cfg, coalesced); err != nil {
		return err
	}
	r, lat, sc := b.measure(coalesced, search.DefaultNprobe, false)
	b.printDefault(cfg, coalesced, r, lat, sc)
	return b.fragmented(ctx, cfg, r, lat, sc)
}

// denseBench is the state of one dense run: the set, its ground truth
// (each query's 10th exact distance) and the exact scans' latencies.
type denseBench struct {
	set  *DenseSet
	w    int // 64-bit words per code
	n    int // vectors
	nq   int // queries
	docs []uint32
	// flat is one cluster holding every code: the brute force scan.
	flat     *ivf.Run
	kth      []int
	exactP50 time.Duration
	// pairedExact holds each query's exact scan latency when measure runs
	// paired.
	pairedExact []time.Duration
}

// query returns query i's code.
func (b *denseBench) query(i int) []uint64 { return b.set.Queries[i*b.w : (i+1)*b.w] }

// groundTruth runs every query by brute force over every code with the
// same distance kernel (a flat run: one cluster): the 10th distance of
// each and the exact latency.
func (b *denseBench) groundTruth(ctx context.Context) error {
	flat, err := ivf.Build(ctx, b.set.Codes, b.docs, b.w, ivf.Config{TrainMin: b.n + 1})
	if err != nil {
		return err
	}
	b.flat = flat
	b.kth = make([]int, b.nq)
	b.pairedExact = make([]time.Duration, b.nq)
	lats := make([]time.Duration, b.nq)
	for i := 0; i < b.nq; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		top := ivf.NewTopK(denseK)
		if _, err := flat.Search(b.query(i), 1, 0, uint32(b.n), nil, top); err != nil {
			return err
		}
		lats[i] = time.Since(start)
		b.kth[i] = top.Bound()
	}
	b.exactP50 = p50(lats)
	return nil
}

// measure runs every query through runs and returns the recall@10, the
// p50 latency and the codes scanned per query. Paired, each IVF query is
// preceded by the same query's exact scan, whose latency goes to
// pairedExact (the speedup is then immune to load drifts).
func (b *denseBench) measure(runs []*ivf.Run, nprobe int, paired bool) (recall float64, lat time.Duration, scanned float64) {
	lats := make([]time.Duration, b.nq)
	var hit, total, codes int
	for i := 0; i < b.nq; i++ {
		q := b.query(i)
		if paired {
			start := time.Now()
			_, _ = b.flat.Search(q, 1, 0, uint32(b.n), nil, ivf.NewTopK(denseK))
			b.pairedExact[i] = time.Since(start)
		}
		start := time.Now()
		top := ivf.NewTopK(denseK)
		for _, r := range runs {
			s, _ := r.Search(q, nprobe, 0, uint32(b.n), nil, top)
			codes += s
		}
		lats[i] = time.Since(start)
		for _, c := range top.Sorted() {
			total++
			if c.Dist <= b.kth[i] { // ties with the 10th are correct answers
				hit++
			}
		}
	}
	return float64(hit) / float64(total), p50(lats), float64(codes) / float64(b.nq)
}

// nprobeCurve prints recall and latency over nprobe on runs.
func (b *denseBench) nprobeCurve(ctx context.Context, cfg Config, runs []*ivf.Run) error {
	cfg.Printf("recall/latency over nprobe (one coalesced run):")
	cfg.Printf("  nprobe  recall@10  p50_ms  codes_scanned  speedup (vs the exact p50 above)")
	for _, np := range []int{16, 32, 64, 128, 256, 384, 512, 768} {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, lat, sc := b.measure(runs, np, false)
		cfg.Printf("  %6d  %9.4f  %6.3f  %13.0f  %7.1f", np, r, ms(lat), sc, float64(b.exactP50)/float64(lat))
	}
	return nil
}

// printDefault prints the figures at the default nprobe (recall r,
// latency lat, codes scanned sc), the speedup against the lower of two
// exact p50s (the conservative one when the shared machine's load drifts
// between the loops), and the index's bytes per vector.
func (b *denseBench) printDefault(cfg Config, runs []*ivf.Run, r float64, lat time.Duration, sc float64) {
	exactAgain := exactP50s(b.flat, b.nq, b.query, uint32(b.n))
	exactMid := min(b.exactP50, exactAgain)
	_, coldLat, _ := b.measure(runs, search.DefaultNprobe, true)
	cfg.Printf("binary_ivf recall@10: %.4f", r)
	cfg.Printf("binary_ivf speedup vs exact: %.1f", float64(exactMid)/float64(lat))
	cfg.Printf("  (exact p50_ms %.3f before and %.3f after the IVF loop; each query right after its own exact scan, i.e. with caches flushed by it: exact %.3f, IVF %.3f, speedup %.1f)",
		ms(b.exactP50), ms(exactAgain), ms(p50(b.pairedExact)), ms(coldLat), float64(p50(b.pairedExact))/float64(coldLat))
	cfg.Printf("binary_ivf p50_ms: %.3f", ms(lat))
	cfg.Printf("binary_ivf codes scanned per query: %.0f", sc)
	cfg.Printf("binary_ivf default nprobe: %d", search.DefaultNprobe)
	cfg.Printf("binary_ivf index bytes per vector: %.2f (codes %d, doc id 4, centroids and offsets %.2f; the float vectors of the vec file are extra)",
		runBytes(runs)/float64(b.n), 8*b.w, (runBytes(runs)-float64(b.n*(8*b.w+4)))/float64(b.n))
}

// fragmented measures a merge of flush-size segments: their runs, each
// with its own model, concatenated without re-encoding, beside the
// coalesced run's figures (r, lat, sc).
func (b *denseBench) fragmented(ctx context.Context, cfg Config, r float64, lat time.Duration, sc float64) error {
	parts := 8
	var runs []*ivf.Run
	per := (b.n + parts - 1) / parts
	for p := 0; p < b.n; p += per {
		end := min(b.n, p+per)
		run, err := ivf.Build(ctx, b.set.Codes[p*b.w:end*b.w], b.docs[p:end], b.w, ivf.DefaultConfig())
		if err != nil {
			return err
		}
		runs = append(runs, run)
	}
	fr, flat2, fsc := b.measure(runs, search.DefaultNprobe, false)
	cfg.Printf("binary_ivf after a merge of %d runs (fragmented): recall@10 %.4f, p50_ms %.3f, codes scanned %.0f", len(runs), fr, ms(flat2), fsc)
	cfg.Printf("binary_ivf after coalescing (one run): recall@10 %.4f, p50_ms %.3f, codes scanned %.0f", r, ms(lat), sc)
	return nil
}

// exactP50s returns the p50 latency of brute-force scans of every query.
func exactP50s(flat *ivf.Run, nq int, query func(int) []uint64, n uint32) time.Duration {
	lats := make([]time.Duration, nq)
	for i := range lats {
		start := time.Now()
		_, _ = flat.Search(query(i), 1, 0, n, nil, ivf.NewTopK(denseK))
		lats[i] = time.Since(start)
	}
	return p50(lats)
}

// runBytes is the ivf file payload of runs: centroids, offsets (padded),
// codes and doc IDs (padded), as segment.writeIVF lays them out.
func runBytes(runs []*ivf.Run) float64 {
	var b int
	pad := func(n int) int { return (n + 7) &^ 7 }
	for _, r := range runs {
		b += 8*len(r.Model.Centroids) + pad(4*len(r.Offsets)) + 8*len(r.Codes) + pad(4*len(r.Docs))
	}
	return float64(b)
}

func p50(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
