package vectors

import (
	"encoding/gob"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/summadev/summa/bench"
	"github.com/summadev/summa/engine/analysis"
	"github.com/summadev/summa/engine/ivf"
	"github.com/summadev/summa/internal/defaults"
	"gonum.org/v1/gonum/mat"
)

// DenseSet is a corpus of binary codes derived from real text: each
// vector is a window of tokens of linux-doc (then the Go distribution's
// text), weighted by TF-IDF, reduced to Dims dimensions by a randomized
// SVD and sign-binarized around each dimension's median. Queries are
// windows of held-out sections (every 50th), never indexed.
type DenseSet struct {
	// Source says where the text came from.
	Source string
	// Dims is the code width in bits.
	Dims int
	// Codes holds len(Codes)/Words codes back to back.
	Codes []uint64
	// Queries holds the held-out query codes back to back.
	Queries []uint64
	// Vectors holds, when DenseOptions.Floats asked for them, the float
	// vectors the codes are the signs of (Dims components each, back to
	// back): the reduced TF-IDF vector minus the dimensions' medians.
	Vectors []float32
	// QueryVectors holds the queries' float vectors likewise.
	QueryVectors []float32
}

// Len returns the number of indexed vectors.
func (s *DenseSet) Len() int { return len(s.Codes) / ivf.Words(s.Dims) }

// DenseOptions size a DenseSet.
type DenseOptions struct {
	// MinDocs is the number of vectors wanted.
	MinDocs int
	// Window and Stride cut the token stream of a section (32 and 10).
	Window, Stride int
	// Dims is the reduced dimension (256).
	Dims int
	// Vocab keeps the Vocab most frequent terms (16384).
	Vocab int
	// Sample is the number of windows the SVD is fitted on (30000).
	Sample int
	// MaxQueries bounds the held-out queries (1000).
	MaxQueries int
	// CacheDir keeps the set between runs ("" for none).
	CacheDir string
	// NoInstall never runs apt-get for the corpus (tests).
	NoInstall bool
	// Floats keeps the float vectors too (Vectors, QueryVectors): 4·Dims
	// bytes per vector more, in memory and in the cache.
	Floats bool
	// Log receives progress (may be nil).
	Log func(format string, args ...any)
}

func (o *DenseOptions) defaults() {
	defaults.Set(&o.Window, 32)
	defaults.Set(&o.Stride, 10)
	defaults.Set(&o.Dims, 256)
	defaults.Set(&o.Vocab, 16384)
	defaults.Set(&o.Sample, 30000)
	defaults.Set(&o.MaxQueries, 1000)
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
}

// LoadDenseSet derives (or reads from the cache) the dense set.
func LoadDenseSet(opts DenseOptions) (*DenseSet, error) {
	opts.defaults()
	cache := ""
	if opts.CacheDir != "" {
		kind := "v1"
		if opts.Floats {
			kind = "v1f"
		}
		cache = filepath.Join(opts.CacheDir, fmt.Sprintf("dense-%s-%d-%d-%d-%d-%d-%d-%d.gob",
			kind, opts.MinDocs, opts.Window, opts.Stride, opts.Dims, opts.Vocab, opts.Sample, opts.MaxQueries))
		if f, err := os.Open(cache); err == nil {
			defer f.Close()
			var s DenseSet
			if err := gob.NewDecoder(f).Decode(&s); err == nil && s.Len() > 0 {
				opts.Log("dense set: %d vectors, %d queries from the cache %s", s.Len(), len(s.Queries)/ivf.Words(s.Dims), cache)
				return &s, nil
			}
		}
	}
	s, err := deriveDenseSet(opts)
	if err != nil {
		return nil, err
	}
	if cache != "" {
		if f, err := os.Create(cache + ".tmp"); err == nil {
			if gob.NewEncoder(f).Encode(s) == nil && f.Close() == nil {
				os.Rename(cache+".tmp", cache)
			} else {
				f.Close()
				os.Remove(cache + ".tmp")
			}
		}
	}
	return s, nil
}

// deriveDenseSet cuts the windows, fits the projection and encodes.
func deriveDenseSet(opts DenseOptions) (*DenseSet, error) {
	termOf := map[string]int32{}
	var windows, queries [][]int32
	var sources []string
	for _, fallback := range []bool{false, true} {
		c, err := bench.PrepareCorpus(bench.CorpusOptions{PrepareOptions: bench.PrepareOptions{NoInstall: opts.NoInstall}, ForceFallback: fallback})
		if err != nil {
			return nil, fmt.Errorf("vectors: dense set: %w", err)
		}
		sources = append(sources, c.Name)
		for i := range c.Docs {
			d := &c.Docs[i]
			var toks []int32
			analysis.Tokenize(d.Title+"\n"+d.Body, func(t string, _ uint32) {
				id, ok := termOf[t]
				if !ok {
					id = int32(len(termOf))
					termOf[t] = id
				}
				toks = append(toks, id)
			})
			held := i%50 == 0
			for start := 0; start < len(toks); start += opts.Stride {
				end := min(start+opts.Window, len(toks))
				if end-start < opts.Window/2 {
					break
				}
				if held {
					if len(queries) < opts.MaxQueries {
						queries = append(queries, toks[start:end])
					}
				} else {
					windows = append(windows, toks[start:end])
				}
				if end == len(toks) {
					break
				}
			}
		}
		if !c.LinuxDoc || len(windows) >= opts.MinDocs {
			break
		}
	}
	if opts.MinDocs > 0 && len(windows) > opts.MinDocs {
		windows = windows[:opts.MinDocs]
	}
	opts.Log("dense set: %d windows of %d tokens (stride %d), %d held-out query windows, %d terms (%s)",
		len(windows), opts.Window, opts.Stride, len(queries), len(termOf), strings.Join(sources, " + "))
	if len(windows) < 2*opts.Dims || len(queries) == 0 {
		return nil, fmt.Errorf("vectors: dense set: %d windows and %d queries are too few", len(windows), len(queries))
	}
	tf := newTFIDF(windows, len(termOf), opts.Vocab)
	proj, err := fitProjection(tf, windows, opts)
	if err != nil {
		return nil, err
	}
	s := &DenseSet{Source: strings.Join(sources, " + "), Dims: opts.Dims}
	median := proj.medians(tf, windows, opts.Sample)
	s.Codes, s.Vectors = proj.encode(tf, windows, median, opts.Floats)
	s.Queries, s.QueryVectors = proj.encode(tf, queries, median, opts.Floats)
	return s, nil
}

// tfidf maps terms to the kept vocabulary and weights windows.
type tfidf struct {
	col []int32   // term -> column, -1 when dropped
	idf []float64 // per column
}

func newTFIDF(windows [][]int32, nTerms, vocab int) *tfidf {
	df := make([]int, nTerms)
	seen := make([]int32, nTerms)
	for i := range seen {
		seen[i] = -1
	}
	for w, toks := range windows {
		for _, t := range toks {
			if seen[t] != int32(w) {
				seen[t] = int32(w)
				df[t]++
			}
		}
	}
	order := make([]int32, nTerms)
	for i := range order {
		order[i] = int32(i)
	}
	sort.Slice(order, func(i, j int) bool {
		if df[order[i]] != df[order[j]] {
			return df[order[i]] > df[order[j]]
		}
		return order[i] < order[j]
	})
	t := &tfidf{col: make([]int32, nTerms)}
	for i := range t.col {
		t.col[i] = -1
	}
	n := float64(len(windows))
	for c, term := range order[:min(vocab, len(order))] {
		if df[term] < 2 {
			break
		}
		t.col[term] = int32(c)
		t.idf = append(t.idf, math.Log(n/float64(df[term])))
	}
	return t
}

// row returns a window's L2-normalized TF-IDF entries (columns, weights).
func (t *tfidf) row(toks []int32, cols []int32, vals []float64) ([]int32, []float64) {
	cols, vals = cols[:0], vals[:0]
	counts := map[int32]int{}
	for _, tok := range toks {
		if c := t.col[tok]; c >= 0 {
			counts[c]++
		}
	}
	for c := range counts {
		cols = append(cols, c)
	}
	sort.Slice(cols, func(i, j int) bool { return cols[i] < cols[j] })
	var norm float64
	for _, c := range cols {
		v := (1 + math.Log(float64(counts[c]))) * t.idf[c]
		vals = append(vals, v)
		norm += v * v
	}
	if norm > 0 {
		norm = 1 / math.Sqrt(norm)
		for i := range vals {
			vals[i] *= norm
		}
	}
	return cols, vals
}

// projection is the Vocab × Dims matrix of the top right singular
// vectors, row-major by column of the TF-IDF matrix.
type projection struct {
	dims int
	p    []float64
}

// fitProjection runs a randomized SVD (Halko et al.: Gaussian range
// finder, one power iteration, Cholesky-QR orthonormalization, exact SVD
// of the small projected matrix) on an evenly strided sample of windows.
func fitProjection(tf *tfidf, windows [][]int32, opts DenseOptions) (*projection, error) {
	v := len(tf.idf)
	l := opts.Dims + 16
	step := max(1, len(windows)/opts.Sample)
	type srow struct {
		cols []int32
		vals []float64
	}
	var rows []srow
	for i := 0; i < len(windows) && len(rows) < opts.Sample; i += step {
		c, x := tf.row(windows[i], nil, nil)
		rows = append(rows, srow{c, x})
	}
	s := len(rows)
	opts.Log("dense set: randomized SVD of a %d × %d TF-IDF sample to %d dimensions", s, v, opts.Dims)
	rng := rand.New(rand.NewPCG(42, 256))
	omega := mat.NewDense(v, l, nil)
	for i := 0; i < v; i++ {
		for j := 0; j < l; j++ {
			omega.Set(i, j, rng.NormFloat64())
		}
	}
	// mul is A·M for the sparse sample A and a dense v × l matrix M, or
	// with trans Aᵀ·M for a dense s × l matrix M.
	mul := func(m *mat.Dense, trans bool) *mat.Dense {
		out := mat.NewDense(s, l, nil)
		if trans {
			out = mat.NewDense(v, l, nil)
		}
		for i, r := range rows {
			for k, c := range r.cols {
				dst, src := out.RawRowView(i), m.RawRowView(int(c))
				if trans {
					dst, src = out.RawRowView(int(c)), m.RawRowView(i)
				}
				a := r.vals[k]
				for j := range dst {
					dst[j] += a * src[j]
				}
			}
		}
		return out
	}
	times := func(m *mat.Dense) *mat.Dense { return mul(m, false) }
	transTimes := func(y *mat.Dense) *mat.Dense { return mul(y, true) }
	y := times(omega)
	if err := orthonormalize(y); err != nil {
		return nil, err
	}
	z := transTimes(y)
	y = times(z)
	if err := orthonormalize(y); err != nil {
		return nil, err
	}
	bt := transTimes(y) // (Qᵀ A)ᵀ: v × l
	var svd mat.SVD
	if !svd.Factorize(bt, mat.SVDThin) {
		return nil, fmt.Errorf("vectors: dense set: SVD did not converge")
	}
	var u mat.Dense
	svd.UTo(&u) // left singular vectors of Bᵀ = right singular vectors of B
	p := &projection{dims: opts.Dims, p: make([]float64, v*opts.Dims)}
	for i := 0; i < v; i++ {
		copy(p.p[i*opts.Dims:(i+1)*opts.Dims], u.RawRowView(i)[:opts.Dims])
	}
	return p, nil
}

// orthonormalize replaces the columns of y by an orthonormal basis of
// their span (Cholesky QR, twice for accuracy).
func orthonormalize(y *mat.Dense) error {
	_, l := y.Dims()
	for pass := 0; pass < 2; pass++ {
		var g mat.SymDense
		g.SymOuterK(1, y.T())
		for i := 0; i < l; i++ {
			g.SetSym(i, i, g.At(i, i)+1e-12)
		}
		var ch mat.Cholesky
		if !ch.Factorize(&g) {
			return fmt.Errorf("vectors: dense set: Gram matrix not positive definite")
		}
		var r mat.TriDense
		ch.UTo(&r)
		var rinv mat.TriDense
		if err := rinv.InverseTri(&r); err != nil {
			return fmt.Errorf("vectors: dense set: %w", err)
		}
		var q mat.Dense
		q.Mul(y, &rinv)
		y.Copy(&q)
	}
	return nil
}

// project returns a window's reduced vector.
func (p *projection) project(tf *tfidf, toks []int32, out []float64, cols []int32, vals []float64) {
	clear(out)
	cols, vals = tf.row(toks, cols, vals)
	for k, c := range cols {
		a := vals[k]
		src := p.p[int(c)*p.dims : (int(c)+1)*p.dims]
		for j := range out {
			out[j] += a * src[j]
		}
	}
}

// medians returns each dimension's median over a sample of windows, so
// that every bit is set for about half the vectors.
func (p *projection) medians(tf *tfidf, windows [][]int32, sample int) []float64 {
	step := max(1, len(windows)/sample)
	cols := make([][]float64, p.dims)
	out := make([]float64, p.dims)
	for i := 0; i < len(windows); i += step {
		p.project(tf, windows[i], out, nil, nil)
		for j, x := range out {
			cols[j] = append(cols[j], x)
		}
	}
	for j := range out {
		sort.Float64s(cols[j])
		out[j] = cols[j][len(cols[j])/2]
	}
	return out
}

// encode returns the sign codes of windows around the medians and, when
// floats is set, the float vectors they are the signs of.
func (p *projection) encode(tf *tfidf, windows [][]int32, median []float64, floats bool) ([]uint64, []float32) {
	w := ivf.Words(p.dims)
	codes := make([]uint64, len(windows)*w)
	var vecs []float32
	if floats {
		vecs = make([]float32, 0, len(windows)*p.dims)
	}
	x := make([]float64, p.dims)
	v := make([]float32, p.dims)
	var cols []int32
	var vals []float64
	for i, toks := range windows {
		p.project(tf, toks, x, cols, vals)
		for j := range x {
			v[j] = float32(x[j] - median[j])
		}
		ivf.Encode(codes[i*w:(i+1)*w], v)
		if floats {
			vecs = append(vecs, v...)
		}
	}
	return codes, vecs
}
