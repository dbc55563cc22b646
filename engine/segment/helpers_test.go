package segment

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/analysis"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

const opticksPath = "/usr/local/go/src/testdata/Isaac.Newton-Opticks.txt"

var (
	paragraphsOnce sync.Once
	paragraphs     []string
	paragraphsErr  error
)

// opticksParagraphs returns the paragraphs of Newton's Opticks.
func opticksParagraphs(t testing.TB) []string {
	paragraphsOnce.Do(func() {
		f, err := vfs.Default.Open(opticksPath)
		if err != nil {
			paragraphsErr = err
			return
		}
		defer f.Close()
		data, err := io.ReadAll(f)
		if err != nil {
			paragraphsErr = err
			return
		}
		text := strings.ReplaceAll(string(data), "\r\n", "\n")
		for _, p := range strings.Split(text, "\n\n") {
			if p = strings.TrimSpace(p); p != "" {
				paragraphs = append(paragraphs, p)
			}
		}
	})
	if paragraphsErr != nil {
		t.Fatalf("read %s: %v", opticksPath, paragraphsErr)
	}
	return paragraphs
}

func boolp(b bool) *bool { return &b }

// testSchema is the schema of the Opticks test documents.
func testSchema() *schema.Schema {
	return schema.MustNew(
		schema.Field{Name: "id", Type: schema.Text, Primary: true},
		schema.Field{Name: "title", Type: schema.Text, Multi: true},
		schema.Field{Name: "body", Type: schema.Text, Reorder: true},
		schema.Field{Name: "year", Type: schema.U64},
		schema.Field{Name: "tag", Type: schema.Keyword, Multi: true},
		schema.Field{Name: "emb", Type: schema.DenseVector, Dims: 8},
		schema.Field{Name: "sp", Type: schema.SparseVector},
		schema.Field{Name: "score", Type: schema.F64},
		schema.Field{Name: "delta", Type: schema.I64, Multi: true},
		schema.Field{Name: "note", Type: schema.Text, Stored: boolp(false)},
		schema.Field{Name: "raw", Type: schema.Keyword, Indexed: boolp(false)},
	)
}

// opticksJSON returns the JSON of test document i built from paragraph p.
func opticksJSON(i int, p string) []byte {
	words := strings.Fields(p)
	m := map[string]any{"id": fmt.Sprintf("opticks-%04d", i), "body": p}
	title := strings.Join(words[:min(6, len(words))], " ")
	if i%3 == 0 {
		m["title"] = []string{title, "Opticks Book " + title}
	} else {
		m["title"] = title
	}
	if i%13 != 0 {
		m["year"] = 1650 + i%80
	}
	if i%11 != 0 {
		tags := []string{"opticks", fmt.Sprintf("len%d", len(words)/20)}
		if i%7 == 0 {
			tags = append(tags, "opticks")
		}
		m["tag"] = tags
	}
	if i%5 != 0 {
		emb := make([]float64, 8)
		for k := range emb {
			emb[k] = float64(float32(math.Sin(float64(i * (k + 1)))))
		}
		m["emb"] = emb
	}
	if i%4 != 0 {
		sp := map[string]float64{}
		for _, w := range analysis.Terms(p) {
			if len(sp) == 4 {
				break
			}
			sp[w] = float64(float32(len(w)) / 7)
		}
		m["sp"] = sp
	}
	m["score"] = float64(i)*0.25 - 10
	m["delta"] = []int64{-int64(i), int64(i) * 1000}
	if i%2 == 0 {
		m["note"] = fmt.Sprintf("note %d: %s", i, title)
	}
	m["raw"] = fmt.Sprintf("RAW-%d", i%9)
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// opticksDocs returns n test documents (all paragraphs when n <= 0).
func opticksDocs(t testing.TB, s *schema.Schema, n int) []*schema.Document {
	ps := opticksParagraphs(t)
	if n <= 0 || n > len(ps) {
		n = len(ps)
	}
	docs := make([]*schema.Document, n)
	for i := range docs {
		d, err := s.ParseDocument(opticksJSON(i, ps[i]))
		if err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		docs[i] = d
	}
	return docs
}

// buildSegment writes docs as segment id into fs/dir.
func buildSegment(t testing.TB, fs vfs.FS, dir string, s *schema.Schema, id segid.ID, docs []*schema.Document) Info {
	t.Helper()
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(s)
	// One file per part: the corruption and fuzz tests damage one part's
	// file at a time (compound_test.go covers the compound file).
	b.separate = true
	for i, d := range docs {
		if got := b.Add(d); got != uint32(i) {
			t.Fatalf("Add returned %d, want %d", got, i)
		}
	}
	info, err := b.Write(context.Background(), fs, dir, id)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return info
}

// posting is one expected posting.
type posting struct {
	doc       uint32
	freq      uint32
	positions []uint32
}

// model is the expected index content computed independently of the
// builder.
type model struct {
	terms   []map[string][]posting // per field
	lengths [][]uint32             // per tokenized field, per doc
}

func buildModel(s *schema.Schema, docs []*schema.Document) *model {
	m := &model{terms: make([]map[string][]posting, len(s.Fields)), lengths: make([][]uint32, len(s.Fields))}
	for fi := range s.Fields {
		f := &s.Fields[fi]
		if !hasDict(f) {
			continue
		}
		m.terms[fi] = map[string][]posting{}
		if f.IsTokenized() {
			m.lengths[fi] = make([]uint32, len(docs))
		}
		for di, d := range docs {
			perDoc := map[string]*posting{}
			var order []string
			add := func(term string, pos uint32, withPos bool) {
				p := perDoc[term]
				if p == nil {
					p = &posting{doc: uint32(di)}
					perDoc[term] = p
					order = append(order, term)
				}
				p.freq++
				if withPos {
					p.positions = append(p.positions, pos)
				}
			}
			if f.IsTokenized() {
				base := uint32(0)
				for _, text := range d.Fields[fi].Strings {
					count := uint32(0)
					analysis.Tokenize(text, func(term string, pos uint32) {
						add(term, base+pos, true)
						m.lengths[fi][di]++
						count = pos + 1
					})
					base += count + positionGap
				}
			} else {
				for _, term := range f.ExactTerms(&d.Fields[fi]) {
					add(term, 0, false)
				}
			}
			for _, term := range order {
				m.terms[fi][term] = append(m.terms[fi][term], *perDoc[term])
			}
		}
	}
	return m
}

func (m *model) sortedTerms(field int) []string {
	var out []string
	for term := range m.terms[field] {
		out = append(out, term)
	}
	sort.Strings(out)
	return out
}

func readFile(t testing.TB, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFile(t testing.TB, fs vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append([]byte(nil), data...)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// partBytes returns the bytes of part suffix of a segment, from its own
// file or from its slice of the compound file.
func partBytes(t testing.TB, fs vfs.FS, dir string, info Info, suffix string) []byte {
	t.Helper()
	if !info.Compound() {
		return readFile(t, fs, dir+"/"+segid.FileName(info.ID, suffix))
	}
	data := readFile(t, fs, dir+"/"+segid.FileName(info.ID, SuffixCompound))
	off := int64(0)
	for _, p := range info.Parts {
		if p.Suffix == suffix {
			return data[off : off+p.Size]
		}
		off += p.Size
	}
	t.Fatalf("segment %s has no part %s", info.ID, suffix)
	return nil
}
