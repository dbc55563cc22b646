package search

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

// Field ordinals of corpusSchema.
const (
	cID, cTitle, cBody, cYear, cTag, cEmb, cSp = 0, 1, 2, 3, 4, 5, 6
)

// corpusSchema is the schema of the executor tests.
func corpusSchema() *schema.Schema {
	return schema.MustNew(
		schema.Field{Name: "id", Type: schema.Text, Primary: true},
		schema.Field{Name: "title", Type: schema.Text},
		schema.Field{Name: "body", Type: schema.Text},
		schema.Field{Name: "year", Type: schema.U64},
		schema.Field{Name: "tag", Type: schema.Keyword, Multi: true},
		schema.Field{Name: "emb", Type: schema.DenseVector, Dims: 4},
		schema.Field{Name: "sp", Type: schema.SparseVector},
	)
}

// corpus is the Opticks split into paragraphs, one document each.
type corpus struct {
	// schema is corpusSchema.
	schema *schema.Schema
	// docs are the parsed documents; doc i has id "p<i>".
	docs []*schema.Document
}

var corpusCache *corpus

// newtonCorpus loads the corpus once per test binary.
func newtonCorpus(t testing.TB) *corpus {
	t.Helper()
	if corpusCache != nil {
		return corpusCache
	}
	paras := paragraphs(corpustest.Text(t))
	corpusCache = corpusOf(t, len(paras), func(i int) string { return paras[i] })
	return corpusCache
}

// corpusOf returns a corpus of n documents (corpusDoc), document i of
// paragraph para(i).
func corpusOf(t testing.TB, n int, para func(i int) string) *corpus {
	t.Helper()
	c := &corpus{schema: corpusSchema()}
	for i := range n {
		raw, err := json.Marshal(corpusDoc(i, para(i)))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := c.schema.ParseDocument(raw)
		if err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		c.docs = append(c.docs, doc)
	}
	return c
}

// paragraphs splits text at blank lines.
func paragraphs(text string) []string {
	var out []string
	for _, p := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// corpusDoc builds document i from a paragraph: its first words as title,
// all of it as body, and deterministic year, tags and vectors. Every
// seventh document has no vectors; every eleventh no title.
func corpusDoc(i int, para string) map[string]any {
	words := strings.Fields(para)
	doc := map[string]any{
		"id":   fmt.Sprintf("p%d", i),
		"body": para,
		"year": 1700 + i%30,
		"tag":  []string{[]string{"even", "odd"}[i%2], fmt.Sprintf("len-%d", min(len(words)/50, 3))},
	}
	if i%11 != 0 {
		doc["title"] = strings.Join(words[:min(len(words), 6)], " ")
	}
	if i%7 != 0 {
		x := uint32(i*2654435761 + 12345)
		emb := make([]float64, 4)
		for j := range emb {
			x = x*1664525 + 1013904223
			emb[j] = float64(int32(x>>8)%1000) / 250 // steps of 1/250: many equal products
		}
		doc["emb"] = emb
		sp := map[string]float64{}
		for j, w := range words[:min(len(words), 4)] {
			sp[strings.ToLower(strings.Trim(w, ".,;:_()"))+"x"] = float64(j+1) / 2
		}
		doc["sp"] = sp
	}
	return doc
}

// split describes a segmentation: the number of documents of each segment
// and the global indices of deleted documents.
type split struct {
	// sizes holds the document count of each segment, in order.
	sizes []int
	// deleted holds global document indices.
	deleted map[int]bool
}

// views builds one real segment per size over the corpus documents in
// order, with deletion masks from sp.deleted.
func (c *corpus) views(t testing.TB, sp split) []SegmentView {
	t.Helper()
	var views []SegmentView
	start := 0
	for _, n := range sp.sizes {
		docs := c.docs[start : start+n]
		var del *roaring.Bitmap
		for i := range docs {
			if sp.deleted[start+i] {
				if del == nil {
					del = roaring.New()
				}
				del.Add(uint32(i))
			}
		}
		views = append(views, SegmentView{Segment: openSegment(t, c.schema, docs), Deleted: del})
		start += n
	}
	if start != len(c.docs) {
		t.Fatalf("split covers %d of %d documents", start, len(c.docs))
	}
	return views
}

// thirds splits the corpus into three uneven segments.
func (c *corpus) thirds() []int {
	n := len(c.docs)
	return []int{n / 5, n / 2, n - n/5 - n/2}
}

// globalDoc maps a hit back to its corpus index.
func globalDoc(sp split, h Hit) int {
	start := 0
	for _, n := range sp.sizes[:h.Segment] {
		start += n
	}
	return start + int(h.Doc)
}
