package strictjson

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
)

// inner is embedded in target, as segment.Info is in metadata.Segment.
type inner struct {
	ID uint64 `json:"id"`
}

// hexID decodes itself from text, as segid.ID does.
type hexID uint64

func (h *hexID) UnmarshalText(b []byte) error {
	v, err := strconv.ParseUint(string(b), 16, 64)
	*h = hexID(v)
	return err
}

// selfDecoding decodes itself, as schema.Schema does.
type selfDecoding struct{ raw string }

func (s *selfDecoding) UnmarshalJSON(b []byte) error {
	s.raw = string(b)
	return nil
}

// MarshalJSON writes the text it read.
func (s selfDecoding) MarshalJSON() ([]byte, error) {
	if s.raw == "" {
		return []byte("null"), nil
	}
	return []byte(s.raw), nil
}

// target has a member of every shape the engine decodes.
type target struct {
	inner
	Limit   int                `json:"limit"`
	Flag    *bool              `json:"flag,omitempty"`
	Vec     []float64          `json:"vec"`
	Weights map[string]float64 `json:"weights"`
	Raw     json.RawMessage    `json:"raw"`
	Hex     hexID              `json:"hex"`
	Self    *selfDecoding      `json:"self"`
	Nested  *struct {
		K *int `json:"k"`
	} `json:"nested"`
	Skipped int `json:"-"`
}

func TestDecodeRefusesSilentCoercions(t *testing.T) {
	for _, c := range []struct {
		in   string
		kind Kind
		path string
	}{
		{`{"limit":null}`, Null, "limit"},
		{`{"flag":null}`, Null, "flag"},
		{`{"vec":[1,null,3]}`, Null, "vec[1]"},
		{`{"vec":null}`, Null, "vec"},
		{`{"weights":{"a":null}}`, Null, "weights.a"},
		{`{"hex":null}`, Null, "hex"},
		{`{"id":null}`, Null, "id"},
		{`{"nested":null}`, Null, "nested"},
		{`{"self":null}`, Null, "self"},
		{`{"nested":{"k":null}}`, Null, "nested.k"},
		{`null`, Null, ""},
		{`{"limit":1,"limit":2}`, Duplicate, "limit"},
		{`{"limit":1,"LIMIT":2}`, Duplicate, "LIMIT"},
		{`{"weights":{"a":1,"a":2}}`, Duplicate, "weights.a"},
		{`{"Limit":1}`, Unknown, "Limit"},
		{`{"ID":1}`, Unknown, "ID"},
		{`{"bogus":1}`, Unknown, "bogus"},
		{`{"Skipped":1}`, Unknown, "Skipped"},
		{`{"nested":{"K":1}}`, Unknown, "nested.K"},
		{`{"limit":1} {}`, Malformed, ""},
		{`{"limit":1}x`, Malformed, ""},
		{`{"limit":`, Malformed, "limit"},
		{`{"limit":1`, Malformed, ""},
	} {
		var v target
		err := Decode([]byte(c.in), &v, Options{})
		var e *Error
		if !errors.As(err, &e) || e.Kind != c.kind || e.Path != c.path {
			t.Errorf("%s: %v (%#v), want kind %d at %q", c.in, err, e, c.kind, c.path)
		}
	}
}

func TestDecodeAccepts(t *testing.T) {
	in := `{"id":7,"limit":3,"flag":false,"vec":[1,2.5],"weights":{"A":1,"a":2},"raw":null,"hex":"ff","self":{"Any":[null]},"nested":{"k":4}}`
	var v target
	if err := Decode([]byte(in), &v, Options{}); err != nil {
		t.Fatal(err)
	}
	if v.ID != 7 || v.Limit != 3 || v.Flag == nil || *v.Flag || len(v.Vec) != 2 || v.Weights["A"] != 1 ||
		v.Weights["a"] != 2 || string(v.Raw) != "null" || v.Hex != 0xff || v.Self == nil || v.Self.raw != `{"Any":[null]}` ||
		v.Nested == nil || *v.Nested.K != 4 {
		t.Fatalf("decoded %+v", v)
	}
	// Type errors are encoding/json's.
	var te *json.UnmarshalTypeError
	for _, in := range []string{`{"limit":1.5}`, `{"limit":"1"}`, `{"limit":1e30}`, `{"vec":[true]}`} {
		if err := Decode([]byte(in), &v, Options{}); !errors.As(err, &te) {
			t.Errorf("%s: %v, want a *json.UnmarshalTypeError", in, err)
		}
	}
}

func TestOptions(t *testing.T) {
	var v target
	opts := Options{AllowUnknown: true, NullSlices: true}
	if err := Decode([]byte(`{"vec":null,"weights":null,"future":{"x":[null]}}`), &v, opts); err != nil {
		t.Fatalf("relaxed: %v", err)
	}
	if err := Decode([]byte(`{"Limit":1}`), &v, opts); !IsKind(err, Unknown) {
		t.Fatalf("a case-mismatched member with AllowUnknown: %v", err)
	}
	if err := Decode([]byte(`{"vec":[null]}`), &v, opts); !IsKind(err, Null) {
		t.Fatalf("a null element with NullSlices: %v", err)
	}
	if err := Decode([]byte(`{"limit":1}`), v, opts); err == nil {
		t.Fatal("decode into a non-pointer succeeded")
	}
}

// FuzzDecode checks that the walker never panics, that every refusal of
// its own is an *Error, and that what it accepts decodes exactly as
// encoding/json decodes it.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"limit":2,"vec":[1,2],"weights":{"a":1},"raw":{"x":null},"hex":"a","nested":{"k":1}}`,
		`{"vec":[null]}`, `{"limit":1,"Limit":2}`, `{"weights":{"a":1,"a":1}}`, `[1]`, `null`, `{} {}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var got target
		err := Decode([]byte(in), &got, Options{})
		var want target
		jerr := json.Unmarshal([]byte(in), &want)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) && jerr == nil {
				t.Fatalf("%q: %v is no *Error, and encoding/json accepts it", in, err)
			}
			return
		}
		if jerr != nil {
			t.Fatalf("%q: accepted, but encoding/json refuses it: %v", in, jerr)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		if string(a) != string(b) {
			t.Fatalf("%q: decoded %s, encoding/json %s", in, a, b)
		}
	})
}
