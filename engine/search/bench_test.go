package search

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/summadev/summa/engine/schema"
)

// benchViews returns the corpus repeated copies times, in segments of
// about 20000 documents.
func benchViews(b *testing.B, copies int) (*schema.Schema, []SegmentView) {
	c := newtonCorpus(b)
	var docs []*schema.Document
	for range copies {
		docs = append(docs, c.docs...)
	}
	var views []SegmentView
	for start := 0; start < len(docs); start += 20000 {
		views = append(views, SegmentView{Segment: openSegment(b, c.schema, docs[start:min(start+20000, len(docs))])})
	}
	return c.schema, views
}

func BenchmarkSearch(b *testing.B) {
	s, views := benchViews(b, 100) // 70,100 documents
	for _, q := range []string{
		`"light"`, `"light colours prism"`, `"+light +red"`, `"+light -red"`, `"\"of the\""`, `"\"rays of light\""`,
		`"tag:even"`, `"nonexistentword"`,
		`{"sparse":{"field":"sp","vector":{"thex":1,"ofx":0.5}}}`,
		`{"dense":{"field":"emb","vector":[1,-0.5,0.25,2],"k":10}}`,
	} {
		b.Run(q, func(b *testing.B) {
			req := Request{Query: json.RawMessage(q)}
			for b.Loop() {
				if _, err := Search(context.Background(), s, views, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestConcurrentSearch(t *testing.T) {
	c := newtonCorpus(t)
	views := c.views(t, split{sizes: c.thirds()})
	want := map[string]Result{}
	for _, q := range textQueries {
		want[q] = searchAll(t, c, views, q)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range textQueries {
				q := textQueries[(i+w*7)%len(textQueries)]
				raw, _ := json.Marshal(q)
				res, err := Search(context.Background(), c.schema, views, Request{Query: raw, Limit: MaxResultWindow})
				if err != nil {
					t.Error(err)
					return
				}
				if res.TotalHits != want[q].TotalHits || len(res.Hits) != len(want[q].Hits) {
					t.Errorf("%s: %d hits concurrently, %d alone", q, res.TotalHits, want[q].TotalHits)
					return
				}
				for j := range res.Hits {
					if a, b := res.Hits[j], want[q].Hits[j]; a.Segment != b.Segment || a.Doc != b.Doc || a.Score != b.Score {
						t.Errorf("%s: hit %d differs concurrently", q, j)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
