package metadata

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// filler fills values of the metadata types by reflection, so that a
// member added to any of them is filled (and so encoded by json.Marshal)
// without this test knowing it.
type filler struct {
	r *rand.Rand
	// full sets every member: pointers non-nil, lists non-empty, numbers
	// and booleans non-zero.
	full bool
}

// testStrings are the strings filled in: what the engine writes, and what
// json.Marshal escapes (quotes, controls, HTML characters, U+2028, invalid
// UTF-8).
var testStrings = []string{"post", "cmp", "0123456789abcdef", "émb", "body.title_x-1", "a\"b", `back\slash`,
	"tab\there", "nul\x00", "<b>&amp;</b>", "line\u2028sep", "bad\xffutf8", "del\x7f", ""}

// testSchemas are the schemas filled in (Schema has unexported state: a
// *schema.Schema is one of these, or nil).
var testSchemas = []*schema.Schema{
	schema.MustNew(schema.Field{Name: "id", Type: schema.Keyword, Primary: true}),
	schema.MustNew(
		schema.Field{Name: "id", Type: schema.Text, Primary: true},
		schema.Field{Name: "title", Type: schema.Text, Stored: new(bool)},
		schema.Field{Name: "body", Type: schema.Text, Reorder: true, Multi: true},
		schema.Field{Name: "n", Type: schema.U64},
		schema.Field{Name: "emb", Type: schema.DenseVector, Dims: 16, Binary: true},
	),
}

var schemaType = reflect.TypeFor[*schema.Schema]()

func (f *filler) fill(v reflect.Value) {
	if v.Type() == schemaType {
		if f.full || f.r.IntN(8) > 0 {
			v.Set(reflect.ValueOf(testSchemas[f.r.IntN(len(testSchemas))]))
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	case reflect.Pointer:
		if f.full || f.r.IntN(3) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			f.fill(v.Elem())
		}
	case reflect.Slice:
		n := f.r.IntN(4) - 1 // -1: nil
		if f.full {
			n = 1 + f.r.IntN(3)
		}
		if n < 0 {
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			f.fill(v.Index(i))
		}
	case reflect.String:
		s := testStrings[f.r.IntN(len(testStrings))]
		if f.full && s == "" {
			s = "x"
		}
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(f.full || f.r.IntN(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(f.int(v.Type().Bits()))
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		x := uint64(f.int(v.Type().Bits()))
		if v.Type().Bits() < 64 {
			x &= 1<<v.Type().Bits() - 1
		}
		if f.full && x == 0 {
			x = 1
		}
		v.SetUint(x)
	default:
		panic(fmt.Sprintf("filler: no case for %s", v.Type()))
	}
}

// int returns a number of bits bits: zero, small, negative, or extreme.
func (f *filler) int(bits int) int64 {
	var x int64
	switch f.r.IntN(5) {
	case 0:
		x = 0
	case 1:
		x = int64(f.r.IntN(1000))
	case 2:
		x = -int64(f.r.IntN(1000))
	case 3:
		x = int64(f.r.Uint64())
	default:
		x = int64(f.r.Uint64() >> (64 - bits + 1))
		if f.r.IntN(2) == 0 {
			x = -x - 1
		}
	}
	if f.full && x == 0 {
		x = 1
	}
	return x
}

// randomMetadata returns a generation filled by f.
func randomMetadata(f *filler) *Metadata {
	var m Metadata
	f.fill(reflect.ValueOf(&m).Elem())
	return &m
}

// checkEncode fails t when appendJSON and json.Marshal write different
// bytes for m.
func checkEncode(t *testing.T, m *Metadata) {
	t.Helper()
	want, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.appendJSON([]byte("prefix"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got[:6]) != "prefix" || string(got[6:]) != string(want) {
		t.Fatalf("appendJSON and json.Marshal differ:\n got %s\nwant %s", got[6:], want)
	}
}

// TestEncodeMatchesMarshal: the one-pass encoder writes what json.Marshal
// writes, for random generations and for the usual ones.
func TestEncodeMatchesMarshal(t *testing.T) {
	for _, m := range []*Metadata{sample(), fullSample(), {}, {Segments: []Segment{}}} {
		checkEncode(t, m)
	}
	f := &filler{r: rand.New(rand.NewPCG(1, 2))}
	for range 2000 {
		checkEncode(t, randomMetadata(f))
	}
}

// TestEncodeKnowsEveryMember: with every member of every type set
// (pointers non-nil, lists non-empty, numbers and booleans non-zero), the
// encoder writes what json.Marshal writes. The filler sets members by
// reflection, so a member added to Metadata, Segment, segment.Info,
// FileInfo, IVFInfo, Mask or SeismicDebt without teaching the encoder
// fails here.
func TestEncodeKnowsEveryMember(t *testing.T) {
	f := &filler{r: rand.New(rand.NewPCG(3, 4)), full: true}
	for range 200 {
		m := randomMetadata(f)
		if len(m.Segments) == 0 || m.Segments[0].Deletes == nil || m.Segments[0].Seismic == nil || len(m.Segments[0].IVF) == 0 {
			t.Fatal("the full filler left a member empty")
		}
		checkEncode(t, m)
	}
	// The filler reaches every member the decoder knows (the lists that
	// TestDecodeFastKnowsEveryMember keeps equal to the types').
	data, err := randomMetadata(f).appendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	seg := raw["segments"].([]any)[0].(map[string]any)
	for _, c := range []struct {
		obj   map[string]any
		names []string
	}{
		{raw, metadataMembers.names()},
		{seg, segmentMembers.names()},
		{seg["files"].([]any)[0].(map[string]any), fileMembers.names()},
		{seg["ivf"].([]any)[0].(map[string]any), ivfMembers.names()},
		{seg["deletes"].(map[string]any), maskMembers.names()},
		{seg["seismic"].(map[string]any), seismicMembers.names()},
	} {
		if len(c.obj) != len(c.names) {
			t.Errorf("encoded %d members, the type has %v", len(c.obj), c.names)
		}
		for _, n := range c.names {
			if _, ok := c.obj[n]; !ok {
				t.Errorf("member %q not encoded", n)
			}
		}
	}
}

// FuzzEncodeMatchesMarshal: the encoder against json.Marshal over random
// generations drawn from the fuzzer's seeds.
func FuzzEncodeMatchesMarshal(f *testing.F) {
	f.Add(uint64(1), uint64(2), false)
	f.Add(uint64(5), uint64(6), true)
	f.Fuzz(func(t *testing.T, a, b uint64, full bool) {
		checkEncode(t, randomMetadata(&filler{r: rand.New(rand.NewPCG(a, b)), full: full}))
	})
}

// BenchmarkEncode encodes a generation of 36 compound segments (the
// bench's one-document commits), with the one-pass encoder and with
// json.Marshal.
func BenchmarkEncode(b *testing.B) {
	m := fullSample()
	m.Segments = m.Segments[:0]
	for i := range 36 {
		s := fullSample().Segments[1]
		s.ID, s.Seismic, s.IVF = segid.ID(2*i+1), nil, nil
		s.Deletes = &Mask{ID: segid.ID(2*i + 2), Deleted: 1, Size: 62}
		m.Segments = append(m.Segments, s)
	}
	m.NextID = 100
	var buf []byte
	b.Run("appendJSON", func(b *testing.B) {
		for b.Loop() {
			var err error
			if buf, err = m.appendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
	})
}

// BenchmarkValidate validates a generation of 36 compound segments with
// masks, as every commit's save does before encoding it.
func BenchmarkValidate(b *testing.B) {
	m := fullSample()
	m.Segments = m.Segments[:0]
	for i := range 36 {
		s := fullSample().Segments[1]
		s.ID, s.Seismic, s.IVF = segid.ID(2*i+1), nil, nil
		s.Deletes = &Mask{ID: segid.ID(2*i + 2), Deleted: 1, Size: 62}
		m.Segments = append(m.Segments, s)
	}
	m.NextID = 100
	for b.Loop() {
		if err := m.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}
