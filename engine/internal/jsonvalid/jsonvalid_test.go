package jsonvalid

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/summadev/summa/internal/corpus"
)

// edgeCases are texts at the borders of json.Valid's grammar.
var edgeCases = []string{
	``, ` `, `{}`, `[]`, ` {} `, "\t[\r\n]\n", `{`, `}`, `[`, `]`, `{]`, `[}`,
	`{"a":1}`, `{"a":1,}`, `{"a" : [1, 2 ,3 ] }`, `{"a"}`, `{"a":}`, `{,}`, `{1:2}`, `[1,]`, `[,1]`, `[1 2]`,
	`{"a":1 "b":2}`, `{"a":1}{}`, `{} {}`, `1 2`, `"a" "b"`,
	`0`, `-0`, `-`, `01`, `-01`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `1.5e3`, `-1.0e-0`, `1x`, `+1`,
	`123456789012345678901234567890`, `0.0000`, `0e0`, `0.e1`, `1.e1`,
	`true`, `false`, `null`, `tru`, `nul`, `truex`, `True`, `nulll`, `[true,false,null]`,
	`""`, `"a"`, `"`, `"abc`, `"a\"b"`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\uD800"`, `"\uDC00\uD800"`,
	`"\u12"`, `"\u12G4"`, `"\x"`, `"\'"`, `"\`, `"\u"`, "\"\x00\"", "\"\x1f\"", "\"\x7f\"", "\"\xff\xfe\"",
	"\"caf\xc3\xa9\"", "\"\xed\xa0\x80\"", "\"tab\there\"", "\"\n\"",
	`"0123456789abcdef0123456789abcdef"`, `"0123456\"89abcdef01234\\6789abcdef"`, `"01234567"`, `"0123456"`,
	`"012345678`, "\"0123456\x01\"", "\"01234567\x1f89\"",
	`{"a":{"b":{"c":[{"d":[]}]}}}`, `[[[[[[[[]]]]]]]]`, `[[[[[]]]]`, `{"a":[}`,
	"\ufeff{}", "{}\x00", `[1,[2,[3]],{"x":[4,{"y":5}]}]`,
}

// storedDocuments returns documents as the engine stores them: JSON
// objects of the corpus's paragraphs, as bench-replication ingests them,
// and some with escapes and other kinds of values.
func storedDocuments(t testing.TB) [][]byte {
	ps, err := corpus.Paragraphs()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for id := range 64 {
		var body strings.Builder
		for k := range 8 {
			body.WriteString(ps[(id*7+k*13)%len(ps)])
			fmt.Fprintf(&body, " w%dx%d ", id%5000, k)
		}
		doc, err := json.Marshal(map[string]any{"id": fmt.Sprintf("d%d", id), "body": body.String(),
			"tags": []string{"a\"b", "c\\d", "<é>", "\u2028"}, "n": id * 37, "x": float64(id) / 7, "ok": id%2 == 0, "none": nil})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, doc)
	}
	return out
}

// TestValidAgreesWithEncodingJSON: the edge cases, the stored documents,
// each of their prefixes, and deep nesting around the 10,000 limit get
// json.Valid's answers.
func TestValidAgreesWithEncodingJSON(t *testing.T) {
	texts := append([]string(nil), edgeCases...)
	for _, d := range storedDocuments(t)[:4] {
		for n := 0; n <= len(d); n += 1 + n/64 {
			texts = append(texts, string(d[:n]))
		}
		texts = append(texts, string(d))
	}
	for _, depth := range []int{255, 256, 257, 9999, 10000, 10001, 12000} {
		texts = append(texts, strings.Repeat("[", depth)+strings.Repeat("]", depth))
		texts = append(texts, strings.Repeat(`{"a":`, depth)+"1"+strings.Repeat("}", depth))
		texts = append(texts, strings.Repeat(`[{"a":`, depth/2)+"1"+strings.Repeat("}]", depth/2))
	}
	valid := 0
	for _, s := range texts {
		want := json.Valid([]byte(s))
		if got := Valid([]byte(s)); got != want {
			t.Errorf("Valid(%.80q) = %v, json.Valid says %v", s, got, want)
		}
		if want {
			valid++
		}
	}
	if valid < 40 || len(texts)-valid < 40 {
		t.Fatalf("too few cases of one answer: %d of %d valid", valid, len(texts))
	}
}

// FuzzValid checks Valid against json.Valid on arbitrary bytes, seeded
// with the edge cases and real stored documents (make fuzz runs it).
func FuzzValid(f *testing.F) {
	for _, s := range edgeCases {
		f.Add([]byte(s))
	}
	for _, d := range storedDocuments(f)[:8] {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Valid(data), json.Valid(data); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", data, got, want)
		}
	})
}

// BenchmarkValid compares Valid with json.Valid on stored documents.
func BenchmarkValid(b *testing.B) {
	docs := storedDocuments(b)
	var n int64
	for _, d := range docs {
		n += int64(len(d))
	}
	for _, bc := range []struct {
		name  string
		valid func([]byte) bool
	}{{"jsonvalid", Valid}, {"encoding-json", json.Valid}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				for _, d := range docs {
					if !bc.valid(d) {
						b.Fatal("invalid")
					}
				}
			}
		})
	}
}
