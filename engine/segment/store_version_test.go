package segment

import (
	"github.com/summadev/summa/engine/schema"
)

// keptDocument returns what Reader.Document gives back of d from a
// segment of the current store format: d without the strings and sparse
// vectors of the fields that are not stored (the store no longer keeps
// them).
func keptDocument(s *schema.Schema, d *schema.Document) *schema.Document {
	out := *d
	out.Fields = append([]schema.Values(nil), d.Fields...)
	for i := range s.Fields {
		f := &s.Fields[i]
		if f.IsStored() || i >= len(out.Fields) {
			continue
		}
		switch f.Type {
		case schema.Text, schema.Keyword:
			out.Fields[i].Strings = nil
		case schema.SparseVector:
			out.Fields[i].Sparse = nil
		}
	}
	return &out
}

// withUnstored returns d, a document rebuilt by Reader.Document, with the
// values of its fields that are not stored taken from the input document
// of the same primary key (inputs): the whole document a re-index adds.
func withUnstored(s *schema.Schema, d *schema.Document, inputs map[string]*schema.Document) (*schema.Document, bool) {
	in, ok := inputs[d.PrimaryKey]
	if !ok {
		return nil, false
	}
	out := *d
	out.Fields = append([]schema.Values(nil), d.Fields...)
	for i := range s.Fields {
		if !s.Fields[i].IsStored() && i < len(in.Fields) {
			out.Fields[i].Strings = in.Fields[i].Strings
			out.Fields[i].Sparse = in.Fields[i].Sparse
		}
	}
	return &out, true
}

// byPrimaryKey indexes docs by primary key.
func byPrimaryKey(docs []*schema.Document) map[string]*schema.Document {
	m := make(map[string]*schema.Document, len(docs))
	for _, d := range docs {
		m[d.PrimaryKey] = d
	}
	return m
}
