package search

import (
	"encoding/json"

	"github.com/summadev/summa/engine/internal/strictjson"
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
		Field  string          `json:"field"`
		Vector json.RawMessage `json:"vector"`
		K      *int            `json:"k"`
		Nprobe *int            `json:"nprobe"`
		Exact  *bool           `json:"exact"`
	} `json:"dense"`
	// Sparse is {"field":F,"vector":{"dim":weight,...},"k":K,"cut":N,
	// "heap_factor":F,"exact":B}; all but field and vector are optional.
	Sparse *sparseQueryJSON `json:"sparse"`
}

// parseVector reads a JSON object query. Nulls ("k":null, a null in the
// vector), repeated or case-mismatched members, unknown members and
// trailing data are refused, never read as zeros or defaults.
func parseVector(s *schema.Schema, data []byte) (Query, error) {
	var v vectorQueryJSON
	if err := strictjson.Decode(data, &v, strictjson.Options{}); err != nil {
		return nil, queryErr("malformed vector query: %v", err)
	}
	switch {
	case v.Dense != nil && v.Sparse != nil:
		return nil, queryErr("a vector query is either dense or sparse, not both")
	case v.Dense != nil:
		q, err := denseQuery(s, v.Dense.Field, v.Dense.Vector, v.Dense.K)
		if err != nil {
			return nil, err
		}
		return q, denseOptions(q.(*DenseQuery), v.Dense.Nprobe, v.Dense.Exact)
	case v.Sparse != nil:
		return sparseQuery(s, v.Sparse)
	}
	return nil, queryErr(`a JSON query needs "dense" or "sparse"`)
}

// denseOptions applies the binary IVF options of a dense query: nprobe
// (1..MaxNprobe clusters probed per encoded run) and exact (brute force
// over the stored vectors, the ground truth).
func denseOptions(q *DenseQuery, nprobe *int, exact *bool) error {
	if nprobe != nil {
		if *nprobe < 1 || *nprobe > MaxNprobe {
			return queryErr("nprobe must be between 1 and %d, got %d", MaxNprobe, *nprobe)
		}
		q.Nprobe = *nprobe
	}
	if exact != nil {
		q.Exact = *exact
	}
	return nil
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

func denseQuery(s *schema.Schema, name string, raw json.RawMessage, k *int) (Query, error) {
	ord, f, err := vectorField(s, name, schema.DenseVector)
	if err != nil {
		return nil, err
	}
	var vec []float32
	if raw != nil { // a missing vector has 0 dimensions
		if vec, err = schema.ParseDenseVector(raw); err != nil {
			return nil, queryErr("dense query on %q: %v", name, err)
		}
	}
	if len(vec) != f.Dims {
		return nil, queryErr("field %q has %d dimensions, the query vector %d", name, f.Dims, len(vec))
	}
	q := &DenseQuery{Field: ord, Vector: vec, K: DefaultK}
	if k != nil {
		if *k < 1 || *k > MaxK {
			return nil, queryErr("k must be between 1 and %d, got %d", MaxK, *k)
		}
		q.K = *k
	}
	return q, nil
}

func sparseQuery(s *schema.Schema, js *sparseQueryJSON) (Query, error) {
	name, raw := js.Field, js.Vector
	ord, _, err := vectorField(s, name, schema.SparseVector)
	if err != nil {
		return nil, err
	}
	var vec []schema.SparseEntry
	if raw != nil { // a missing vector is empty
		if vec, err = schema.ParseSparseVector(raw, MaxClauses); err != nil {
			return nil, queryErr("sparse query on %q: %v", name, err)
		}
	}
	if len(vec) == 0 {
		return nil, queryErr("sparse query on %q: empty vector", name)
	}
	q := &SparseQuery{Field: ord, Vector: vec, Cut: DefaultCut, HeapFactor: DefaultHeapFactor}
	if err := js.options(q); err != nil {
		return nil, queryErr("sparse query on %q: %v", name, err)
	}
	return q, nil
}
