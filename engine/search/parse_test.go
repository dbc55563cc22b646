package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/summadev/summa/engine/schema"
)

// parseSchema has one field of every kind the parser distinguishes.
func parseSchema(t testing.TB) *schema.Schema {
	t.Helper()
	no := false
	s, err := schema.New([]schema.Field{
		{Name: "id", Type: schema.Text, Primary: true},
		{Name: "title", Type: schema.Text},
		{Name: "body", Type: schema.Text},
		{Name: "year", Type: schema.U64},
		{Name: "delta", Type: schema.I64},
		{Name: "price", Type: schema.F64},
		{Name: "tag", Type: schema.Keyword, Multi: true},
		{Name: "hidden", Type: schema.Text, Indexed: &no},
		{Name: "emb", Type: schema.DenseVector, Dims: 4},
		{Name: "sp", Type: schema.SparseVector},
		{Name: "emb_off", Type: schema.DenseVector, Dims: 2, Indexed: &no},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Field ordinals of parseSchema.
const (
	fID, fTitle, fBody, fYear, fDelta, fPrice, fTag = 0, 1, 2, 3, 4, 5, 6
	fEmb, fSp                                       = 8, 9
)

var textFields = []int{fTitle, fBody}

func term(o Occur, fields []int, terms ...string) Clause {
	offs := make([]uint32, len(terms))
	for i := range offs {
		offs[i] = uint32(i)
	}
	return Clause{Occur: o, Fields: fields, Terms: terms, Offsets: offs}
}

func TestParseString(t *testing.T) {
	cases := []struct {
		in   string
		want []Clause
	}{
		{"light", []Clause{term(Should, textFields, "light")}},
		{"  Light\tcolours\n", []Clause{term(Should, textFields, "light"), term(Should, textFields, "colours")}},
		{"+light -red prism", []Clause{term(Must, textFields, "light"), term(MustNot, textFields, "red"), term(Should, textFields, "prism")}},
		{"title:Opticks", []Clause{term(Should, []int{fTitle}, "opticks")}},
		{"+body:light", []Clause{term(Must, []int{fBody}, "light")}},
		{`"rays of light"`, []Clause{term(Should, textFields, "rays", "of", "light")}},
		{`-body:"the sun"`, []Clause{term(MustNot, []int{fBody}, "the", "sun")}},
		{"wi-fi", []Clause{term(Should, textFields, "wi", "fi")}},
		{"10:30", []Clause{term(Should, textFields, "10", "30")}},
		{"title:a:b", []Clause{term(Should, []int{fTitle}, "a", "b")}},
		{"id:Doc-1", []Clause{term(Should, []int{fID}, "Doc-1")}},
		{`tag:"Red Fish"`, []Clause{term(Should, []int{fTag}, "Red Fish")}},
		{"year:0042", []Clause{term(Should, []int{fYear}, "42")}},
		{"delta:-7", []Clause{term(Should, []int{fDelta}, "-7")}},
		{"price:1.50", []Clause{term(Should, []int{fPrice}, "1.5")}},
		{"+price:1e3", []Clause{term(Must, []int{fPrice}, "1000")}},
		{"!!! light", []Clause{term(Should, textFields, "light")}},
		{"+,", nil},
		{"title:;", nil},
		{"+-light", []Clause{term(Must, textFields, "light")}},
		{":light", []Clause{term(Should, textFields, "light")}},
	}
	s := parseSchema(t)
	for _, c := range cases {
		q, err := ParseString(s, c.in)
		if err != nil {
			t.Errorf("ParseString(%q): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(q.Clauses, c.want) {
			t.Errorf("ParseString(%q)\n got %+v\nwant %+v", c.in, q.Clauses, c.want)
		}
	}
}

func TestParseStringPhraseOffsets(t *testing.T) {
	long := strings.Repeat("x", 70) // longer than analysis.MaxTermBytes: skipped, still a position
	q, err := ParseString(parseSchema(t), `"north `+long+` pole"`)
	if err != nil {
		t.Fatal(err)
	}
	c := q.Clauses[0]
	if !reflect.DeepEqual(c.Terms, []string{"north", "pole"}) || !reflect.DeepEqual(c.Offsets, []uint32{0, 2}) {
		t.Fatalf("terms %q offsets %v, want [north pole] [0 2]", c.Terms, c.Offsets)
	}
	if !c.IsPhrase() {
		t.Fatal("two terms should make a phrase")
	}
}

func TestParseStringErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "empty query"},
		{" \t\n ", "empty query"},
		{"nope:light", `unknown field "nope"`},
		{"hidden:light", `field "hidden" is not indexed`},
		{"emb:1", `field "emb" is a vector field`},
		{"sp:x", `field "sp" is a vector field`},
		{`"rays of`, "unterminated quote at byte 0"},
		{`light title:"rays`, "unterminated quote at byte 12"},
		{`"rays"x`, "unexpected text after the closing quote"},
		{`ra"ys"`, "quote inside a term"},
		{`""`, "empty phrase"},
		{`"  "`, "empty phrase"},
		{"+", `missing term after "+"`},
		{"light -", `missing term after "-"`},
		{"title: light", `missing term after "title:"`},
		{"year:abc", "expects an unsigned integer"},
		{"delta:1.5", "expects an integer"},
		{"price:cheap", "expects a number"},
		{strings.Repeat("a", MaxQueryBytes+1), "longer than"},
		{strings.Repeat("a ", MaxClauses+1), "more than 1024 clauses"},
		{"\xff", "not valid UTF-8"},
	}
	s := parseSchema(t)
	for _, c := range cases {
		_, err := ParseString(s, c.in)
		checkQueryErr(t, c.in, err, c.want)
	}
	noText := schema.MustNew(schema.Field{Name: "k", Type: schema.Keyword})
	_, err := ParseString(noText, "light")
	checkQueryErr(t, "bare term without text fields", err, "no indexed text field")
}

func TestParseStringLimitsInclusive(t *testing.T) {
	s := parseSchema(t)
	if _, err := ParseString(s, strings.Repeat("a ", MaxClauses)); err != nil {
		t.Errorf("%d clauses: %v", MaxClauses, err)
	}
	if _, err := ParseString(s, strings.Repeat("a", MaxQueryBytes)); err != nil {
		t.Errorf("%d bytes: %v", MaxQueryBytes, err)
	}
}

func checkQueryErr(t *testing.T, in string, err error, want string) {
	t.Helper()
	var qe *QueryError
	if !errors.As(err, &qe) {
		t.Errorf("%.40q: got %v, want a *QueryError containing %q", in, err, want)
		return
	}
	if !strings.Contains(qe.Reason, want) {
		t.Errorf("%.40q: reason %q, want it to contain %q", in, qe.Reason, want)
	}
}

func TestParseJSON(t *testing.T) {
	s := parseSchema(t)
	cases := []struct {
		in   string
		want Query
	}{
		{`"+light"`, &TextQuery{Clauses: []Clause{term(Must, textFields, "light")}}},
		{` "title:\"the sun\"" `, &TextQuery{Clauses: []Clause{term(Should, []int{fTitle}, "the", "sun")}}},
		{`{"dense":{"field":"emb","vector":[1,0,-0.5,2],"k":3}}`, &DenseQuery{Field: fEmb, Vector: []float32{1, 0, -0.5, 2}, K: 3}},
		{`{"dense":{"field":"emb","vector":[1,2,3,4]}}`, &DenseQuery{Field: fEmb, Vector: []float32{1, 2, 3, 4}, K: DefaultK}},
		{`{"dense":{"field":"emb","vector":[1,2,3,4],"k":10000}}`, &DenseQuery{Field: fEmb, Vector: []float32{1, 2, 3, 4}, K: 10000}},
		{`{"sparse":{"field":"sp","vector":{"b":0.5,"a":2}}}`, &SparseQuery{Field: fSp, Vector: []schema.SparseEntry{{Dim: "a", Weight: 2}, {Dim: "b", Weight: 0.5}}, Cut: DefaultCut, HeapFactor: DefaultHeapFactor}},
		{`{"sparse":{"field":"sp","vector":{"a":2},"k":5,"cut":3,"heap_factor":0.5,"exact":true}}`, &SparseQuery{Field: fSp, Vector: []schema.SparseEntry{{Dim: "a", Weight: 2}}, K: 5, Cut: 3, HeapFactor: 0.5, Exact: true}},
	}
	for _, c := range cases {
		q, err := Parse(s, json.RawMessage(c.in))
		if err != nil {
			t.Errorf("Parse(%s): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(q, c.want) {
			t.Errorf("Parse(%s)\n got %+v\nwant %+v", c.in, q, c.want)
		}
	}
}

func TestParseJSONErrors(t *testing.T) {
	bigSparse := map[string]float64{}
	for i := 0; i <= MaxClauses; i++ {
		bigSparse[fmt.Sprintf("d%d", i)] = 1
	}
	bigSparseJSON, _ := json.Marshal(map[string]any{"sparse": map[string]any{"field": "sp", "vector": bigSparse}})
	longQuery, _ := json.Marshal(strings.Repeat("a", MaxQueryBytes+1))
	cases := []struct{ in, want string }{
		{``, "missing query"},
		{`null`, "missing query"},
		{`42`, "a query is a string or a JSON object"},
		{`["light"]`, "a query is a string or a JSON object"},
		{`"light`, "malformed query string"},
		{`""`, "empty query"},
		{string(longQuery), "longer than"},
		{`"nope:x"`, `unknown field "nope"`},
		{`{}`, `needs "dense" or "sparse"`},
		{`{"dense":{"field":"emb","vector":[1,2,3,4]},"sparse":{"field":"sp","vector":{"a":1}}}`, "not both"},
		{`{"knn":{}}`, "malformed vector query"},
		{`{"dense":{"field":"emb","vector":[1,2,3,4]}} {}`, "trailing data"},
		{`{"dense":{"field":"emb","vector":[1,2,3,4]`, "malformed vector query"},
		{`{"dense":{"vector":[1,2,3,4]}}`, "missing field"},
		{`{"dense":{"field":"nope","vector":[1,2,3,4]}}`, `unknown field "nope"`},
		{`{"dense":{"field":"sp","vector":[1,2,3,4]}}`, `field "sp" is sparse_vector, not dense_vector`},
		{`{"dense":{"field":"title","vector":[1,2,3,4]}}`, `field "title" is text, not dense_vector`},
		{`{"dense":{"field":"emb_off","vector":[1,2]}}`, `field "emb_off" is not indexed`},
		{`{"dense":{"field":"emb","vector":[1,2,3]}}`, "has 4 dimensions, the query vector 3"},
		{`{"dense":{"field":"emb"}}`, "has 4 dimensions, the query vector 0"},
		{`{"dense":{"field":"emb","vector":[1,2,3,1e39]}}`, "dimension 3 of the vector is not a finite float32"},
		{`{"dense":{"field":"emb","vector":[1,2,3,"x"]}}`, "dimension 3 of the vector is a string, not a number"},
		{`{"dense":{"field":"emb","vector":[1,2,3,4],"k":0}}`, "k must be between 1 and 10000, got 0"},
		{`{"dense":{"field":"emb","vector":[1,2,3,4],"k":10001}}`, "k must be between 1 and 10000, got 10001"},
		{`{"dense":{"field":"emb","vector":[1,2,3,4],"k":-1}}`, "k must be between"},
		{`{"sparse":{"field":"emb","vector":{"a":1}}}`, `field "emb" is dense_vector, not sparse_vector`},
		{`{"sparse":{"field":"sp","vector":{}}}`, "empty vector"},
		{`{"sparse":{"field":"sp","vector":{"a":1},"k":0}}`, "k must be between"},
		{`{"sparse":{"field":"sp","vector":{"a":1},"cut":0}}`, "cut must be between"},
		{`{"sparse":{"field":"sp","vector":{"a":1},"heap_factor":0}}`, "heap_factor must be in"},
		{`{"sparse":{"field":"sp","vector":{"a":1},"exact":null}}`, "exact: null"},
		{`{"sparse":{"field":"sp","vector":{"a":1},"exact":1}}`, "exact"},
		{`{"sparse":{"field":"sp"}}`, "empty vector"},
		{`{"sparse":{"field":"sp","vector":{"":1}}}`, "dimension names must have 1 to"},
		{`{"sparse":{"field":"sp","vector":{"a":1e39}}}`, `weight of "a" is not a finite float32`},
		{string(bigSparseJSON), "at most 1024 allowed"},
		// Nothing is read as 0 or as a default.
		{`{"dense":{"field":"emb","vector":[null,0,0,0]}}`, "dimension 0 of the vector is null"},
		{`{"dense":{"field":"emb","vector":[0,0,0,null]}}`, "dimension 3 of the vector is null"},
		{`{"dense":{"field":"emb","vector":null}}`, "expected an array"},
		{`{"dense":{"field":"emb","vector":[1,2,3,4],"k":null}}`, "dense.k: null"},
		{`{"dense":{"field":"emb","vector":[1,2,3,4],"k":2.5}}`, "malformed vector query"},
		{`{"dense":{"field":null,"vector":[1,2,3,4]}}`, "dense.field: null"},
		{`{"dense":null,"sparse":{"field":"sp","vector":{"a":1}}}`, "dense: null"},
		{`{"dense":{"field":"emb","vector":[1,2,3,4]},"dense":{"field":"emb","vector":[4,3,2,1]}}`, `"dense" appears twice`},
		{`{"dense":{"field":"emb","vector":[1,2,3,4],"Field":"emb"}}`, `"field" and "Field" name the same member`},
		{`{"dense":{"Field":"emb","vector":[1,2,3,4]}}`, "case-sensitive"},
		{`{"sparse":{"field":"sp","vector":{"a":null}}}`, `weight of "a" is null`},
		{`{"sparse":{"field":"sp","vector":{"a":1,"a":2}}}`, `dimension "a" appears twice`},
		{`{"sparse":{"field":"sp","vector":{"a":"1"}}}`, `weight of "a" is a string`},
		{`{"sparse":{"field":"sp","vector":null}}`, "expected an object"},
	}
	s := parseSchema(t)
	for _, c := range cases {
		_, err := Parse(s, json.RawMessage(c.in))
		checkQueryErr(t, c.in, err, c.want)
	}
}
