package vectors

import (
	"math/bits"
	"slices"
	"testing"

	"github.com/summadev/summa/engine/ivf"
)

// TestLoadDenseSet: real text gives codes whose bits are balanced (the
// median split), held-out queries that are not copies of indexed
// vectors, and the same set twice.
func TestLoadDenseSet(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the benchmark corpus")
	}
	opts := DenseOptions{MinDocs: 4000, Dims: 64, Vocab: 2000, Sample: 2000, MaxQueries: 40, NoInstall: true}
	a, err := LoadDenseSet(opts)
	if err != nil {
		t.Fatal(err)
	}
	w := ivf.Words(a.Dims)
	if a.Len() != 4000 || len(a.Queries) != 40*w {
		t.Fatalf("%d vectors, %d query words", a.Len(), len(a.Queries))
	}
	for b := 0; b < a.Dims; b++ {
		set := 0
		for i := 0; i < a.Len(); i++ {
			set += int(a.Codes[i*w+b/64] >> (b % 64) & 1)
		}
		if set < a.Len()/5 || set > a.Len()*4/5 {
			t.Fatalf("bit %d set in %d of %d vectors", b, set, a.Len())
		}
	}
	distinct := map[uint64]bool{}
	for i := 0; i < a.Len(); i++ {
		distinct[a.Codes[i]] = true
	}
	if len(distinct) < a.Len()/2 {
		t.Fatalf("only %d distinct codes of %d", len(distinct), a.Len())
	}
	var pop int
	for _, x := range a.Queries {
		pop += bits.OnesCount64(x)
	}
	if pop == 0 {
		t.Fatal("all-zero queries")
	}
	b, err := LoadDenseSet(opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Codes, b.Codes) || !slices.Equal(a.Queries, b.Queries) {
		t.Fatal("two loads differ")
	}
}
