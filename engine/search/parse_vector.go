package search

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"sort"

	"github.com/summadev/summa/engine/schema"
)

// MaxK bounds the k of a dense vector query.
const MaxK = 10000

// DefaultK is the k of a dense vector query that does not give one.
const DefaultK = 10

// vectorQueryJSON is the JSON object form of a query.
type vectorQueryJSON struct {
	// Dense is {"field":F,"vector":[...],"k":K}.
	Dense *struct {
		Field  string    `json:"field"`
		Vector []float64 `json:"vector"`
		K      *int      `json:"k"`
	} `json:"dense"`
	// Sparse is {"field":F,"vector":{"dim":weight,...}}.
	Sparse *struct {
		Field  string             `json:"field"`
		Vector map[string]float64 `json:"vector"`
	} `json:"sparse"`
}

// parseVector reads a JSON object query.
func parseVector(s *schema.Schema, data []byte) (Query, error) {
	var v vectorQueryJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return nil, queryErr("malformed vector query: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, queryErr("malformed vector query: trailing data")
	}
	switch {
	case v.Dense != nil && v.Sparse != nil:
		return nil, queryErr("a vector query is either dense or sparse, not both")
	case v.Dense != nil:
		return denseQuery(s, v.Dense.Field, v.Dense.Vector, v.Dense.K)
	case v.Sparse != nil:
		return sparseQuery(s, v.Sparse.Field, v.Sparse.Vector)
	}
	return nil, queryErr(`a JSON query needs "dense" or "sparse"`)
}

// vectorField resolves the field of a vector query and checks its type.
func vectorField(s *schema.Schema, name string, want schema.FieldType) (int, *schema.Field, error) {
	if name == "" {
		return 0, nil, queryErr("%s query: missing field", want)
	}
	ord, ok := s.Field(name)
	if !ok {
		return 0, nil, queryErr("unknown field %q", name)
	}
	f := &s.Fields[ord]
	if f.Type != want {
		return 0, nil, queryErr("field %q is %s, not %s", name, f.Type, want)
	}
	if !f.IsIndexed() {
		return 0, nil, queryErr("field %q is not indexed", name)
	}
	return ord, f, nil
}

func denseQuery(s *schema.Schema, name string, vec []float64, k *int) (Query, error) {
	ord, f, err := vectorField(s, name, schema.DenseVector)
	if err != nil {
		return nil, err
	}
	if len(vec) != f.Dims {
		return nil, queryErr("field %q has %d dimensions, the query vector %d", name, f.Dims, len(vec))
	}
	q := &DenseQuery{Field: ord, Vector: make([]float32, len(vec)), K: DefaultK}
	for i, x := range vec {
		if math.IsNaN(x) || math.Abs(x) > math.MaxFloat32 {
			return nil, queryErr("dimension %d of the query vector is not a finite float32", i)
		}
		q.Vector[i] = float32(x)
	}
	if k != nil {
		if *k < 1 || *k > MaxK {
			return nil, queryErr("k must be between 1 and %d, got %d", MaxK, *k)
		}
		q.K = *k
	}
	return q, nil
}

func sparseQuery(s *schema.Schema, name string, vec map[string]float64) (Query, error) {
	ord, _, err := vectorField(s, name, schema.SparseVector)
	if err != nil {
		return nil, err
	}
	if len(vec) == 0 {
		return nil, queryErr("sparse query on %q: empty vector", name)
	}
	if len(vec) > MaxClauses {
		return nil, queryErr("sparse query on %q: %d dimensions, at most %d allowed", name, len(vec), MaxClauses)
	}
	q := &SparseQuery{Field: ord, Vector: make([]schema.SparseEntry, 0, len(vec))}
	for dim, w := range vec {
		if dim == "" || len(dim) > schema.MaxTermBytes {
			return nil, queryErr("sparse query on %q: dimension names must have 1 to %d bytes", name, schema.MaxTermBytes)
		}
		if math.IsNaN(w) || math.Abs(w) > math.MaxFloat32 {
			return nil, queryErr("sparse query on %q: weight of %q is not a finite float32", name, dim)
		}
		q.Vector = append(q.Vector, schema.SparseEntry{Dim: dim, Weight: float32(w)})
	}
	sort.Slice(q.Vector, func(i, j int) bool { return q.Vector[i].Dim < q.Vector[j].Dim })
	return q, nil
}
