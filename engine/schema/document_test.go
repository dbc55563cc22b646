package schema

import (
	"errors"
	"strings"
	"testing"
)

// allTypes has a field of every type.
const allTypes = `{"fields":[
 {"name":"id","type":"keyword","primary":true},
 {"name":"title","type":"text"},
 {"name":"tags","type":"keyword","multi":true},
 {"name":"year","type":"u64"},
 {"name":"delta","type":"i64","multi":true},
 {"name":"score","type":"f64"},
 {"name":"emb","type":"dense_vector","dims":3},
 {"name":"terms","type":"sparse_vector"}
]}`

func mustParse(t testing.TB, data string) *Schema {
	t.Helper()
	s, err := Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseDocumentRefusesCoercions(t *testing.T) {
	s := mustParse(t, allTypes)
	for _, c := range []struct{ doc, field, reason string }{
		{`{"id":"x","emb":[null,0,0]}`, "emb", "dimension 0 of the vector is null"},
		{`{"id":"x","emb":[0,0,null]}`, "emb", "dimension 2 of the vector is null"},
		{`{"id":"x","emb":[0,"1",0]}`, "emb", "is a string"},
		{`{"id":"x","emb":[0,true,0]}`, "emb", "is true"},
		{`{"id":"x","emb":[0,[1],0]}`, "emb", "nested"},
		{`{"id":"x","emb":[0,{},0]}`, "emb", "nested"},
		{`{"id":"x","emb":[0,1e39,0]}`, "emb", "not a finite float32"},
		{`{"id":"x","emb":[0,-1e39,0]}`, "emb", "not a finite float32"},
		{`{"id":"x","emb":[0,0]}`, "emb", "2 dimensions, the schema says 3"},
		{`{"id":"x","emb":[0,0,0,0]}`, "emb", "4 dimensions, the schema says 3"},
		{`{"id":"x","emb":{"0":1}}`, "emb", "expected an array"},
		{`{"id":"x","emb":"0,0,0"}`, "emb", "expected an array"},
		{`{"id":"x","terms":{"a":null}}`, "terms", `weight of "a" is null`},
		{`{"id":"x","terms":{"a":1,"a":2}}`, "terms", `dimension "a" appears twice`},
		{`{"id":"x","terms":{"a":"1"}}`, "terms", "is a string"},
		{`{"id":"x","terms":{"a":[1]}}`, "terms", "nested"},
		{`{"id":"x","terms":{"a":1e39}}`, "terms", "not a finite float32"},
		{`{"id":"x","terms":{"":1}}`, "terms", "dimension names must have"},
		{`{"id":"x","terms":[1]}`, "terms", "expected an object"},
		{`{"id":"x","tags":["a",null]}`, "tags", "expected a string"},
		{`{"id":"x","delta":[1,null]}`, "delta", "signed 64-bit"},
		{`{"id":"x","delta":[1,1.5]}`, "delta", "signed 64-bit"},
		{`{"id":"x","delta":[9223372036854775808]}`, "delta", "signed 64-bit"},
		{`{"id":"x","year":18446744073709551616}`, "year", "unsigned 64-bit"},
		{`{"id":"x","year":1e3}`, "year", "unsigned 64-bit"},
		{`{"id":"x","year":"1704"}`, "year", "unsigned 64-bit"},
		{`{"id":"x","year":-0}`, "year", "unsigned 64-bit"},
		{`{"id":"x","score":1e309}`, "score", "finite number"},
		{`{"id":"x","score":"NaN"}`, "score", "expected a number"},
		{`{"id":"x","title":"a","title":"b"}`, "title", "appears twice"},
		{`{"id":null}`, "id", "missing primary key"},
	} {
		_, err := s.ParseDocument([]byte(c.doc))
		var de *DocumentError
		if !errors.As(err, &de) || de.Field != c.field || !strings.Contains(de.Reason, c.reason) {
			t.Errorf("%s: %v, want field %q: ...%s...", c.doc, err, c.field, c.reason)
		}
	}
}

func TestParseDocumentReadsVectors(t *testing.T) {
	s := mustParse(t, allTypes)
	d, err := s.ParseDocument([]byte(`{"id":"x","emb":[0.5,-0,1e-50],"terms":{"b":2,"a":-1,"A":3},"score":null}`))
	if err != nil {
		t.Fatal(err)
	}
	emb, _ := s.Field("emb")
	if got := d.Fields[emb].Dense; len(got) != 3 || got[0] != 0.5 || got[1] != 0 || got[2] != 0 {
		t.Fatalf("dense %v", got)
	}
	terms, _ := s.Field("terms")
	want := []SparseEntry{{"A", 3}, {"a", -1}, {"b", 2}}
	got := d.Fields[terms].Sparse
	if len(got) != len(want) {
		t.Fatalf("sparse %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sparse %v, want %v", got, want)
		}
	}
}

func TestParseSchemaRefusesCoercions(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"fields":[{"name":"a","type":"text","indexed":null}]}`, "fields[0].indexed: null"},
		{`{"fields":[{"name":"a","type":"text","stored":null}]}`, "fields[0].stored: null"},
		{`{"fields":[{"name":"a","type":"text","primary":null}]}`, "fields[0].primary: null"},
		{`{"fields":[{"name":"v","type":"dense_vector","dims":null}]}`, "fields[0].dims: null"},
		{`{"fields":[{"name":"a","type":null}]}`, "fields[0].type: null"},
		{`{"fields":[null]}`, "fields[0]: null"},
		{`{"fields":null}`, "fields: null"},
		{`null`, "null"},
		{`{"fields":[{"name":"a","type":"text","type":"u64"}]}`, `"type" appears twice`},
		{`{"fields":[{"name":"a","NAME":"b","type":"text"}]}`, `name the same member`},
		{`{"fields":[{"Name":"a","type":"text"}]}`, "case-sensitive"},
		{`{"Fields":[{"name":"a","type":"text"}]}`, "case-sensitive"},
		{`{"fields":[{"name":"a","type":"text"}],"fields":[]}`, "appears twice"},
		{`{"fields":[{"name":"v","type":"dense_vector","dims":4.0}]}`, "dims"},
		{`{"fields":[{"name":"v","type":"dense_vector","dims":"4"}]}`, "dims"},
		{`{"fields":[{"name":"v","type":"dense_vector","dims":99999999999999999999}]}`, "dims"},
		{`{"fields":[{"name":"a","type":"text","indexed":"false"}]}`, "indexed"},
		{`{"fields":[{"name":"a","type":"text"}]} {}`, "trailing data"},
		{`{"fields":[{"name":"a","type":"text"}]}x`, "trailing data"},
	} {
		_, err := Parse([]byte(c.in))
		if err == nil || !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an ErrInvalidSchema containing %q", c.in, err, c.want)
		}
	}
}
