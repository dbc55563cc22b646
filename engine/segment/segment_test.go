package segment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

func TestRoundTrip(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 0)
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "idx", s, 0x2a, docs)
	if info.Documents != uint32(len(docs)) || len(info.Files) != len(dataSuffixes) {
		t.Fatalf("info = %+v", info)
	}
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := Validate(context.Background(), fs, "idx", s, info); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	checkReader(t, r, s, docs)
}

// checkReader compares every read method of r with docs.
func checkReader(t *testing.T, r *Reader, s *schema.Schema, docs []*schema.Document) {
	t.Helper()
	m := buildModel(s, docs)
	if r.NumDocs() != uint32(len(docs)) {
		t.Fatalf("NumDocs = %d, want %d", r.NumDocs(), len(docs))
	}
	for fi := range s.Fields {
		f := &s.Fields[fi]
		if !hasDict(f) {
			if _, err := r.Postings(fi, "x"); err == nil {
				t.Errorf("field %s: Postings on a field without terms succeeded", f.Name)
			}
			continue
		}
		terms := m.sortedTerms(fi)
		if got := r.NumTerms(fi); got != uint32(len(terms)) {
			t.Fatalf("field %s: NumTerms = %d, want %d", f.Name, got, len(terms))
		}
		it, err := r.Terms(fi)
		if err != nil {
			t.Fatal(err)
		}
		var total uint64
		for ord, term := range terms {
			if !it.Next() || it.Term() != term || it.Ordinal() != uint32(ord) {
				t.Fatalf("field %s: term %d: iterator at %q/%d (err %v), want %q", f.Name, ord, it.Term(), it.Ordinal(), it.Err(), term)
			}
			if got, err := r.TermAt(fi, uint32(ord)); err != nil || got != term {
				t.Fatalf("field %s: TermAt(%d) = %q, %v; want %q", f.Name, ord, got, err, term)
			}
			p, err := r.Postings(fi, term)
			if err != nil || p == nil {
				t.Fatalf("field %s: Postings(%q) = %v, %v", f.Name, term, p, err)
			}
			want := m.terms[fi][term]
			if p.DocFreq() != uint32(len(want)) || it.DocFreq() != uint32(len(want)) {
				t.Fatalf("field %s term %q: DocFreq = %d, want %d", f.Name, term, p.DocFreq(), len(want))
			}
			for k, w := range want {
				if !p.Next() {
					t.Fatalf("field %s term %q: postings end after %d docs: %v", f.Name, term, k, p.Err())
				}
				total += uint64(w.freq)
				if p.Doc() != w.doc || p.Freq() != w.freq {
					t.Fatalf("field %s term %q: doc %d freq %d, want %d %d", f.Name, term, p.Doc(), p.Freq(), w.doc, w.freq)
				}
				// Read positions of every other document only, to exercise skipping.
				if (k+ord)%2 == 0 {
					pos, err := p.Positions()
					if err != nil || !slices.Equal(pos, w.positions) {
						t.Fatalf("field %s term %q doc %d: positions %v (%v), want %v", f.Name, term, w.doc, pos, err, w.positions)
					}
				}
			}
			if p.Next() || p.Err() != nil {
				t.Fatalf("field %s term %q: extra postings or error %v", f.Name, term, p.Err())
			}
		}
		if it.Next() || it.Err() != nil {
			t.Fatalf("field %s: extra terms or error %v", f.Name, it.Err())
		}
		if p, err := r.Postings(fi, "\xffno-such-term"); p != nil || err != nil {
			t.Fatalf("field %s: absent term gave %v, %v", f.Name, p, err)
		}
		if p, err := r.Postings(fi, ""); p != nil || err != nil {
			t.Fatalf("field %s: empty term gave %v, %v", f.Name, p, err)
		}
		gotTotal, gotWith := r.FieldStats(fi)
		var wantWith uint32
		for di := range docs {
			n := uint32(0)
			for _, term := range f.ExactTerms(&docs[di].Fields[fi]) {
				_ = term
				n++
			}
			if f.IsTokenized() {
				n = m.lengths[fi][di]
				if got := r.FieldLength(fi, uint32(di)); got != n {
					t.Fatalf("field %s doc %d: FieldLength = %d, want %d", f.Name, di, got, n)
				}
			}
			if n > 0 {
				wantWith++
			}
		}
		if gotTotal != total || gotWith != wantWith {
			t.Fatalf("field %s: FieldStats = %d, %d; want %d, %d", f.Name, gotTotal, gotWith, total, wantWith)
		}
	}
	body, _ := s.Field("body")
	for di, d := range docs {
		doc := uint32(di)
		if pk, err := r.PrimaryKey(doc); err != nil || pk != d.PrimaryKey {
			t.Fatalf("doc %d: PrimaryKey = %q, %v; want %q", di, pk, err, d.PrimaryKey)
		}
		if ds, err := r.PrimaryKeyDocs(d.PrimaryKey); err != nil || !slices.Equal(ds, []uint32{doc}) {
			t.Fatalf("doc %d: PrimaryKeyDocs = %v, %v", di, ds, err)
		}
		if st, err := r.StoredDocument(doc); err != nil || !bytes.Equal(st, d.Stored) {
			t.Fatalf("doc %d: StoredDocument = %s, %v; want %s", di, st, err, d.Stored)
		}
		got, err := r.Document(doc)
		if err != nil {
			t.Fatalf("doc %d: Document: %v", di, err)
		}
		if want := keptDocument(s, d); !sameDocument(got, want) {
			t.Fatalf("doc %d: Document = %+v, want %+v", di, got, want)
		}
		ords, err := r.ForwardTerms(body, doc)
		if err != nil {
			t.Fatal(err)
		}
		var want []uint32
		for ord, term := range m.sortedTerms(body) {
			for _, p := range m.terms[body][term] {
				if p.doc == doc {
					want = append(want, uint32(ord))
				}
			}
		}
		if !slices.Equal(ords, want) {
			t.Fatalf("doc %d: ForwardTerms = %v, want %v", di, ords, want)
		}
		for fi := range s.Fields {
			f := &s.Fields[fi]
			v := &d.Fields[fi]
			switch f.Type {
			case schema.U64, schema.I64, schema.F64:
				nums, err := r.Numbers(fi, doc)
				if err != nil {
					t.Fatal(err)
				}
				var want []uint64
				want = append(want, v.U64...)
				for _, x := range v.I64 {
					want = append(want, uint64(x))
				}
				for _, x := range v.F64 {
					want = append(want, math.Float64bits(x))
				}
				if !slices.Equal(nums, want) {
					t.Fatalf("doc %d field %s: Numbers = %v, want %v", di, f.Name, nums, want)
				}
				first, ok, err := r.Number(fi, doc)
				if err != nil || ok != (len(want) > 0) || (ok && first != want[0]) {
					t.Fatalf("doc %d field %s: Number = %d, %v, %v", di, f.Name, first, ok, err)
				}
			case schema.DenseVector:
				vec, ok, err := r.DenseVector(fi, doc)
				if err != nil || ok != (v.Dense != nil) || !slices.Equal(vec, v.Dense) {
					t.Fatalf("doc %d field %s: DenseVector = %v, %v, %v; want %v", di, f.Name, vec, ok, err, v.Dense)
				}
			}
		}
	}
	checkSparse(t, r, s, docs)
}

// checkSparse compares every sparse dimension's postings with docs.
func checkSparse(t *testing.T, r *Reader, s *schema.Schema, docs []*schema.Document) {
	t.Helper()
	for fi := range s.Fields {
		if s.Fields[fi].Type != schema.SparseVector {
			continue
		}
		type entry struct {
			doc    uint32
			weight float32
		}
		want := map[string][]entry{}
		for di, d := range docs {
			for _, e := range d.Fields[fi].Sparse {
				want[e.Dim] = append(want[e.Dim], entry{uint32(di), e.Weight})
			}
		}
		it, err := r.SparseDims(fi)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for it.Next() {
			n++
		}
		if it.Err() != nil || n != len(want) {
			t.Fatalf("field %d: %d dims (%v), want %d", fi, n, it.Err(), len(want))
		}
		for dim, es := range want {
			p, err := r.SparsePostings(fi, dim)
			if err != nil || p == nil || p.DocFreq() != uint32(len(es)) {
				t.Fatalf("dim %q: SparsePostings = %v, %v", dim, p, err)
			}
			for _, e := range es {
				if !p.Next() || p.Doc() != e.doc || p.Weight() != e.weight {
					t.Fatalf("dim %q: got doc %d weight %v, want %d %v (%v)", dim, p.Doc(), p.Weight(), e.doc, e.weight, p.Err())
				}
			}
			if p.Next() || p.Err() != nil {
				t.Fatalf("dim %q: extra postings or %v", dim, p.Err())
			}
		}
		if p, err := r.SparsePostings(fi, "no such dim"); p != nil || err != nil {
			t.Fatalf("absent dim: %v, %v", p, err)
		}
	}
}

// sameDocument compares documents, treating nil and empty slices alike.
func sameDocument(a, b *schema.Document) bool {
	if a.PrimaryKey != b.PrimaryKey || !bytes.Equal(a.Stored, b.Stored) || len(a.Fields) != len(b.Fields) {
		return false
	}
	norm := func(v schema.Values) schema.Values {
		if len(v.Strings) == 0 {
			v.Strings = nil
		}
		if len(v.U64) == 0 {
			v.U64 = nil
		}
		if len(v.I64) == 0 {
			v.I64 = nil
		}
		if len(v.F64) == 0 {
			v.F64 = nil
		}
		if len(v.Sparse) == 0 {
			v.Sparse = nil
		}
		return v
	}
	for i := range a.Fields {
		if !reflect.DeepEqual(norm(a.Fields[i]), norm(b.Fields[i])) {
			return false
		}
	}
	return true
}

// TestRebuildIsIdentical re-adds every Document() of a segment to a new
// builder, with the values of the fields that are not stored (which the
// store does not keep) from the input documents, and expects
// byte-identical files: Document returns every value the segment keeps.
func TestRebuildIsIdentical(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 300)
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "a", s, 7, docs)
	r, err := Open(fs, "a", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	inputs := byPrimaryKey(docs)
	var again []*schema.Document
	for doc := uint32(0); doc < r.NumDocs(); doc++ {
		d, err := r.Document(doc)
		if err != nil {
			t.Fatal(err)
		}
		full, ok := withUnstored(s, d, inputs)
		if !ok {
			t.Fatalf("doc %d: no input of key %q", doc, d.PrimaryKey)
		}
		again = append(again, full)
	}
	info2 := buildSegment(t, fs, "b", s, 7, again)
	if !reflect.DeepEqual(info, info2) {
		t.Fatalf("infos differ: %+v vs %+v", info, info2)
	}
	for _, fi := range info.Files {
		name := segid.FileName(7, fi.Suffix)
		if !bytes.Equal(readFile(t, fs, "a/"+name), readFile(t, fs, "b/"+name)) {
			t.Errorf("%s differs after a rebuild", name)
		}
	}
}

func TestEmptySegment(t *testing.T) {
	s := testSchema()
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "idx", s, 1, nil)
	if err := Validate(context.Background(), fs, "idx", s, info); err != nil {
		t.Fatal(err)
	}
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.NumDocs() != 0 || r.NumTerms(2) != 0 {
		t.Fatalf("empty segment has %d docs, %d terms", r.NumDocs(), r.NumTerms(2))
	}
	if p, err := r.Postings(2, "light"); p != nil || err != nil {
		t.Fatalf("Postings = %v, %v", p, err)
	}
	if _, err := r.StoredDocument(0); err == nil {
		t.Fatal("StoredDocument(0) of an empty segment succeeded")
	}
}

func TestNoPrimaryKey(t *testing.T) {
	s := schema.MustNew(
		schema.Field{Name: "body", Type: schema.Text},
		schema.Field{Name: "n", Type: schema.U64, Multi: true},
	)
	var docs []*schema.Document
	for i, p := range opticksParagraphs(t)[:50] {
		d, err := s.ParseDocument([]byte(`{"body":` + quote(p) + `,"n":[` + itoa(i) + `,7]}`))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "idx", s, 3, docs)
	if err := Validate(context.Background(), fs, "idx", s, info); err != nil {
		t.Fatal(err)
	}
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	checkReader2(t, r, s, docs)
	if _, err := r.PrimaryKey(0); err == nil {
		t.Fatal("PrimaryKey without a primary field succeeded")
	}
	if _, err := r.PrimaryKeyDocs("x"); err == nil {
		t.Fatal("PrimaryKeyDocs without a primary field succeeded")
	}
}

// checkReader2 checks postings, stored documents and numbers of a schema
// without the Opticks fields.
func checkReader2(t *testing.T, r *Reader, s *schema.Schema, docs []*schema.Document) {
	m := buildModel(s, docs)
	for term, want := range m.terms[0] {
		p, err := r.Postings(0, term)
		if err != nil || p == nil {
			t.Fatalf("Postings(%q) = %v, %v", term, p, err)
		}
		for _, w := range want {
			if !p.Next() || p.Doc() != w.doc || p.Freq() != w.freq {
				t.Fatalf("term %q: doc %d, want %d", term, p.Doc(), w.doc)
			}
		}
	}
	for i, d := range docs {
		st, err := r.StoredDocument(uint32(i))
		if err != nil || !bytes.Equal(st, d.Stored) {
			t.Fatalf("doc %d: stored %s, %v", i, st, err)
		}
		nums, err := r.Numbers(1, uint32(i))
		if err != nil || !slices.Equal(nums, d.Fields[1].U64) {
			t.Fatalf("doc %d: numbers %v, %v", i, nums, err)
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestWriteCanceledLeavesPartialFiles(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 50)
	b := NewBuilder(s)
	for _, d := range docs {
		b.Add(d)
	}
	fs := vfs.NewMem()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Write(ctx, fs, "", 4); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write with a canceled context: %v", err)
	}
	if _, err := b.Write(context.Background(), fs, "missing-dir", 4); err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
	// A retry after errors writes the same, valid segment.
	info, err := b.Write(context.Background(), fs, "", 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(context.Background(), fs, "", s, info); err != nil {
		t.Fatal(err)
	}
	again, err := b.Write(context.Background(), vfs.NewMem(), "", 4)
	if err != nil || !reflect.DeepEqual(info, again) {
		t.Fatalf("second Write: %+v, %v; want %+v", again, err, info)
	}
}

func TestMemBytesGrows(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 200)
	b := NewBuilder(s)
	prev := b.MemBytes()
	var stored int64
	for i, d := range docs {
		b.Add(d)
		stored += int64(len(d.Stored))
		if m := b.MemBytes(); m < prev {
			t.Fatalf("MemBytes shrank from %d to %d at doc %d", prev, m, i)
		}
		prev = b.MemBytes()
	}
	if b.NumDocs() != uint32(len(docs)) || prev < stored/4 {
		t.Fatalf("NumDocs %d, MemBytes %d for %d stored bytes", b.NumDocs(), prev, stored)
	}
}
