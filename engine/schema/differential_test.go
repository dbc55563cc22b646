package schema

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// mixedSchema stores a field of every kind, vectors included, and has
// multi-valued fields of every scalar type.
const mixedSchema = `{"fields":[
 {"name":"id","type":"keyword","primary":true},
 {"name":"title","type":"text"},
 {"name":"tags","type":"keyword","multi":true},
 {"name":"notes","type":"text","multi":true},
 {"name":"year","type":"u64"},
 {"name":"delta","type":"i64","multi":true},
 {"name":"score","type":"f64","multi":true},
 {"name":"n","type":"i64"},
 {"name":"ratio","type":"f64"},
 {"name":"emb","type":"dense_vector","dims":3,"stored":true},
 {"name":"terms","type":"sparse_vector","stored":true},
 {"name":"body","type":"text","stored":false}
]}`

// numericKeySchema has a u64 primary key.
const numericKeySchema = `{"fields":[
 {"name":"num","type":"u64","primary":true},
 {"name":"title","type":"text"},
 {"name":"at","type":"i64","multi":true}
]}`

// sameAsReference fails t unless ParseDocument and the reference decoder
// agree on data: both accept it with equal documents (stored bytes
// included), or both refuse it with a *DocumentError naming the same field
// for the same reason. Only the detail after "malformed JSON" may differ
// (encoding/json's and memberScanner's wording of a syntax error), and
// the field of "unknown field" when there are several (the reference
// picks one at random).
func sameAsReference(t *testing.T, s *Schema, data []byte) (accepted bool) {
	t.Helper()
	want, wantErr := refParseDocument(s, data)
	got, gotErr := s.ParseDocument(data)
	switch {
	case wantErr == nil && gotErr == nil:
		if got.PrimaryKey != want.PrimaryKey || !reflect.DeepEqual(got.Fields, want.Fields) || !bytes.Equal(got.Stored, want.Stored) {
			t.Fatalf("%q: documents differ:\n got %q %+v %s\nwant %q %+v %s", data,
				got.PrimaryKey, got.Fields, got.Stored, want.PrimaryKey, want.Fields, want.Stored)
		}
		return true
	case wantErr == nil || gotErr == nil:
		t.Fatalf("%q: ParseDocument says %v, the reference %v", data, gotErr, wantErr)
	}
	var g, w *DocumentError
	if !errors.As(gotErr, &g) || !errors.As(wantErr, &w) {
		t.Fatalf("%q: refusals %v / %v are not both *DocumentError", data, gotErr, wantErr)
	}
	const malformed = "malformed JSON"
	switch {
	case strings.HasPrefix(w.Reason, malformed):
		if g.Field != w.Field || !strings.HasPrefix(g.Reason, malformed) {
			t.Fatalf("%q: refused with %v, the reference with %v", data, gotErr, wantErr)
		}
	case w.Reason == "unknown field":
		raw, _ := refSplitObject(data)
		_, inDoc := raw[g.Field]
		_, known := s.byName[g.Field]
		if g.Reason != w.Reason || !inDoc || known {
			t.Fatalf("%q: refused with %v, the reference with %v", data, gotErr, wantErr)
		}
	case *g != *w:
		t.Fatalf("%q: refused with %v, the reference with %v", data, gotErr, wantErr)
	}
	return false
}

// TestParseDocumentMatchesReference runs ParseDocument and the reference
// decoder over real text encoded in many ways and mutated byte by byte,
// on three schemas; they must agree on every input.
func TestParseDocumentMatchesReference(t *testing.T) {
	budget := 3 << 20
	if testing.Short() {
		budget = 256 << 10
	}
	docs := realCorpus(t, budget)
	schemas := []*Schema{mustParse(t, benchSchema), mustParse(t, mixedSchema), mustParse(t, numericKeySchema), mustParse(t, allTypes)}
	r := rand.New(rand.NewPCG(7, 11))
	inputs, accepted := 0, 0
	check := func(s *Schema, data []byte) {
		inputs++
		if sameAsReference(t, s, data) {
			accepted++
		}
	}
	for i, line := range ndjson(t, docs) {
		check(schemas[0], line)
		s := schemas[r.IntN(len(schemas))]
		doc := randomDocument(r, s, &docs[i], docs[r.IntN(len(docs))].Body)
		check(s, doc)
		for k := 0; k < 6; k++ {
			check(s, mutate(r, doc))
		}
		check(schemas[0], mutate(r, line))
		if i%50 == 0 { // every prefix of a short document
			short := doc[:min(len(doc), 300)]
			for n := range len(short) {
				check(s, short[:n])
			}
		}
	}
	for _, s := range schemas {
		for _, c := range edgeCases() {
			check(s, []byte(c))
		}
	}
	t.Logf("%d inputs, %d accepted by both, %d refused by both", inputs, accepted, inputs-accepted)
	if accepted < inputs/10 || accepted > inputs*9/10 {
		t.Fatalf("%d of %d inputs accepted: the mix tests too little of one side", accepted, inputs)
	}
}

// edgeCases are inputs at the edges of the grammar and of the limits.
func edgeCases() []string {
	deep := func(n int, open, close string) string {
		return `{"id":"x","tags":` + strings.Repeat(open, n) + strings.Repeat(close, n) + `}`
	}
	many := func(n int, item string) string {
		return `{"id":"x","tags":[` + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + `]}`
	}
	sparse := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"id":"x","terms":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"d%d":%d`, i, i%7)
		}
		b.WriteString("}}")
		return b.String()
	}
	out := []string{
		"", " ", "\t\n", "{", "}", "[", "]", ",", ":", "x", `"x"`, `"x`, `"\x"`, "1", "1x", "-", "01", "tru", "true", "truex", "nul", "null",
		"[1,", "{}", "{ }", "{} ", "{}{}", "{}x", "{}\x00", "{,}", `{"id"}`, `{"id":}`, `{"id":"x",}`, `{"id":"x" "title":"y"}`,
		`{"id":"x"]`, `{"id" "x"}`, `{"id":"x"`, `{"id":"x",`, `{"id":`, `{"id`, `{1:2}`, `{"id":"x","zz":1,"zz":2}`,
		`{"zz":1,"yy":2}`, `{"":0}`, `{"":0,"":1}`, `{"id":"x","":0}`, `{"zz":[}`, `{"id":"x","title":"a","title":[`, `{"\u0069d":"x"}`, `{"id":"x","\u0069d":"y"}`,
		`{"id":"\ud800"}`, `{"id":"\udc00\ud800"}`, `{"id":"\ud83d\ude00"}`, `{"id":"\ud83d\u0041"}`, `{"id":"\ud83d"}`, `{"id":"a\/b\\c\"d"}`, `{"id":"a\'b"}`, `{"id":"a\ab"}`, `{"id":"a\U0041"}`,
		`{"id":"\u00e9\u0000"}`, `{"id":"x\u12"}`, `{"id":"x\u12g4"}`, "{\"id\":\"x\ty\"}", `{"id":""}`, `{"id":null}`, `{"id":"x","n":-0}`,
		`{"id":"x","n":-}`, `{"id":"x","n":1.}`, `{"id":"x","n":1e}`, `{"id":"x","n":1e+}`, `{"id":"x","n":00}`, `{"id":"x","n":0x1}`,
		`{"id":"x","n":1.5e3}`, `{"id":"x","n":9223372036854775807}`, `{"id":"x","n":-9223372036854775808}`, `{"id":"x","n":-9223372036854775809}`,
		`{"id":"x","year":18446744073709551615}`, `{"id":"x","year":18446744073709551616}`, `{"id":"x","ratio":1e308}`, `{"id":"x","ratio":-1e309}`,
		`{"id":"x","ratio":4.9e-324}`, `{"id":"x","ratio":1e-400}`, `{"id":"x","score":[1,2.5,-3e2, 4 ]}`, `{"id":"x","score":[[1]]}`, `{"id":"x","delta":[ [ 1 , 2 ] , 3]}`, `{"id":"x","delta":[1, {"a" : [ 2 ]} ]}`,
		`{"id":"x","year":{"a" : 1}}`, `{"id":"x","n":"\u0031"}`, `{"id":"x","tags":["a", "` + strings.Repeat("k", 60) + `" ,true]}`,
		`{"id":"x","tags":[ "a" , "b" ]}`, `{"id":"x","tags":[]}`, `{"id":"x","tags":[null]}`, `{"id":"x","tags":[{"a":[1]}]}`,
		`{"id":"x","title":["a"]}`, `{"id":"x","emb":[1, 2 ,3]}`, `{"id":"x","emb":[1,2,3,]}`, `{"id":"x","terms":{ "b" : 1 , "a":2 }}`,
		`{"id":"x","terms":{}}`, `{"id":"x","emb":[]}`, `{"id":"x","emb":null}`, `{"id":"x","terms":null,"terms":{}}`,
		"{\"id\":\"x\"}\n", "\r\n {\"id\":\"x\"} \t", "{\"id\":\"x\"}\f", `{"id":"x"}]`, `{"id":"x"}}`, `{"id":"x",,"title":"y"}`,
		`{"num":0}`, `{"num":-1}`, `{"num":"1"}`, `{"num":1e2}`, `{"num":1,"at":[-5,6]}`,
		`{"id":"` + strings.Repeat("k", MaxTermBytes) + `"}`, `{"id":"` + strings.Repeat("k", MaxTermBytes+1) + `"}`,
		`{"id":"` + strings.Repeat(`\u00e9`, MaxTermBytes/2+1) + `"}`,
		deep(maxNestingDepth, "[", "]"), deep(maxNestingDepth+1, "[", "]"), deep(maxNestingDepth-1, "[", "]"),
		deep(maxNestingDepth, `{"a":`, "}"), deep(maxNestingDepth+1, `{"a":`, "}"), deep(maxNestingDepth+1, "[", ""),
		`{"id":"x","emb":[1,true,3]}`, `{"id":"x","emb":[false,1,3]}`, `{"id":"x","emb":[1,"a",3]}`, `{"id":"x","emb":[[1],2,3]}`,
		`{"id":"x","emb":[1,2,{"a":1}]}`, `{"id":"x","emb":[1,2,3e38]}`, `{"id":"x","emb":[1,2,-3.5e38]}`, `{"id":"x","emb":[1e-50,-0,0.1]}`,
		`{"id":"x","emb":[ 1 , 2 , 3 ]}`, `{"id":"x","emb":{}}`, `{"id":"x","emb":"x"}`, `{"id":"x","emb":1}`, `{"id":"x","emb":true}`,
		`{"id":"x","terms":{"a":true}}`, `{"id":"x","terms":{"a":false}}`, `{"id":"x","terms":{"a":{}}}`, `{"id":"x","terms":{"a":"1"}}`,
		`{"id":"x","terms":{"a":1,"\u0061":2}}`, `{"id":"x","terms":{"\u00e9":1,"e":2,"\ud800":3}}`, `{"id":"x","terms":{"a" : 1e39}}`,
		`{"id":"x","terms":{"` + strings.Repeat("d", MaxTermBytes) + `":1}}`, `{"id":"x","terms":{"` + strings.Repeat("d", MaxTermBytes+1) + `":1}}`,
		`{"id":"x","terms":[]}`, `{"id":"x","terms":"a"}`, `{"id":"x","terms":0}`, `{"id":"x","terms":{"b":1,"a":null}}`,
		sparse(MaxSparseEntries), sparse(MaxSparseEntries + 1),
		many(MaxMultiValues, `"t"`), many(MaxMultiValues+1, `"t"`), many(MaxMultiValues+1, `null`),
	}
	return out
}

// randomDocument writes a document for s from real text: fields in any
// order, values of the right type mostly and of the wrong one sometimes,
// strings escaped in every way JSON allows, whitespace anywhere.
func randomDocument(r *rand.Rand, s *Schema, d *corpusDoc, other string) []byte {
	var b bytes.Buffer
	ws := func() {
		for r.IntN(6) == 0 {
			b.WriteByte(" \t\r\n"[r.IntN(4)])
		}
	}
	words := strings.Fields(d.Body + " " + other)
	word := func() string {
		if len(words) == 0 {
			return ""
		}
		return words[r.IntN(len(words))]
	}
	order := r.Perm(len(s.Fields))
	ws()
	b.WriteByte('{')
	first := true
	member := func(name string, value func()) {
		if !first {
			ws()
			b.WriteByte(',')
		}
		first = false
		ws()
		writeString(r, &b, name)
		ws()
		b.WriteByte(':')
		ws()
		value()
	}
	for _, i := range order {
		f := &s.Fields[i]
		if r.IntN(8) == 0 && !f.Primary {
			continue
		}
		member(f.Name, func() {
			if r.IntN(20) == 0 {
				b.WriteString("null")
				return
			}
			if f.Multi && r.IntN(3) > 0 || r.IntN(40) == 0 {
				b.WriteByte('[')
				for k := range r.IntN(5) {
					if k > 0 {
						ws()
						b.WriteByte(',')
					}
					ws()
					writeValue(r, &b, f, d, word)
					ws()
				}
				b.WriteByte(']')
				return
			}
			writeValue(r, &b, f, d, word)
		})
		if r.IntN(60) == 0 {
			member(f.Name, func() { writeValue(r, &b, f, d, word) })
		}
		if r.IntN(60) == 0 {
			member(word(), func() { writeString(r, &b, word()) })
		}
	}
	ws()
	b.WriteByte('}')
	ws()
	return b.Bytes()
}

// writeValue writes a value for f, of the wrong type one time in 25.
func writeValue(r *rand.Rand, b *bytes.Buffer, f *Field, d *corpusDoc, word func() string) {
	typ := f.Type
	if r.IntN(25) == 0 {
		typ = []FieldType{Text, U64, I64, F64, DenseVector, SparseVector}[r.IntN(6)]
	}
	switch typ {
	case Text, Keyword:
		switch {
		case f.Primary:
			writeString(r, b, d.ID)
		case f.Name == "title":
			writeString(r, b, d.Title)
		case f.Name == "body":
			writeString(r, b, d.Body)
		default:
			writeString(r, b, word())
		}
	case U64:
		b.WriteString(strconv.Itoa(len(word()) * r.IntN(1000)))
	case I64:
		b.WriteString(strconv.Itoa(len(word()) - r.IntN(20)))
	case F64:
		b.WriteString([]string{"0", "-0", "1.5", "-2.25e-3", "3E+2", "1e309", "12345678901234567890", strconv.Itoa(len(d.Body))}[r.IntN(8)])
	case DenseVector:
		n := 3
		if r.IntN(10) == 0 {
			n = r.IntN(5)
		}
		b.WriteByte('[')
		for k := range n {
			if k > 0 {
				b.WriteString(", "[:1+r.IntN(2)])
			}
			b.WriteString([]string{"0.5", "-1", "2e-3", "7", "1e39", "null"}[min(r.IntN(12), 5)])
		}
		b.WriteByte(']')
	case SparseVector:
		b.WriteByte('{')
		for k := range r.IntN(4) {
			if k > 0 {
				b.WriteByte(',')
			}
			writeString(r, b, word())
			b.WriteString(": "[:1+r.IntN(2)])
			b.WriteString([]string{"1", "0.25", "-3", "null"}[min(r.IntN(8), 3)])
		}
		b.WriteByte('}')
	}
}

// writeString writes s as a JSON string, escaping some runes that need no
// escape (as \uXXXX, surrogate pairs, or \/), and now and then an escaped
// lone or reversed surrogate.
func writeString(r *rand.Rand, b *bytes.Buffer, s string) {
	b.WriteByte('"')
	fancy := r.IntN(3) == 0
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == '\n' && (!fancy || r.IntN(2) == 0):
			b.WriteString(`\n`)
		case c < 0x20 || fancy && r.IntN(30) == 0:
			if c > 0xffff {
				c1, c2 := c-0x10000>>10+0xd800, (c-0x10000)&0x3ff+0xdc00
				fmt.Fprintf(b, `\u%04x\u%04X`, c1, c2)
			} else {
				fmt.Fprintf(b, `\u%04x`, c)
			}
		case c == '/' && fancy:
			b.WriteString(`\/`)
		default:
			b.WriteRune(c)
		}
		if fancy && r.IntN(500) == 0 {
			b.WriteString([]string{`\ud800`, `\udfff\ud800`, `\t`, `\b\f\r`, `\ud834\udd1e`}[r.IntN(5)])
		}
	}
	b.WriteByte('"')
}

// mutate returns a copy of doc with a few bytes replaced, inserted,
// deleted, or the text cut short.
func mutate(r *rand.Rand, doc []byte) []byte {
	const alphabet = "{}[]\":,\\' \t\n0123456789-+.eEtfnul/\x00\x1f\xff\xc3"
	out := append([]byte(nil), doc...)
	for range 1 + r.IntN(3) {
		if len(out) == 0 {
			break
		}
		i := r.IntN(len(out))
		c := alphabet[r.IntN(len(alphabet))]
		switch r.IntN(5) {
		case 0:
			out[i] = c
		case 1:
			out = append(out[:i], append([]byte{c}, out[i:]...)...)
		case 2:
			out = append(out[:i], out[i+1:]...)
		case 3:
			out = out[:i]
		case 4:
			if j := bytes.IndexByte(out[i:], ','); j > 0 { // repeat a member
				k := bytes.LastIndexByte(out[:i], ',')
				if k >= 0 {
					out = append(out[:i+j], append(append([]byte(nil), out[k:i+j]...), out[i+j:]...)...)
				}
			}
		}
	}
	return out
}

// FuzzParseDocumentMatchesReference checks ParseDocument against the
// reference decoder on any input, with the mixed schema.
func FuzzParseDocumentMatchesReference(f *testing.F) {
	for _, c := range edgeCases() {
		if len(c) < 4096 {
			f.Add([]byte(c))
		}
	}
	s := mustParse(f, mixedSchema)
	r := rand.New(rand.NewPCG(3, 5))
	docs := realCorpus(f, 64<<10)
	for i := range docs {
		if i%4 == 0 {
			f.Add(randomDocument(r, s, &docs[i], docs[r.IntN(len(docs))].Body))
		}
	}
	all := mustParse(f, allTypes)
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsReference(t, s, data)
		sameAsReference(t, all, data)
	})
}
