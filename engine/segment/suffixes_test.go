package segment

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// TestSeismicFileOnlyForSparseSchemas: a schema without a sparse vector
// field gets no seis file (one file and one fsync less per segment), its
// segment opens and validates; a schema with one gets the file.
func TestSeismicFileOnlyForSparseSchemas(t *testing.T) {
	withSparse := testSchema()
	var fields []schema.Field
	for _, f := range withSparse.Fields {
		if f.Type != schema.SparseVector {
			fields = append(fields, f)
		}
	}
	textOnly := schema.MustNew(fields...)
	for _, c := range []struct {
		name string
		s    *schema.Schema
		want bool
	}{{"sparse", withSparse, true}, {"no sparse", textOnly, false}} {
		fs := vfs.NewMem()
		var docs []*schema.Document
		for i, p := range opticksParagraphs(t)[:40] {
			var m map[string]any
			if err := json.Unmarshal(opticksJSON(i, p), &m); err != nil {
				t.Fatal(err)
			}
			if !c.want {
				delete(m, "sp")
			}
			b, _ := json.Marshal(m)
			d, err := c.s.ParseDocument(b)
			if err != nil {
				t.Fatalf("%s: doc %d: %v", c.name, i, err)
			}
			docs = append(docs, d)
		}
		info := buildSegment(t, fs, "idx", c.s, 7, docs)
		var suffixes []string
		for _, f := range info.Files {
			suffixes = append(suffixes, f.Suffix)
		}
		if got := slices.Contains(suffixes, SuffixSeismic); got != c.want {
			t.Fatalf("%s: files %v, seis listed %v, want %v", c.name, suffixes, got, c.want)
		}
		if _, err := fs.Stat(fs.PathJoin("idx", segid.FileName(info.ID, SuffixSeismic))); (err == nil) != c.want {
			t.Fatalf("%s: seis file on disk: %v, want %v", c.name, err == nil, c.want)
		}
		if err := Validate(context.Background(), fs, "idx", c.s, info); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
}
