package metadata

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// corpusGenerations are generations of every feature the engine commits:
// text only, dense vectors (IVF runs, models, fragmented), Seismic debt,
// deletion masks, BP counters, empty and absent lists, and every counter at
// zero and at the limit of its type.
func corpusGenerations() []*Metadata {
	text := schema.MustNew(
		schema.Field{Name: "id", Type: schema.Keyword, Primary: true},
		schema.Field{Name: "body", Type: schema.Text},
	)
	vectors := testSchemas[1]
	files := func(sfx ...string) []segment.FileInfo {
		var out []segment.FileInfo
		for i, s := range sfx {
			out = append(out, segment.FileInfo{Suffix: s, Size: int64(10 * (i + 1))})
		}
		return out
	}
	seg := func(id segid.ID, docs uint32) Segment {
		return Segment{Info: segment.Info{ID: id, Documents: docs, Files: files("post", "terms", "store")}}
	}
	textOnly := &Metadata{Version: FormatVersion, Generation: 3, NextID: 4, Schema: text,
		Segments: []Segment{seg(1, 10), seg(2, 1), seg(3, 0)}}
	vec := &Metadata{Version: FormatVersion, Generation: 9, NextID: 0x30, Schema: vectors, Segments: []Segment{{
		Info: segment.Info{ID: 0x2a, Documents: 64, Files: files("cmp"), Parts: files("post", "vec", segment.SuffixIVF),
			IVF: []segment.IVFInfo{
				{Field: "emb", Runs: 3, Vectors: 64, Models: []string{"0123456789abcdef"}},
				{Field: "émb d", Runs: 0, Vectors: 0, Models: []string{}, Fragmented: true},
				{Field: "x", Runs: 1, Vectors: 1},
			}},
	}}}
	seismic := &Metadata{Version: FormatVersion, Generation: 11, NextID: 0x41, Schema: vectors, Segments: []Segment{
		{Info: seg(0x40, 8).Info, Seismic: &SeismicDebt{PendingTerms: 1}},
		{Info: seg(0x3e, 8).Info, Seismic: &SeismicDebt{PendingTerms: 12, PartialPasses: 2}},
		{Info: seg(0x3c, 8).Info, Seismic: &SeismicDebt{PendingTerms: 7, Stalls: 5}, BPConverged: true},
	}}
	masks := &Metadata{Version: FormatVersion, Generation: 20, NextID: 0x100, Schema: text, Segments: []Segment{
		{Info: seg(0xf0, 100).Info, Deletes: &Mask{ID: 0xf1, Deleted: 100, Size: 16}},
		{Info: seg(0xf2, 3).Info, Deletes: &Mask{ID: 0xff, Deleted: 0, Size: 0}, BPUnconvergedPasses: 4},
	}}
	limits := &Metadata{Version: FormatVersion, Generation: math.MaxUint64, NextID: segid.ID(math.MaxUint64), Schema: text,
		Segments: []Segment{{
			Info: segment.Info{ID: segid.ID(math.MaxUint64 - 1), Documents: math.MaxUint32,
				Files: []segment.FileInfo{{Suffix: "post", Size: math.MaxInt64}, {Suffix: "z", Size: 0}},
				IVF:   []segment.IVFInfo{{Field: "f", Runs: math.MaxInt, Vectors: math.MaxUint32}}},
			Deletes:             &Mask{ID: segid.ID(math.MaxUint64 - 2), Deleted: math.MaxUint32, Size: math.MaxInt64},
			BPUnconvergedPasses: math.MaxInt,
			Seismic:             &SeismicDebt{PendingTerms: math.MaxInt, PartialPasses: math.MaxInt, Stalls: math.MaxInt},
		}}}
	return []*Metadata{
		sample(), fullSample(), textOnly, vec, seismic, masks, limits,
		{Version: FormatVersion, NextID: 1, Schema: text},
		{Version: FormatVersion, NextID: 1, Schema: text, Segments: []Segment{}},
		{Version: 0, Generation: 0, NextID: 1, Schema: text, Segments: []Segment{{Info: segment.Info{ID: 1}}}},
	}
}

// corpus returns the texts the engine writes for corpusGenerations: the
// one-pass encoder's bytes (what Save writes), each also with whitespace
// around every token and with every object's members in reverse order,
// as a person or another tool may rewrite the file.
func corpus(t testing.TB) [][]byte {
	var out [][]byte
	for _, m := range corpusGenerations() {
		data, err := m.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data, spaced(data, " "), spaced(data, "\t\r\n "), reversedMembers(t, data))
	}
	return out
}

// spaced puts ws before and after every structural character outside
// strings.
func spaced(data []byte, ws string) []byte {
	var b bytes.Buffer
	b.WriteString(ws)
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString && c == '\\':
			b.WriteByte(c)
			i++
			c = data[i]
		case c == '"':
			inString = !inString
		case !inString && strings.IndexByte("{}[],:", c) >= 0:
			b.WriteString(ws)
			b.WriteByte(c)
			b.WriteString(ws)
			continue
		}
		b.WriteByte(c)
	}
	b.WriteString(ws)
	return b.Bytes()
}

// memberName matches a member's name at the start of an object or after a
// comma.
var memberName = regexp.MustCompile(`"([^"]*)"\s*:`)

// reversedMembers writes data with the members of every object outside
// the schema in reverse order.
func reversedMembers(t testing.TB, data []byte) []byte {
	t.Helper()
	d := fastDecoder{data: data}
	var b bytes.Buffer
	if !reverseValue(&d, &b, false) {
		t.Fatalf("reverse %s", data)
	}
	return b.Bytes()
}

// reverseValue copies the value at d's position to b, objects' members
// reversed unless verbatim.
func reverseValue(d *fastDecoder, b *bytes.Buffer, verbatim bool) bool {
	d.ws()
	start := d.pos
	if verbatim || d.pos >= len(d.data) || (d.data[d.pos] != '{' && d.data[d.pos] != '[') {
		if !d.skipValue(0) {
			return false
		}
		b.Write(d.data[start:d.pos])
		return true
	}
	open := d.data[d.pos]
	d.pos++
	var items [][]byte
	for n := 0; ; n++ {
		d.ws()
		if d.eat('}') || d.eat(']') {
			break
		}
		if n > 0 && !d.eat(',') {
			return false
		}
		var item bytes.Buffer
		keepSchema := false
		if open == '{' {
			d.ws()
			ks := d.pos
			if !d.skipString() {
				return false
			}
			item.Write(d.data[ks:d.pos])
			keepSchema = string(d.data[ks:d.pos]) == `"schema"`
			d.ws()
			if !d.eat(':') {
				return false
			}
			item.WriteByte(':')
		}
		if !reverseValue(d, &item, keepSchema) {
			return false
		}
		items = append(items, item.Bytes())
	}
	if open == '{' {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
		b.WriteByte('{')
		b.Write(bytes.Join(items, []byte(",")))
		b.WriteByte('}')
		return true
	}
	b.WriteByte('[')
	b.Write(bytes.Join(items, []byte(",")))
	b.WriteByte(']')
	return true
}

// checkFastAgrees fails t when the one-pass decoder accepts data and the
// reference refuses it or decodes another generation. It reports whether
// the one-pass decoder accepted.
func checkFastAgrees(t testing.TB, data []byte) bool {
	t.Helper()
	fast, ok := decodeFast(data)
	if !ok {
		return false
	}
	ref, err := decodeReference(data)
	if err != nil {
		t.Fatalf("%q: the one-pass decoder accepted what the reference refuses: %v", data, err)
	}
	if !reflect.DeepEqual(fast, ref) {
		t.Fatalf("%q: decoded differently:\nfast %s\nref  %s", data, dump(fast), dump(ref))
	}
	return true
}

// unhandled reports whether data holds what the one-pass decoder leaves
// to the reference though the reference may accept it: escapes, signs,
// fractions and exponents (and invalid UTF-8, which the reference reads
// as U+FFFD).
func unhandled(data []byte) bool {
	for i, c := range data {
		digitNext := i+1 < len(data) && '0' <= data[i+1] && data[i+1] <= '9'
		digitBefore := i > 0 && '0' <= data[i-1] && data[i-1] <= '9'
		switch {
		case c == '\\':
			return true
		case strings.IndexByte("-+.eE", c) >= 0 && (digitNext || digitBefore):
			return true
		}
	}
	return !utf8.Valid(data)
}

// checkDeclineIsUnhandled fails t when the reference accepts data, the
// one-pass decoder declined it, and nothing in it is what the one-pass
// decoder leaves to the reference (escapes, signs, fractions, exponents,
// invalid UTF-8, a member name not in known).
func checkDeclineIsUnhandled(t testing.TB, data []byte, known map[string]bool) {
	t.Helper()
	if !json.Valid(data) || unhandled(data) {
		return // the reference refuses it, or it is left to the reference
	}
	if _, err := decodeReference(data); err != nil {
		return
	}
	for _, m := range memberName.FindAllSubmatch(data, -1) {
		if !known[string(m[1])] {
			return
		}
	}
	t.Fatalf("%q: the reference accepts it, the one-pass decoder declined it for no reason it documents", data)
}

// knownMembers are the member names of the corpus: the decoder's and the
// schema's.
func knownMembers(t testing.TB) map[string]bool {
	known := map[string]bool{}
	for _, data := range corpus(t) {
		for _, m := range memberName.FindAllSubmatch(data, -1) {
			known[string(m[1])] = true
		}
	}
	return known
}

// TestDecodeFastAgreesWithReferenceOnCorpus: the one-pass decoder accepts
// every text of the corpus, spaced and reordered, to exactly the
// reference's generation, and on every truncation and every one-byte
// change of those texts, it agrees with the reference whenever it
// accepts, and declines only what is documented as left to the
// reference.
func TestDecodeFastAgreesWithReferenceOnCorpus(t *testing.T) {
	known := knownMembers(t)
	texts := corpus(t)
	for _, data := range texts {
		if !checkFastAgrees(t, data) {
			t.Fatalf("the one-pass decoder declined a text of the corpus: %s", data)
		}
	}
	replacements := []byte{' ', '"', ',', ':', '0', '1', '9', '{', '}', '[', ']', 'x', 'n', '-', '.', 'e', '\\', 0x1f, 0x7f, 0x80, 0xc3}
	// Each position gets per replacements, in turn, so that every
	// replacement meets every kind of token across the corpus.
	per := 3
	if testing.Short() {
		per = 1
	}
	mutated := []byte{}
	for i, data := range texts {
		if i%4 != 0 {
			continue // the encoder's bytes only; the spaced and reordered texts are read whole above
		}
		for p := 0; p <= len(data); p++ {
			// Cut to its capacity too: nothing past the end can be read.
			checkFastAgrees(t, data[:p:p])
			if p == len(data) {
				break
			}
			// Deleted.
			in := append(append(mutated[:0], data[:p]...), data[p+1:]...)
			if !checkFastAgrees(t, in) {
				checkDeclineIsUnhandled(t, in, known)
			}
			for j := range per {
				r := replacements[(p*per+j+i)%len(replacements)]
				if r == data[p] {
					continue
				}
				in := append(append(append(mutated[:0], data[:p]...), r), data[p+1:]...)
				if !checkFastAgrees(t, in) {
					checkDeclineIsUnhandled(t, in, known)
				}
			}
		}
	}
}

// TestDecodeFastAgreesOnRandomGenerations: on random generations (every
// member, extreme and negative numbers, strings json.Marshal escapes),
// the one-pass decoder agrees with the reference, and declines only the
// texts with what it leaves to the reference.
func TestDecodeFastAgreesOnRandomGenerations(t *testing.T) {
	known := knownMembers(t)
	accepted := 0
	for _, full := range []bool{false, true} {
		f := &filler{r: rand.New(rand.NewPCG(7, 8)), full: full}
		for range 300 {
			data, err := randomMetadata(f).appendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			if checkFastAgrees(t, data) {
				accepted++
			} else {
				checkDeclineIsUnhandled(t, data, known)
			}
		}
	}
	if accepted == 0 {
		t.Fatal("the one-pass decoder declined every random generation")
	}
}
