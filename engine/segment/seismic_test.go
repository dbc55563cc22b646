package segment

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/analysis"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// seisSchema has one sparse field whose vectors are term counts of real
// paragraphs (Newton's Opticks).
func seisSchema() *schema.Schema {
	return schema.MustNew(schema.Field{Name: "id", Type: schema.Keyword},
		schema.Field{Name: "sp", Type: schema.SparseVector})
}

func seisDocs(t testing.TB, n int) []*schema.Document {
	var docs []*schema.Document
	for i, p := range opticksParagraphs(t) {
		if len(docs) == n {
			break
		}
		counts := map[string]float32{}
		for _, w := range analysis.Terms(p) {
			counts[w]++
		}
		d := &schema.Document{Fields: make([]schema.Values, 2)}
		d.Fields[0].Strings = []string{string(rune('a'+i%26)) + string(rune('0'+i))}
		for w, c := range counts {
			d.Fields[1].Sparse = append(d.Fields[1].Sparse, schema.SparseEntry{Dim: w, Weight: c / float32(len(counts))})
		}
		docs = append(docs, d)
	}
	return docs
}

func writeSeis(t *testing.T, fs vfs.FS, id segid.ID, docs []*schema.Document, o SeismicOptions) (*Reader, Info) {
	t.Helper()
	s := seisSchema()
	b := NewBuilder(s)
	b.separate = true // tests damage the ivf or seis file alone
	for _, d := range docs {
		b.Add(d)
	}
	b.SetSeismic(o)
	info, err := b.Write(context.Background(), fs, "idx", id)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(context.Background(), fs, "idx", s, info); err != nil {
		t.Fatalf("validate: %v", err)
	}
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, info
}

// blocksOf returns every dimension's block doc lists, by dimension name.
func blocksOf(t *testing.T, r *Reader) map[string][][]uint32 {
	t.Helper()
	x := r.Seismic(1)
	out := map[string][][]uint32{}
	it, _ := r.SparseDims(1)
	for it.Next() {
		first, n, pending, err := x.Blocks(it.Ordinal())
		if err != nil {
			t.Fatal(err)
		}
		if pending {
			continue
		}
		for b := first; b < first+n; b++ {
			docs, err := x.BlockDocs(b, nil)
			if err != nil {
				t.Fatal(err)
			}
			out[it.Term()] = append(out[it.Term()], docs)
		}
	}
	return out
}

// TestSeismicPlacesEveryPostingWithoutBudget: with no budget every
// dimension is placed, its blocks hold exactly its postings (λ exceeds
// every list here), several lists are split into more than one block, and
// the forward index scores a doc as the postings do.
func TestSeismicPlacesEveryPostingWithoutBudget(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("idx", 0o755); err != nil {
		t.Fatal(err)
	}
	r, _ := writeSeis(t, fs, 7, seisDocs(t, 600), SeismicOptions{})
	x := r.Seismic(1)
	if r.SeismicPendingTerms() != 0 || x.NumDims() < 1000 {
		t.Fatalf("pending %d of %d dims", r.SeismicPendingTerms(), x.NumDims())
	}
	blocks := blocksOf(t, r)
	split := 0
	it, _ := r.SparseDims(1)
	for it.Next() {
		seen := map[uint32]bool{}
		for _, b := range blocks[it.Term()] {
			for _, d := range b {
				seen[d] = true
			}
		}
		if len(blocks[it.Term()]) > 1 {
			split++
		}
		p, _ := r.SparsePostings(1, it.Term())
		n := 0
		for p.Next() {
			if !seen[p.Doc()] {
				t.Fatalf("%q: doc %d not in any block", it.Term(), p.Doc())
			}
			n++
		}
		if n != len(seen) {
			t.Fatalf("%q: %d postings, blocks hold %d docs", it.Term(), n, len(seen))
		}
	}
	if split < 10 {
		t.Fatalf("only %d lists split into several blocks", split)
	}
	q := new(SeismicQuery)
	q.Reset(x.NumDims())
	ord, ok, err := x.Dim("light")
	if !ok || err != nil {
		t.Fatalf("light: %v %v", ok, err)
	}
	q.Set(ord, 2)
	p, _ := r.SparsePostings(1, "light")
	for p.Next() {
		got, err := x.DocScore(p.Doc(), q)
		if err != nil || got != 2*float64(p.Weight()) {
			t.Fatalf("doc %d: forward score %v (%v), postings say %v", p.Doc(), got, err, 2*p.Weight())
		}
	}
}

// TestSeismicBudgetLeavesDebtAndCarryCopiesRuns: a bounded build leaves
// pending dimensions (debt); a later write carrying the source copies its
// placed runs unchanged and places the pending ones when its budget lets
// it, and places none with no budget.
func TestSeismicBudgetLeavesDebtAndCarryCopiesRuns(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("idx", 0o755); err != nil {
		t.Fatal(err)
	}
	docs := seisDocs(t, 600)
	full, _ := writeSeis(t, fs, 7, docs, SeismicOptions{})
	part, _ := writeSeis(t, fs, 8, docs, SeismicOptions{Budget: 3000})
	pending := part.SeismicPendingTerms()
	if pending == 0 || pending == int(part.Seismic(1).NumDims()) {
		t.Fatalf("budget 3000 left %d of %d dims pending", pending, part.Seismic(1).NumDims())
	}
	identity := func(d uint32) (uint32, bool) { return d, true }
	stalled, _ := writeSeis(t, fs, 9, docs, SeismicOptions{Budget: -1, Carry: []SeismicCarry{{part, identity}}})
	if stalled.SeismicPendingTerms() != pending {
		t.Fatalf("carry without budget: %d pending, want %d", stalled.SeismicPendingTerms(), pending)
	}
	done, _ := writeSeis(t, fs, 10, docs, SeismicOptions{Carry: []SeismicCarry{{part, identity}}})
	if done.SeismicPendingTerms() != 0 {
		t.Fatalf("carry with unbounded budget: %d pending", done.SeismicPendingTerms())
	}
	a, b := blocksOf(t, full), blocksOf(t, done)
	if len(a) != len(b) {
		t.Fatalf("%d vs %d placed dims", len(a), len(b))
	}
	for dim, blks := range a {
		if len(blks) != len(b[dim]) {
			t.Fatalf("%q: %d vs %d blocks", dim, len(blks), len(b[dim]))
		}
	}
	// A merge-like remap: the source's docs shifted after 10 others.
	shift := func(d uint32) (uint32, bool) { return d + 10, true }
	merged, _ := writeSeis(t, fs, 11, append(seisDocs(t, 10), docs...), SeismicOptions{Budget: -1,
		Carry: []SeismicCarry{{full, shift}, {full, func(d uint32) (uint32, bool) { return d, d < 10 }}}})
	if merged.SeismicPendingTerms() != 0 {
		t.Fatalf("merge of placed sources: %d pending", merged.SeismicPendingTerms())
	}
}

// TestSeismicValidateCatchesStructure: a block doc id changed (frame and
// CRC fixed) is a *CorruptionError from Validate.
func TestSeismicValidateCatchesStructure(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("idx", 0o755); err != nil {
		t.Fatal(err)
	}
	r, info := writeSeis(t, fs, 7, seisDocs(t, 200), SeismicOptions{})
	x := r.Seismic(1)
	path := "idx/" + segid.FileName(7, SuffixSeismic)
	data := readFile(t, fs, path)
	// Locate the docs region through the reader's slices; point the
	// first block's first doc at one past the last document.
	base := headerSize + (cap(r.file(SuffixSeismic).payload) - cap(x.docs))
	binary.LittleEndian.PutUint32(data[base:], 200)
	r.Close()
	writeFile(t, fs, path, fixFrame(data))
	err := Validate(context.Background(), fs, "idx", seisSchema(), info)
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.File != segid.FileName(7, SuffixSeismic) {
		t.Fatalf("Validate = %v, want a seis CorruptionError", err)
	}
}

// TestSeismicAbsentInOlderSegments: a segment written before the seis file
// existed (not listed in its metadata) opens and validates without Seismic
// indexes, and a write carrying it places all its dimensions: nothing is
// lost or quarantined on upgrade.
func TestSeismicAbsentInOlderSegments(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("idx", 0o755); err != nil {
		t.Fatal(err)
	}
	docs := seisDocs(t, 100)
	old, info := writeSeis(t, fs, 7, docs, SeismicOptions{})
	old.Close()
	var files []FileInfo
	for _, fi := range info.Files {
		if fi.Suffix != SuffixSeismic {
			files = append(files, fi)
		}
	}
	info.Files = files
	if err := fs.Remove("idx/" + segid.FileName(7, SuffixSeismic)); err != nil {
		t.Fatal(err)
	}
	if err := Validate(context.Background(), fs, "idx", seisSchema(), info); err != nil {
		t.Fatalf("validate without seis: %v", err)
	}
	r, err := Open(fs, "idx", seisSchema(), info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Seismic(1) != nil || r.SeismicPendingTerms() != 0 {
		t.Fatal("a segment without seis file has a Seismic index")
	}
	identity := func(d uint32) (uint32, bool) { return d, true }
	out, _ := writeSeis(t, fs, 8, docs, SeismicOptions{Carry: []SeismicCarry{{r, identity}}})
	if out.SeismicPendingTerms() != 0 || len(blocksOf(t, out)) != int(out.Seismic(1).NumDims()) {
		t.Fatalf("carrying an older segment: %d pending, %d of %d dims placed", out.SeismicPendingTerms(), len(blocksOf(t, out)), out.Seismic(1).NumDims())
	}
}

// TestSeismicMergeWithoutBuilderMatchesBuilderCarry: the streaming-merge
// hook (mergeSeismicField) yields the same index as a Builder carrying the
// same sources with no placement budget: same blocks, same pending
// dimensions, same forward index.
func TestSeismicMergeWithoutBuilderMatchesBuilderCarry(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("idx", 0o755); err != nil {
		t.Fatal(err)
	}
	all := seisDocs(t, 300)
	a, _ := writeSeis(t, fs, 7, all[:120], SeismicOptions{})
	b, _ := writeSeis(t, fs, 8, all[120:], SeismicOptions{Budget: 2000})
	carries := []SeismicCarry{
		{a, func(d uint32) (uint32, bool) { return d, true }},
		{b, func(d uint32) (uint32, bool) { return d + 120, true }},
	}
	bd := NewBuilder(seisSchema())
	for _, d := range all {
		bd.Add(d)
	}
	bd.SetSeismic(SeismicOptions{Budget: -1, Carry: carries})
	want, err := bd.buildSeismic(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	dims := append([]string(nil), bd.fields[1].sparse.dims...)
	sort.Strings(dims)
	got, err := mergeSeismicField(1, uint32(len(all)), dims, carries)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.pending, want.pending) || !reflect.DeepEqual(got.blocks, want.blocks) ||
		!reflect.DeepEqual(got.fwdOff, want.fwdOff) || !reflect.DeepEqual(got.fwdDims, want.fwdDims) ||
		!reflect.DeepEqual(got.fwdVals, want.fwdVals) {
		t.Fatal("merge hook and builder carry disagree")
	}
	n := 0
	for _, p := range got.pending {
		if p {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no pending dimension carried from the budgeted source")
	}
}
