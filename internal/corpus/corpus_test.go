package corpus_test

import (
	"encoding/json"
	"testing"

	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/internal/corpus"
)

// TestDocumentFitsSchema parses both forms of Schema and a Document of
// each paragraph against them; the body is stored only when asked.
func TestDocumentFitsSchema(t *testing.T) {
	ps, err := corpus.Paragraphs()
	if err != nil {
		t.Skip(err)
	}
	for _, stored := range []bool{false, true} {
		s, err := schema.Parse([]byte(corpus.Schema(stored)))
		if err != nil {
			t.Fatalf("Schema(%v): %v", stored, err)
		}
		f, ok := s.Field("body")
		if !ok {
			t.Fatalf("Schema(%v): no body field", stored)
		}
		if got := s.Fields[f].IsStored(); got != stored {
			t.Errorf("Schema(%v): body stored %v", stored, got)
		}
		for i, p := range ps[:20] {
			if _, err := s.ParseDocument(corpus.Document(i, p)); err != nil {
				t.Fatalf("Document(%d): %v", i, err)
			}
		}
	}
	var d map[string]any
	if err := json.Unmarshal(corpus.Document(42, ps[42]), &d); err != nil {
		t.Fatal(err)
	}
	if d["id"] != "p0042" || d["title"] != corpus.Title(ps[42]) || d["body"] != ps[42] || d["paragraph"] != 42.0 {
		t.Errorf("Document(42, ...) = %v", d)
	}
}
