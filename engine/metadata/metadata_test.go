package metadata

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segment"
)

// sample is a generation with a segment, a mask and every optional member.
func sample() *Metadata {
	return &Metadata{
		Version: FormatVersion, Generation: 7, NextID: 0x12,
		Schema: schema.MustNew(schema.Field{Name: "id", Type: schema.Keyword, Primary: true}),
		Segments: []Segment{{
			Info: segment.Info{ID: 0x10, Documents: 5, Files: []segment.FileInfo{
				{Suffix: "post", Size: 10}, {Suffix: "store", Size: 20},
			}},
			Deletes:     &Mask{ID: 0x11, Deleted: 2, Size: 8},
			BPConverged: true, BPUnconvergedPasses: 1,
		}},
	}
}

func encode(t testing.TB, m *Metadata) string {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestSaveLoadRoundTrip(t *testing.T) {
	fs := vfs.NewMem()
	for _, m := range []*Metadata{sample(), {Version: FormatVersion, NextID: 1, Schema: sample().Schema}} {
		if err := Save(fs, "", m); err != nil {
			t.Fatal(err)
		}
		got, err := Load(fs, "")
		if err != nil {
			t.Fatalf("load what Save wrote: %v", err)
		}
		if encode(t, got) != encode(t, m) {
			t.Fatalf("round trip:\n%s\n%s", encode(t, m), encode(t, got))
		}
	}
}

func TestDecodeRefusesCoercions(t *testing.T) {
	good := encode(t, sample())
	for _, c := range []struct{ name, from, to, want string }{
		{"generation null", `"generation":7`, `"generation":null`, "generation: null"},
		{"nextId null", `"nextId":"12"`, `"nextId":null`, "nextId: null"},
		{"nextId zero", `"nextId":"12"`, `"nextId":"0"`, "nextId is 0"},
		{"version null", `"version":1`, `"version":null`, "version: null"},
		{"segment id null", `"id":"10"`, `"id":null`, "segments[0].id: null"},
		{"documents null", `"documents":5`, `"documents":null`, "documents: null"},
		{"documents negative", `"documents":5`, `"documents":-5`, "documents"},
		{"documents fractional", `"documents":5`, `"documents":5.5`, "documents"},
		{"documents beyond uint32", `"documents":5`, `"documents":4294967296`, "documents"},
		{"file size null", `"size":10`, `"size":null`, "size: null"},
		{"file size negative", `"size":10`, `"size":-10`, "size -10"},
		{"file suffix with a slash", `"suffix":"post"`, `"suffix":"../x"`, "suffix"},
		{"file listed twice", `"suffix":"store"`, `"suffix":"post"`, "listed twice"},
		{"mask null", `"deletes":{"id":"11","deleted":2,"size":8}`, `"deletes":null`, "deletes: null"},
		{"passes negative", `"bpUnconvergedPasses":1`, `"bpUnconvergedPasses":-1`, "bpUnconvergedPasses -1"},
		{"generation twice", `"generation":7`, `"generation":7,"generation":9`, "appears twice"},
		{"generation of another case", `"generation":7`, `"Generation":7`, "case-sensitive"},
		{"schema null", `"schema":{`, `"schema":null,"unknown":{`, "schema: null"},
		{"schema field null", `"indexed":true`, `"indexed":null`, "indexed: null"},
		{"trailing garbage", `}]}`, `}]}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := strings.Replace(good, c.from, c.to, 1)
			if in == good && c.from != c.to {
				t.Fatalf("%q not in %s", c.from, good)
			}
			if c.name == "trailing garbage" {
				in += `{"generation":9}`
				c.want = "trailing data"
			}
			_, err := Decode([]byte(in))
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%s: %v, want ErrCorrupt containing %q", in, err, c.want)
			}
		})
	}
}

func TestDecodeAcceptsWhatOlderAndNewerVersionsWrite(t *testing.T) {
	// A nil list is written as null; a later version may add members.
	in := `{"version":1,"generation":0,"nextId":"1","schema":{"fields":[{"name":"id","type":"keyword","primary":true,"indexed":true,"stored":true}]},"segments":null,"future":{"x":null}}`
	m, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Segments) != 0 || m.NextID != 1 {
		t.Fatalf("decoded %+v", m)
	}
}

// FuzzLoad checks the metadata.json reader: no content panics Load, every
// refusal of content matches ErrCorrupt, and an accepted generation is
// valid and survives Save and Load unchanged.
func FuzzLoad(f *testing.F) {
	good := encode(f, sample())
	for _, seed := range []string{
		good, strings.Replace(good, `"generation":7`, `"generation":null`, 1),
		strings.Replace(good, `"size":10`, `"size":null`, 1), strings.Replace(good, `"id":"10"`, `"id":null`, 1),
		strings.Replace(good, `"nextId":"12"`, `"nextId":"0"`, 1), good + "{}", `{"segments":null}`, `null`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := vfs.NewMem()
		file, err := fs.Create(FileName, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := file.Write(data); err != nil {
			t.Fatal(err)
		}
		file.Close()
		m, err := Load(fs, "")
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%q: refusal %v does not match ErrCorrupt", data, err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("%q: accepted an invalid generation: %v", data, err)
		}
		if err := Save(fs, "", m); err != nil {
			t.Fatalf("%q: save what Load accepted: %v", data, err)
		}
		again, err := Load(fs, "")
		if err != nil {
			t.Fatalf("%q: load what Save wrote: %v", data, err)
		}
		if !reflect.DeepEqual(again.IDs(), m.IDs()) || encode(t, again) != encode(t, m) {
			t.Fatalf("%q: round trip changed the generation:\n%s\n%s", data, encode(t, m), encode(t, again))
		}
	})
}
