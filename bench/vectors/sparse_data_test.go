package vectors

import (
	"reflect"
	"testing"
)

// TestLoadSparseSet: real text gives BM25-weighted windows with sorted,
// distinct dimensions and positive weights, held-out heading queries, and
// the same set twice.
func TestLoadSparseSet(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the whole benchmark corpus")
	}
	a, err := LoadSparseSet(SparseOptions{MinDocs: 3000, MaxQueries: 50, NoInstall: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Docs) < 3000 || len(a.Queries) == 0 || len(a.Queries) != len(a.QueryText) {
		t.Fatalf("%d docs, %d queries, %d texts", len(a.Docs), len(a.Queries), len(a.QueryText))
	}
	for i, v := range append(append([]SparseVec(nil), a.Docs...), a.Queries...) {
		if len(v.Dims) == 0 || len(v.Dims) != len(v.Weights) {
			t.Fatalf("vector %d: %d dims, %d weights", i, len(v.Dims), len(v.Weights))
		}
		for j := range v.Dims {
			if int(v.Dims[j]) >= len(a.Dims) || (j > 0 && v.Dims[j] <= v.Dims[j-1]) || !(v.Weights[j] > 0) {
				t.Fatalf("vector %d entry %d: dim %d weight %v", i, j, v.Dims[j], v.Weights[j])
			}
		}
	}
	b, err := LoadSparseSet(SparseOptions{MinDocs: 3000, MaxQueries: 50, NoInstall: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Docs[:100], b.Docs[:100]) || !reflect.DeepEqual(a.QueryText, b.QueryText) {
		t.Fatal("two loads differ")
	}
}
