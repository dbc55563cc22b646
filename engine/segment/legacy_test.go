package segment

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

// TestReadsVersion1Postings opens a segment written by the version 1
// post format (testdata/v1: the first 160 Opticks documents, written by
// the parent commit of the format change), validates it, checks that it
// serves the same postings as the same documents written today, and that a
// merge rewrites it into the current format, byte for byte what a fresh
// build writes. Existing indexes stay readable and are
// upgraded by ordinary merges. Its store is version 1 too (with the
// values of the unstored fields): the merge rewrites it as a fresh build's.
func TestReadsVersion1Postings(t *testing.T) {
	s := testSchema()
	fs := vfs.NewMem()
	if err := fs.MkdirAll("idx", 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "v1", "info.json"))
	if err != nil {
		t.Fatal(err)
	}
	var old Info
	if err := json.Unmarshal(raw, &old); err != nil {
		t.Fatal(err)
	}
	for _, fi := range old.Files {
		name := segid.FileName(old.ID, fi.Suffix)
		data, err := os.ReadFile(filepath.Join("testdata", "v1", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, fs, "idx/"+name, data)
	}
	r1, err := Open(fs, "idx", s, old)
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	if v := fileVersion(r1.file(SuffixPostings).data); v != legacyPostVersion {
		t.Fatalf("testdata post file has version %d, want %d", v, legacyPostVersion)
	}
	if v := fileVersion(r1.file(SuffixStore).data); v != legacyStoreVersion {
		t.Fatalf("testdata store file has version %d, want %d", v, legacyStoreVersion)
	}
	if err := r1.Validate(context.Background()); err != nil {
		t.Fatalf("version 1 segment does not validate: %v", err)
	}
	fresh := buildSegment(t, fs, "idx", s, 0x52, opticksDocs(t, s, int(old.Documents)))
	r2, err := Open(fs, "idx", s, fresh)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	for f := range s.Fields {
		if r1.dicts[f] == nil {
			continue
		}
		if got, want := dumpField(t, r1, f), dumpField(t, r2, f); !reflect.DeepEqual(got, want) {
			t.Fatalf("field %d: version 1 postings differ from the same documents in version 2", f)
		}
	}
	if ids, _, err := r1.DocSectionBytes(); err != nil || ids == 0 {
		t.Fatalf("DocSectionBytes of a version 1 segment: %d, %v", ids, err)
	}
	checkDocIDParts(t, r1, true)
	checkDocIDParts(t, r2, false)
	merged, err := Merge(context.Background(), fs, "idx", 0x53, s, []*Reader{r1}, Concat([]*Reader{r1}, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, suffix := range dataSuffixes {
		a := partBytes(t, fs, "idx", fresh, suffix)
		b := partBytes(t, fs, "idx", merged, suffix)
		if !reflect.DeepEqual(a[8:16], b[8:16]) || !reflect.DeepEqual(a[headerSize:len(a)-footerSize], b[headerSize:len(b)-footerSize]) {
			t.Errorf("%s: the merge of the version 1 segment differs from a fresh build", suffix)
		}
	}
}

// dumpField lists every term of a field with its postings and positions.
func dumpField(t *testing.T, r *Reader, f int) []string {
	t.Helper()
	it, err := r.Terms(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for it.Next() {
		p := it.Postings()
		line := it.Term()
		for p.Next() {
			pos, err := p.Positions()
			if err != nil {
				t.Fatal(err)
			}
			line += " " + fmtPosting(p.Doc(), p.Freq(), pos)
		}
		if err := p.checkEnd(); err != nil {
			t.Fatal(err)
		}
		out = append(out, line)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func fmtPosting(doc, freq uint32, pos []uint32) string {
	b, _ := json.Marshal([]any{doc, freq, pos})
	return string(b)
}
