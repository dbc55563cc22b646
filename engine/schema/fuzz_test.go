package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"testing"
	"unicode/utf8"
)

// FuzzParseDocument checks the document decoder: no input panics, every
// refusal is a *DocumentError, and an accepted document satisfies the
// schema (vectors of the right size with finite components, sparse
// dimensions sorted and unique, a primary key, valid stored JSON) and
// round-trips: encoding its values and parsing them again gives the same
// document.
func FuzzParseDocument(f *testing.F) {
	for _, seed := range []string{
		`{"id":"x","title":"rays","tags":["a","b"],"year":1704,"delta":[-1,2],"score":0.5,"emb":[1,2,3],"terms":{"a":1,"b":-2}}`,
		`{"id":"x","emb":[null,0,0]}`, `{"id":"x","emb":[0,0,null]}`, `{"id":"x","terms":{"a":null}}`,
		`{"id":"x","terms":{"a":1,"a":2}}`, `{"id":"x","tags":["a",null]}`, `{"id":"x","score":null}`,
		`{"id":"x","emb":[1e39,0,0]}`, `{"id":"x","year":1e3}`, `{"id":"x"} {}`, `{"id":"\ud800"}`, `null`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	s := mustParse(f, allTypes)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := s.ParseDocument(data)
		if err != nil {
			var de *DocumentError
			if !errors.As(err, &de) {
				t.Fatalf("%q: refusal %v is not a *DocumentError", data, err)
			}
			return
		}
		checkDocument(t, s, d)
		again, err := s.ParseDocument(encodeDocument(t, s, d))
		if err != nil {
			t.Fatalf("%q: the re-encoded document is refused: %v", data, err)
		}
		if again.PrimaryKey != d.PrimaryKey || !reflect.DeepEqual(again.Fields, d.Fields) {
			t.Fatalf("%q: round trip changed the document:\n%+v\n%+v", data, d.Fields, again.Fields)
		}
	})
}

// checkDocument asserts the invariants of an accepted document.
func checkDocument(t *testing.T, s *Schema, d *Document) {
	t.Helper()
	if len(d.Fields) != len(s.Fields) || d.PrimaryKey == "" || !json.Valid(d.Stored) || d.Stored[0] != '{' {
		t.Fatalf("malformed document %+v", d)
	}
	for i := range s.Fields {
		f, v := &s.Fields[i], &d.Fields[i]
		if v.Dense != nil && len(v.Dense) != f.Dims {
			t.Fatalf("field %s: %d dimensions, want %d", f.Name, len(v.Dense), f.Dims)
		}
		for _, x := range v.Dense {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("field %s: component %v", f.Name, x)
			}
		}
		for j, e := range v.Sparse {
			if e.Dim == "" || len(e.Dim) > MaxTermBytes || math.IsNaN(float64(e.Weight)) || math.IsInf(float64(e.Weight), 0) ||
				j > 0 && v.Sparse[j-1].Dim >= e.Dim {
				t.Fatalf("field %s: sparse entries %v", f.Name, v.Sparse)
			}
		}
		for _, x := range v.Strings {
			if !utf8.ValidString(x) {
				t.Fatalf("field %s: invalid UTF-8 %q", f.Name, x)
			}
		}
		if !f.Multi && f.Type != DenseVector && f.Type != SparseVector && v.Len() > 1 {
			t.Fatalf("field %s: %d values in a single-valued field", f.Name, v.Len())
		}
	}
}

// encodeDocument writes a document's values back as JSON.
func encodeDocument(t *testing.T, s *Schema, d *Document) []byte {
	t.Helper()
	obj := map[string]any{}
	for i := range s.Fields {
		f, v := &s.Fields[i], &d.Fields[i]
		var vals []any
		for _, x := range v.Strings {
			vals = append(vals, x)
		}
		for _, x := range v.U64 {
			vals = append(vals, json.Number(strconv.FormatUint(x, 10)))
		}
		for _, x := range v.I64 {
			vals = append(vals, json.Number(strconv.FormatInt(x, 10)))
		}
		for _, x := range v.F64 {
			vals = append(vals, x)
		}
		switch {
		case v.Dense != nil:
			obj[f.Name] = v.Dense
		case v.Sparse != nil:
			m := map[string]float32{}
			for _, e := range v.Sparse {
				m[e.Dim] = e.Weight
			}
			obj[f.Name] = m
		case f.Multi && len(vals) > 0:
			obj[f.Name] = vals
		case len(vals) == 1:
			obj[f.Name] = vals[0]
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		t.Fatalf("encode %+v: %v", d, err)
	}
	return bytes.TrimSpace(b.Bytes())
}

// FuzzParseSchema checks the schema decoder: no input panics, every
// refusal matches ErrInvalidSchema, and an accepted schema keeps its
// rules and round-trips through its canonical JSON unchanged.
func FuzzParseSchema(f *testing.F) {
	for _, seed := range []string{
		allTypes, `{"fields":[{"name":"a","type":"text","indexed":null}]}`,
		`{"fields":[{"name":"v","type":"dense_vector","dims":null}]}`, `{"fields":[null]}`, `{"fields":null}`,
		`{"fields":[{"name":"a","type":"text","type":"u64"}]}`, `{"fields":[{"Name":"a","type":"text"}]}`,
		`{"fields":[{"name":"a","type":"text","stored":false,"multi":true}]} x`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("%q: refusal %v does not match ErrInvalidSchema", data, err)
			}
			return
		}
		if n := len(s.Fields); n == 0 || n > MaxFields || s.Primary() >= n {
			t.Fatalf("%q: accepted %d fields, primary %d", data, n, s.Primary())
		}
		canon, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(canon)
		if err != nil {
			t.Fatalf("%q: canonical form %s refused: %v", data, canon, err)
		}
		if !again.Equal(s) {
			t.Fatalf("%q: round trip changed the schema: %s", data, canon)
		}
		if canon2, _ := json.Marshal(again); !bytes.Equal(canon, canon2) {
			t.Fatalf("canonical form not stable:\n%s\n%s", canon, canon2)
		}
	})
}
