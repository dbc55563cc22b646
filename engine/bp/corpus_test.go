package bp

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/summadev/summa/engine/analysis"
)

// corpus is the real-text test graph, built once.
var corpus struct {
	once sync.Once
	g    *Graph
	err  error
}

// realGraph returns a graph of the paragraphs of Newton's Opticks and the
// comment blocks of net/http, in a shuffled (fixed seed) document order.
func realGraph(t testing.TB) *Graph {
	t.Helper()
	corpus.once.Do(func() { corpus.g, corpus.err = buildRealGraph() })
	if corpus.err != nil {
		t.Fatalf("corpus: %v", corpus.err)
	}
	return corpus.g
}

// buildRealGraph reads the texts, shuffles them and builds the graph.
func buildRealGraph() (*Graph, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return nil, err
	}
	goroot := strings.TrimSpace(string(out))
	docs, err := paragraphs(filepath.Join(goroot, "src", "testdata", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(goroot, "src", "net", "http", "*.go"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		blocks, err := commentBlocks(f)
		if err != nil {
			return nil, err
		}
		docs = append(docs, blocks...)
	}
	rng := rand.New(rand.NewPCG(2016, 2021))
	rng.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
	ids := map[string]uint32{}
	var termDocs [][]uint32
	for _, d := range docs {
		var ts []uint32
		for _, w := range analysis.Terms(d) {
			id, ok := ids[w]
			if !ok {
				id = uint32(len(ids))
				ids[w] = id
			}
			ts = append(ts, id)
		}
		termDocs = append(termDocs, ts)
	}
	b := NewBuilder(uint32(len(ids)))
	for _, ts := range termDocs {
		if err := b.Add(ts); err != nil {
			return nil, err
		}
	}
	return b.Graph(), nil
}

// paragraphs returns the blank-line separated paragraphs of a file that
// have at least 3 terms.
func paragraphs(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n\n") {
		if len(analysis.Terms(p)) >= 3 {
			out = append(out, p)
		}
	}
	return out, nil
}

// commentBlocks returns the runs of consecutive // comment lines of a Go
// file that have at least 3 terms.
func commentBlocks(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	var cur []string
	flush := func() {
		if b := strings.Join(cur, "\n"); len(analysis.Terms(b)) >= 3 {
			out = append(out, b)
		}
		cur = cur[:0]
	}
	for _, line := range strings.Split(string(data), "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "//") {
			cur = append(cur, strings.TrimPrefix(l, "//"))
		} else if len(cur) > 0 {
			flush()
		}
	}
	if len(cur) > 0 {
		flush()
	}
	return out, nil
}

// varintBytes returns the size of g's postings under order, each posting
// list delta coded (gap minus one) with uvarints.
func varintBytes(g *Graph, order []uint32) int {
	last := make([]int64, g.NumTerms)
	for i := range last {
		last[i] = -1
	}
	var buf [binary.MaxVarintLen64]byte
	size := 0
	for p, d := range order {
		for _, t := range g.docTerms(d) {
			size += binary.PutUvarint(buf[:], uint64(int64(p)-last[t]-1))
			last[t] = int64(p)
		}
	}
	return size
}

// identity returns 0..n-1.
func identity(n int) []uint32 {
	o := make([]uint32, n)
	for i := range o {
		o[i] = uint32(i)
	}
	return o
}

// checkPerm fails t unless order is a permutation of 0..n-1.
func checkPerm(t *testing.T, order []uint32, n int) {
	t.Helper()
	if len(order) != n {
		t.Fatalf("order has %d entries, want %d", len(order), n)
	}
	seen := make([]bool, n)
	for i, d := range order {
		if int(d) >= n || seen[d] {
			t.Fatalf("order[%d] = %d: out of range or repeated", i, d)
		}
		seen[d] = true
	}
}
