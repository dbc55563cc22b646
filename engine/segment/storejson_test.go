package segment

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/summadev/summa/engine/schema"
)

// stringsFromJSONByMap is stringsFromJSON decoding with encoding/json only:
// the reference the fast path must equal.
func stringsFromJSONByMap(stored []byte, vals []schema.Values, s *schema.Schema, kinds []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(stored, &obj); err != nil {
		return fmt.Errorf("stored JSON: %w", err)
	}
	for i, k := range kinds {
		if k != recStoredStrings {
			continue
		}
		raw, ok := obj[s.Fields[i].Name]
		if !ok || string(raw) == "null" {
			continue
		}
		if len(raw) > 0 && raw[0] == '[' {
			var list []string
			if err := json.Unmarshal(raw, &list); err != nil {
				return fmt.Errorf("field %q: %w", s.Fields[i].Name, err)
			}
			if len(list) > 0 {
				vals[i].Strings = list
			}
			continue
		}
		var one string
		if err := json.Unmarshal(raw, &one); err != nil {
			return fmt.Errorf("field %q: %w", s.Fields[i].Name, err)
		}
		vals[i].Strings = []string{one}
	}
	return nil
}

var storedJSONSeeds = []string{
	`{"id":"a-1","title":["Intro","Guide"],"body":"The quick brown fox","tag":["x"]}`,
	` { "id" : "a-2" , "title" : "T\u00e9st \"quoted\" \\ back" } `,
	`{"id":"dup","id":"last wins","title":null}`,
	`{"title":{"nested":["}","]",{"a":"\""}]},"id":"n"}`,
	`{"id":12,"title":"x"}`,
	`{"id":"ok","title":[1,2]}`,
	`{"id":"ok","title":[]}`,
	`{"i\u0064":"escaped key","id":"plain"}`,
	`{"tïtle":"non-ascii key","id":"z"}`,
	`{"id":"bad utf8 ` + "\xff\xfe" + `"}`,
	`{}`,
	`null`,
	`[1,2]`,
	`"str"`,
	`{"id":"unterminated"`,
	`{"id":"a","note":true,"year":-1.5e3,"raw":false,"emb":[0.1,-2e-3]}`,
	"{\"id\":\"tabs\"\t,\n\"title\"\r:\t\"w\"}",
	`{"id":"ctl` + "\x01" + `"}`,
}

// TestStoredStringsFastPathMatchesDecoding compares stringsFromJSON with
// the encoding/json reference on tricky documents: same values, and an
// error exactly when the reference has one.
func TestStoredStringsFastPathMatchesDecoding(t *testing.T) {
	for _, doc := range storedJSONSeeds {
		checkStoredStrings(t, []byte(doc))
	}
}

func FuzzStoredStrings(f *testing.F) {
	for _, doc := range storedJSONSeeds {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) { checkStoredStrings(t, doc) })
}

func checkStoredStrings(t *testing.T, doc []byte) {
	t.Helper()
	s := testSchema()
	kinds := recordKinds(s, kindVersion(SuffixStore))
	for i := range kinds {
		if s.Fields[i].Type == schema.Text || s.Fields[i].Type == schema.Keyword {
			kinds[i] = recStoredStrings
		}
	}
	got := make([]schema.Values, len(kinds))
	want := make([]schema.Values, len(kinds))
	gerr := stringsFromJSON(doc, got, s, kinds)
	werr := stringsFromJSONByMap(doc, want, s, kinds)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: error %v, reference %v", doc, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: values %+v, reference %+v", doc, got, want)
	}
	// The check alone (Validate's) fails exactly when decoding does.
	if cerr := stringsFromJSON(doc, nil, s, kinds); (cerr == nil) != (werr == nil) {
		t.Fatalf("%q: check %v, reference %v", doc, cerr, werr)
	}
}

// TestCheckRecordAgreesWithParseRecord damages the records of a segment
// byte by byte and checks that checkRecord (Validate's, which builds no
// values) fails exactly when parseRecord does.
func TestCheckRecordAgreesWithParseRecord(t *testing.T) {
	fs, s, info := smallSegment(t, 60)
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sr := r.store
	vals := make([]schema.Values, len(s.Fields))
	compare := func(rec []byte, what string) bool {
		clear(vals)
		_, perr := sr.parseRecord(rec, vals, s)
		_, cerr := sr.checkRecord(rec, s)
		if (perr == nil) != (cerr == nil) {
			t.Fatalf("%s: parseRecord says %v, checkRecord %v", what, perr, cerr)
		}
		return perr != nil
	}
	failures := 0
	for b := uint32(0); b < sr.numBlocks; b++ {
		buf, first, bounds, err := sr.decodeBlock(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(bounds); i++ {
			rec := (*buf)[bounds[i]:bounds[i+1]]
			compare(rec, fmt.Sprintf("doc %d", first+uint32(i)))
			for off := 0; off < len(rec); off += 1 + len(rec)/97 {
				for _, mask := range []byte{0x01, 0x22, 0x80, 0xff} {
					bad := append([]byte(nil), rec...)
					bad[off] ^= mask
					if compare(bad, fmt.Sprintf("doc %d byte %d ^ %#x", first+uint32(i), off, mask)) {
						failures++
					}
				}
			}
			if compare(rec[:len(rec)-1], fmt.Sprintf("doc %d truncated", first+uint32(i))) {
				failures++
			}
		}
		rawPool.Put(buf)
	}
	if failures == 0 {
		t.Fatal("no damaged record failed")
	}
}
