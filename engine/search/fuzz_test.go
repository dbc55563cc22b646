package search

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/summadev/summa/engine/schema"
)

// FuzzParse checks that no query text makes the parser panic, that every
// refusal is a *QueryError, and that accepted text queries are well formed.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"light", `+title:"rays of light" -red year:1704`, `"unterminated`, "+", "a:b:c",
		`{"dense":{"field":"emb","vector":[1,2,3,4],"k":2}}`, `{"sparse":{"field":"sp","vector":{"a":1}}}`,
	} {
		f.Add(seed)
	}
	s := parseSchema(f)
	f.Fuzz(func(t *testing.T, in string) {
		q, err := ParseString(s, in)
		checkParsed(t, q, err)
		jq, err := Parse(s, json.RawMessage(in))
		if err == nil {
			if tq, ok := jq.(*TextQuery); ok {
				checkParsed(t, tq, nil)
			}
		} else {
			checkParsed(t, nil, err)
		}
		quoted, _ := json.Marshal(in)
		jq, err = Parse(s, quoted)
		tq, _ := jq.(*TextQuery)
		checkParsed(t, tq, err)
	})
}

func checkParsed(t *testing.T, q *TextQuery, err error) {
	t.Helper()
	if err != nil {
		var qe *QueryError
		if !errors.As(err, &qe) {
			t.Fatalf("error %v is not a *QueryError", err)
		}
		return
	}
	if q == nil {
		t.Fatal("nil query without an error")
	}
	for _, c := range q.Clauses {
		if len(c.Fields) == 0 || len(c.Terms) == 0 || len(c.Terms) != len(c.Offsets) || c.Offsets[0] != 0 {
			t.Fatalf("malformed clause %+v", c)
		}
		for i := 1; i < len(c.Offsets); i++ {
			if c.Offsets[i] <= c.Offsets[i-1] {
				t.Fatalf("offsets not increasing: %+v", c)
			}
		}
	}
}

// FuzzSearch runs arbitrary query text over real segments: a query the
// parser accepts must run without error, and its hits must be ordered and
// no more than its total.
func FuzzSearch(f *testing.F) {
	for _, q := range textQueries {
		f.Add(q, 3, 2)
	}
	f.Add(`{"dense":{"field":"emb","vector":[1,2,3,4],"k":5}}`, 10, 0)
	f.Add(`{"sparse":{"field":"sp","vector":{"thex":1}}}`, 4, 1)
	f.Add(`{"sparse":{"field":"sp","vector":{"thex":1,"ofx":0.5},"k":3,"cut":1,"heap_factor":0.5}}`, 2, 1)
	f.Add(`{"sparse":{"field":"sp","vector":{"thex":1},"exact":true}}`, 4, 0)
	c := newtonCorpus(f)
	views := c.views(f, split{sizes: c.thirds(), deleted: map[int]bool{2: true, 300: true}})
	f.Fuzz(func(t *testing.T, q string, limit, offset int) {
		raw := json.RawMessage(q)
		if _, err := Parse(c.schema, raw); err != nil {
			raw, _ = json.Marshal(q)
		}
		res, err := Search(context.Background(), c.schema, views, Request{Query: raw, Limit: limit, Offset: offset})
		if err != nil {
			var qe *QueryError
			if !errors.As(err, &qe) {
				t.Fatalf("%s: %v", q, err)
			}
			return
		}
		if len(res.Hits) > res.TotalHits {
			t.Fatalf("%s: %d hits of %d", q, len(res.Hits), res.TotalHits)
		}
		for i := 1; i < len(res.Hits); i++ {
			checkOrder(t, q, res.Hits[i-1], res.Hits[i])
		}
	})
}

// FuzzParseVector checks the vector query decoder: no JSON object panics
// it, every refusal is a *QueryError, and an accepted query is well formed
// (a dense vector of the field's size with finite components and k in
// range; a sparse vector non-empty, sorted, unique and finite) and is
// parsed again to the same query from its canonical JSON.
func FuzzParseVector(f *testing.F) {
	for _, seed := range []string{
		`{"dense":{"field":"emb","vector":[1,2,3,4],"k":2}}`, `{"sparse":{"field":"sp","vector":{"a":1,"b":-0.5}}}`,
		`{"dense":{"field":"emb","vector":[null,0,0,0]}}`, `{"sparse":{"field":"sp","vector":{"a":null}}}`,
		`{"dense":{"field":"emb","vector":[1,2,3,4],"k":null}}`, `{"sparse":{"field":"sp","vector":{"a":1,"a":2}}}`,
		`{"dense":null,"sparse":{"field":"sp","vector":{"a":1}}}`, `{"dense":{"field":"emb","vector":[1,2,3,1e39]}}`,
		`{"Dense":{"field":"emb","vector":[1,2,3,4]}}`, `{"dense":{"field":"emb","vector":[1,2,3,4]}} {}`,
	} {
		f.Add(seed)
	}
	s := parseSchema(f)
	f.Fuzz(func(t *testing.T, in string) {
		q, err := Parse(s, json.RawMessage(in))
		if err != nil {
			var qe *QueryError
			if !errors.As(err, &qe) {
				t.Fatalf("%s: refusal %v is not a *QueryError", in, err)
			}
			return
		}
		var canon []byte
		switch q := q.(type) {
		case *DenseQuery:
			canon = checkDense(t, s, in, q)
		case *SparseQuery:
			canon = checkSparse(t, in, q)
		default:
			return // a text query
		}
		again, err := Parse(s, canon)
		if err != nil || !reflect.DeepEqual(again, q) {
			t.Fatalf("%s: canonical form %s parses to %+v, %v; want %+v", in, canon, again, err, q)
		}
	})
}

// checkDense asserts a dense query's invariants and returns its canonical JSON.
func checkDense(t *testing.T, s *schema.Schema, in string, q *DenseQuery) []byte {
	t.Helper()
	f := &s.Fields[q.Field]
	if f.Type != schema.DenseVector || len(q.Vector) != f.Dims || q.K < 1 || q.K > MaxK {
		t.Fatalf("%s: accepted %+v", in, q)
	}
	for _, x := range q.Vector {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			t.Fatalf("%s: component %v", in, x)
		}
	}
	canon, _ := json.Marshal(map[string]any{"dense": map[string]any{"field": f.Name, "vector": q.Vector, "k": q.K}})
	return canon
}

// checkSparse asserts a sparse query's invariants and returns its canonical JSON.
func checkSparse(t *testing.T, in string, q *SparseQuery) []byte {
	t.Helper()
	if len(q.Vector) == 0 || len(q.Vector) > MaxClauses {
		t.Fatalf("%s: accepted %d dimensions", in, len(q.Vector))
	}
	vec := map[string]float32{}
	for i, e := range q.Vector {
		if e.Dim == "" || math.IsNaN(float64(e.Weight)) || math.IsInf(float64(e.Weight), 0) ||
			i > 0 && q.Vector[i-1].Dim >= e.Dim {
			t.Fatalf("%s: accepted entries %v", in, q.Vector)
		}
		vec[e.Dim] = e.Weight
	}
	canon, _ := json.Marshal(map[string]any{"sparse": map[string]any{"field": "sp", "vector": vec}})
	return canon
}
