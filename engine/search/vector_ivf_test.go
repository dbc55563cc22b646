package search

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/ivf"
	"github.com/summadev/summa/engine/ivf/ivftest"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

const binDims = 128

// signVector is the ±1 vector of a text: its dot products order documents
// exactly as Hamming distances do.
func signVector(text string) []float32 {
	v := ivftest.TextVector(text, binDims)
	for i, x := range v {
		v[i] = 1
		if x < 0 {
			v[i] = -1
		}
	}
	return v
}

// binaryViews indexes the lines of the Opticks in two segments with
// trained runs; every 7th line is deleted. It returns the views and the
// lines' vectors by (view, doc).
func binaryViews(t *testing.T) (*schema.Schema, []SegmentView, [][][]float32) {
	data, err := os.ReadFile("/usr/local/go/src/testdata/Isaac.Newton-Opticks.txt")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); len(l) > 30 {
			lines = append(lines, l)
		}
	}
	s := schema.MustNew(
		schema.Field{Name: "body", Type: schema.Text},
		schema.Field{Name: "emb", Type: schema.DenseVector, Dims: binDims, Binary: true},
	)
	fs := vfs.NewMem()
	if err := fs.MkdirAll("d", 0o755); err != nil {
		t.Fatal(err)
	}
	half := len(lines) / 2
	var views []SegmentView
	var vecs [][][]float32
	for si, part := range [][]string{lines[:half], lines[half:]} {
		b := segment.NewBuilder(s)
		b.SetIVFConfig(ivf.Config{TrainMin: 500, PerCluster: 64, MaxK: 256, Iterations: 8, SamplePerCluster: 64})
		del := roaring.New()
		var vs [][]float32
		for i, l := range part {
			v := signVector(l)
			raw, _ := json.Marshal(map[string]any{"body": l, "emb": v})
			d, err := s.ParseDocument(raw)
			if err != nil {
				t.Fatal(err)
			}
			b.Add(d)
			vs = append(vs, v)
			if i%7 == 0 {
				del.Add(uint32(i))
			}
		}
		info, err := b.Write(context.Background(), fs, "d", segid.ID(si+1))
		if err != nil {
			t.Fatal(err)
		}
		r, err := segment.Open(fs, "d", s, info)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		views = append(views, SegmentView{Segment: r, Deleted: del})
		vecs = append(vecs, vs)
	}
	return s, views, vecs
}

func TestBinaryIVFSearch(t *testing.T) {
	s, views, vecs := binaryViews(t)
	ask := func(q []float32, extra string) Result {
		raw := fmt.Sprintf(`{"dense":{"field":"emb","vector":%s,"k":10%s}}`, mustJSON(t, q), extra)
		res, err := Search(context.Background(), s, views, Request{Query: json.RawMessage(raw)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	var hit, total int
	for qi := 0; qi < 60; qi++ {
		q := vecs[qi%2][qi*13%len(vecs[qi%2])]
		exact := ask(q, `,"exact":true`)
		if len(exact.Hits) != 10 {
			t.Fatalf("exact: %d hits", len(exact.Hits))
		}
		for _, h := range exact.Hits {
			if views[h.Segment].Deleted.Contains(h.Doc) {
				t.Fatal("exact returned a deleted document")
			}
		}
		// Every cluster probed: the exact answer's scores.
		all := ask(q, `,"nprobe":65536`)
		for i := range exact.Hits {
			if all.Hits[i].Score != exact.Hits[i].Score {
				t.Fatalf("query %d hit %d: full probe score %v, exact %v", qi, i, all.Hits[i].Score, exact.Hits[i].Score)
			}
		}
		kth := exact.Hits[9].Score
		// A quarter of the clusters (K is about 60 per segment).
		for _, h := range ask(q, `,"nprobe":16`).Hits {
			total++
			if h.Score >= kth {
				hit++
			}
			if views[h.Segment].Deleted.Contains(h.Doc) {
				t.Fatal("IVF returned a deleted document")
			}
		}
	}
	if recall := float64(hit) / float64(total); recall < 0.9 {
		t.Fatalf("recall@10 probing 16 clusters per run: %.3f", recall)
	}
	for _, bad := range []string{`,"nprobe":0`, `,"nprobe":null`, `,"nprobe":70000`, `,"exact":1`} {
		raw := fmt.Sprintf(`{"dense":{"field":"emb","vector":%s%s}}`, mustJSON(t, vecs[0][0]), bad)
		if _, err := Search(context.Background(), s, views, Request{Query: json.RawMessage(raw)}); err == nil {
			t.Fatalf("%s accepted", bad)
		}
	}
}
