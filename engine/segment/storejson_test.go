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
	kinds := recordKinds(s)
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
}
