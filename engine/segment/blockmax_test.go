package segment

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// blockMaxSegment builds a segment of every Opticks paragraph with a
// sparse field whose weights are signed, and opens it.
func blockMaxSegment(t testing.TB) (*Reader, vfs.FS, *schema.Schema, Info) {
	return blockMaxSegmentOf(t, 1)
}

// blockMaxSegmentOf is blockMaxSegment with the paragraphs indexed copies
// times over (distinct ids), so that frequent terms span enough blocks
// for superblock tables.
func blockMaxSegmentOf(t testing.TB, copies int) (*Reader, vfs.FS, *schema.Schema, Info) {
	t.Helper()
	s := testSchema()
	docs := opticksDocs(t, s, 0)
	ps := opticksParagraphs(t)
	for i := len(docs); i < copies*len(ps); i++ {
		d, err := s.ParseDocument(opticksJSON(i, ps[i%len(ps)]))
		if err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		docs = append(docs, d)
	}
	sp := fieldOrd(s, "sp")
	for i, d := range docs {
		for k := range d.Fields[sp].Sparse {
			if (i+k)%3 == 0 {
				d.Fields[sp].Sparse[k].Weight = -d.Fields[sp].Sparse[k].Weight * 1.7
			}
		}
	}
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "idx", s, corruptID, docs)
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, fs, s, info
}

// TestBlockMaxBoundsHold checks every term's blocks against its postings:
// the blocks hold exactly the postings, and every document's frequency,
// length ratio and weight lies within its block's bounds.
func TestBlockMaxBoundsHold(t *testing.T) {
	r, _, s, _ := blockMaxSegment(t)
	if r.NumDocs() < 4*blockDocs {
		t.Fatalf("only %d documents: too few blocks to test", r.NumDocs())
	}
	checked := 0
	for field := range s.Fields {
		f := &s.Fields[field]
		var it *TermIterator
		var err error
		switch {
		case hasDict(f):
			it, err = r.Terms(field)
		case f.Type == schema.SparseVector:
			it, err = r.SparseDims(field)
		default:
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			checkTermBlocks(t, r, f, field, it.Term())
			checked++
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d terms checked", checked)
	}
}

func checkTermBlocks(t *testing.T, r *Reader, f *schema.Field, field int, term string) {
	t.Helper()
	sparse := f.Type == schema.SparseVector
	var bt *BlockTerm
	var err error
	type exp struct {
		doc, tf uint32
		w       float32
	}
	var want []exp
	if sparse {
		bt, err = r.BlockMaxDim(field, term)
		p, _ := r.SparsePostings(field, term)
		for p.Next() {
			want = append(want, exp{doc: p.Doc(), w: p.Weight()})
		}
	} else {
		bt, err = r.BlockMaxTerm(field, term)
		p, _ := r.Postings(field, term)
		for p.Next() {
			want = append(want, exp{doc: p.Doc(), tf: p.Freq()})
		}
	}
	if err != nil || bt == nil {
		t.Fatalf("field %d term %q: %v", field, term, err)
	}
	if bt.DocFreq() != uint32(len(want)) {
		t.Fatalf("field %d term %q: df %d, postings %d", field, term, bt.DocFreq(), len(want))
	}
	entries, err := bt.Entries(nil)
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for _, e := range entries {
		var docs, tfs []uint32
		var ws []float32
		if sparse {
			docs, ws, err = bt.SparseBlock(&e, nil, nil)
		} else {
			docs, tfs, err = bt.TextBlock(&e, nil, nil)
		}
		if err != nil || len(docs) != e.Count {
			t.Fatalf("field %d term %q block %d: %d docs, %v", field, term, e.Block, len(docs), err)
		}
		for i, d := range docs {
			if k >= len(want) || want[k].doc != d || d>>BlockShift != e.Block {
				t.Fatalf("field %d term %q: block %d holds doc %d, postings say otherwise", field, term, e.Block, d)
			}
			if sparse {
				hi, lo := WeightBound(int8(e.Hi), bt.Scale()), WeightBound(int8(e.Lo), bt.Scale())
				if ws[i] != want[k].w || float64(ws[i]) > hi || float64(ws[i]) < lo {
					t.Fatalf("field %d dim %q doc %d: weight %v outside [%v, %v]", field, term, d, ws[i], lo, hi)
				}
			} else {
				tf := tfs[i]
				if tf != want[k].tf || InvTFBound(e.Hi) > 1/float64(tf) {
					t.Fatalf("field %d term %q doc %d: tf %d, code %d", field, term, d, tf, e.Hi)
				}
				if f.IsTokenized() && RatioBound(e.Lo) > float64(r.FieldLength(field, d))/float64(tf) {
					t.Fatalf("field %d term %q doc %d: ratio %d/%d below bound %v", field, term, d,
						r.FieldLength(field, d), tf, RatioBound(e.Lo))
				}
				current := fileVersion(r.file(SuffixBlockMax).data) >= mixBlockMaxVersion
				if a0, b0, ok := bt.MixRef(); current && f.IsTokenized() != ok {
					t.Fatalf("field %d term %q: mix codes %v on a field tokenized %v", field, term, ok, f.IsTokenized())
				} else if v := (a0 + b0*float64(r.FieldLength(field, d))) / float64(tf); ok && MixBound(e.Mix, b0) > v {
					t.Fatalf("field %d term %q doc %d: mix value %v below bound %v", field, term, d, v, MixBound(e.Mix, b0))
				}
			}
			k++
		}
	}
	if k != len(want) {
		t.Fatalf("field %d term %q: blocks hold %d of %d postings", field, term, k, len(want))
	}
}

// TestBlockMaxCodesAreTight checks the quantization rounds the right way
// and loses little: bounds never pass the value, and the next code would.
func TestBlockMaxCodesAreTight(t *testing.T) {
	for tf := uint32(1); tf < 300; tf++ {
		for _, dl := range []uint32{tf, tf + 1, 2 * tf, 3*tf + 7, 100 * tf, 1 << 30} {
			c := ratioCode(dl, tf)
			r := float64(dl) / float64(tf)
			if RatioBound(c) > r || (c < 255 && RatioBound(c+1) <= r) {
				t.Fatalf("ratio %d/%d: code %d bound %v", dl, tf, c, RatioBound(c))
			}
		}
		if InvTFBound(tfCode(tf)) > 1/float64(tf) {
			t.Fatalf("tf %d: code %d", tf, tfCode(tf))
		}
	}
	for _, scale := range []float32{0.001, 1, 3.3, 1e30} {
		for _, x := range []float32{-1, -0.5, -0.001, 0, 0.1, 0.73, 1} {
			v := x * scale
			up, down := weightLevels(v, v, scale)
			if WeightBound(up, scale) < float64(v) || WeightBound(down, scale) > float64(v) {
				t.Fatalf("weight %v of scale %v: levels %d %d", v, scale, up, down)
			}
			if int(up) > int(down)+1 {
				t.Fatalf("weight %v of scale %v: levels %d %d are loose", v, scale, up, down)
			}
		}
	}
}

// TestValidateRecomputesBlockMax flips a bound byte and a posting byte of
// the block-max file, fixes the CRC, and expects Validate (not Open) to
// find that the file disagrees with the postings.
func TestValidateRecomputesBlockMax(t *testing.T) {
	r, fs, s, info := blockMaxSegment(t)
	bt, err := r.BlockMaxTerm(fieldOrd(s, "body"), "light")
	if err != nil || bt == nil {
		t.Fatal(err)
	}
	path := "idx/" + segid.FileName(corruptID, SuffixBlockMax)
	orig := readFile(t, fs, path)
	// The entries of "light" start after its counts; flip its first block's
	// frequency code and, separately, its first stored frequency.
	base := headerSize + int(uintptrOffset(r.file(SuffixBlockMax).payload, bt.entries))
	dataBase := headerSize + int(uintptrOffset(r.file(SuffixBlockMax).payload, bt.data))
	_, k := binary.Uvarint(bt.entries)
	e, _ := bt.Entries(nil)
	for name, off := range map[string]int{"bound": base + k, "posting": dataBase + e[0].Count} {
		data := append([]byte(nil), orig...)
		data[off] ^= 0x04
		data = fixFrame(data)
		writeFile(t, fs, path, data)
		r2, err := Open(fs, "idx", s, info)
		if err != nil {
			t.Fatalf("%s flip: Open should pass the cheap check: %v", name, err)
		}
		wantCorruption(t, r2.Validate(context.Background()), name+" flip")
		r2.Close()
	}
	writeFile(t, fs, path, orig)
	if err := Validate(context.Background(), fs, "idx", s, info); err != nil {
		t.Fatal(err)
	}
}

// uintptrOffset returns the offset of sub within whole (sub is a sub-slice).
func uintptrOffset(whole, sub []byte) int {
	return cap(whole) - cap(sub)
}

// FuzzOpenBlockMax feeds mutated block-max files to Open, Validate and the
// block-max readers: they must fail with a *CorruptionError or work.
func FuzzOpenBlockMax(f *testing.F) {
	seg := loadFuzzSegment(f)
	orig := seg.files[SuffixBlockMax]
	f.Add(orig, false)
	f.Add(orig, true)
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		runFuzzOne(t, seg, SuffixBlockMax, data, fix)
		if fix {
			data = fixFrame(data)
		}
		exerciseBlockMax(t, seg, data)
	})
}

// exerciseBlockMax opens the fuzz segment with data as its block-max file
// and reads every term's blocks.
func exerciseBlockMax(t *testing.T, seg *fuzzSegment, data []byte) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("idx", 0o755); err != nil {
		t.Fatal(err)
	}
	info := seg.info
	info.Files = append([]FileInfo(nil), seg.info.Files...)
	for i, fi := range info.Files {
		content := seg.files[fi.Suffix]
		if fi.Suffix == SuffixBlockMax {
			content = data
			info.Files[i].Size = int64(len(data))
		}
		writeFile(t, fs, "idx/"+segid.FileName(fuzzID, fi.Suffix), content)
	}
	r, err := Open(fs, "idx", seg.s, info)
	if err != nil {
		return
	}
	defer r.Close()
	valid := r.Validate(context.Background()) == nil
	check := func(err error) {
		t.Helper()
		if err != nil {
			mustBeCorruption(t, err)
			if valid {
				t.Fatalf("block-max read failed on a validated segment: %v", err)
			}
		}
	}
	for field := range seg.s.Fields {
		fl := &seg.s.Fields[field]
		var it *TermIterator
		switch {
		case hasDict(fl):
			it, _ = r.Terms(field)
		case fl.Type == schema.SparseVector:
			it, _ = r.SparseDims(field)
		default:
			continue
		}
		for k := 0; it.Next() && k < 500; k++ {
			var bt *BlockTerm
			if fl.Type == schema.SparseVector {
				bt, err = r.BlockMaxDim(field, it.Term())
			} else {
				bt, err = r.BlockMaxTerm(field, it.Term())
			}
			check(err)
			if bt == nil {
				continue
			}
			es, err := bt.Entries(nil)
			check(err)
			for i := range es {
				if bt.Sparse() {
					_, ws, err := bt.SparseBlock(&es[i], nil, nil)
					check(err)
					for _, w := range ws {
						if valid && math.IsNaN(float64(w)) {
							t.Fatal("NaN weight in a validated segment")
						}
					}
				} else {
					_, _, err := bt.TextBlock(&es[i], nil, nil)
					check(err)
				}
			}
		}
	}
}

// fieldOrd returns the ordinal of a field of s.
func fieldOrd(s *schema.Schema, name string) int {
	i, ok := s.Field(name)
	if !ok {
		panic("no field " + name)
	}
	return i
}

// TestBlockMaxAbsentInVersion1Segments opens the version 1 testdata
// segment, written before block maxima existed: it opens and validates
// without a bmp file, says so, and a merge of it writes one.
func TestBlockMaxAbsentInVersion1Segments(t *testing.T) {
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
		if fi.Suffix == SuffixBlockMax {
			t.Fatal("the version 1 testdata lists a bmp file")
		}
		name := segid.FileName(old.ID, fi.Suffix)
		data, err := os.ReadFile(filepath.Join("testdata", "v1", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, fs, "idx/"+name, data)
	}
	r, err := Open(fs, "idx", s, old)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.HasBlockMax() {
		t.Fatal("a version 1 segment claims block maxima")
	}
	if err := r.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	info, err := Merge(context.Background(), fs, "idx", 0x77, s, []*Reader{r}, Concat([]*Reader{r}, nil))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.HasBlockMax() {
		t.Fatal("the merge output has no block maxima")
	}
	if err := m.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	bt, err := m.BlockMaxTerm(fieldOrd(s, "body"), "light")
	if err != nil || bt == nil || bt.DocFreq() == 0 {
		t.Fatalf("merged block maxima of light: %v %v", bt, err)
	}
}

// TestMarkDocsSetsThePostings checks BlockTerm.MarkDocs on every term of
// every text and exact field: the bits it sets are the term's postings,
// and a record whose doc offset leaves its block, or whose block leaves
// the bitset, is corruption rather than a wrong bit.
func TestMarkDocsSetsThePostings(t *testing.T) {
	r, _, s, _ := blockMaxSegmentOf(t, 3)
	words := (int(r.NumDocs()) + 63) / 64
	checked := 0
	for field := range s.Fields {
		if !hasDict(&s.Fields[field]) || r.bmax[field] == nil {
			continue
		}
		it, err := r.Terms(field)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			bt, err := r.BlockMaxTerm(field, it.Term())
			if err != nil || bt == nil {
				t.Fatalf("%q: %v", it.Term(), err)
			}
			got := make([]uint64, words)
			if err := bt.MarkDocs(got); err != nil {
				t.Fatal(err)
			}
			want := make([]uint64, words)
			p, err := r.Postings(field, it.Term())
			if err != nil {
				t.Fatal(err)
			}
			for p.Next() {
				want[p.Doc()>>6] |= 1 << (p.Doc() & 63)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("field %d term %q: marked bits differ from the postings", field, it.Term())
			}
			checked++
			if bt.nBlocks > 1 && checked%50 == 0 {
				bad := *bt
				bad.data = slices.Clone(bt.data)
				bad.data[0] = 64
				wantCorruption(t, bad.MarkDocs(got), "offset 64 marked")
				wantCorruption(t, bt.MarkDocs(got[:1]), "blocks past the bitset marked")
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d terms checked", checked)
	}
}
