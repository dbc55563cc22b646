package segment

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// The fuzz targets mutate one file of a small real segment (or a mask),
// then Open, Validate and call every read method: nothing may panic, every
// error about bytes must be a *CorruptionError, and a segment that passes
// Validate must serve every read without error. With fixFrame set the
// footer's length and CRC are recomputed after mutation, so that the
// structure decoders behind the CRC check are exercised too.
//
// Seed corpora live in testdata/fuzz/<FuzzName>/; regenerate them after a
// format change with SEGMENT_WRITE_FUZZ_CORPUS=1 go test -run TestWriteFuzzCorpus.

const fuzzID segid.ID = 0xf00d

type fuzzSegment struct {
	s     *schema.Schema
	info  Info
	files map[string][]byte
	mask  []byte
}

var (
	fuzzOnce sync.Once
	fuzzSeg  *fuzzSegment
)

// loadFuzzSegment builds a small segment of 9 short Opticks documents.
func loadFuzzSegment(t testing.TB) *fuzzSegment {
	fuzzOnce.Do(func() {
		s := testSchema()
		ps := opticksParagraphs(t)
		var docs []*schema.Document
		for i := 0; i < 9; i++ {
			p := ps[40+i]
			if len(p) > 160 {
				p = p[:160]
			}
			d, err := s.ParseDocument(opticksJSON(i, p))
			if err != nil {
				panic(err)
			}
			docs = append(docs, d)
		}
		fs := vfs.NewMem()
		info := buildSegment(t, fs, "idx", s, fuzzID, docs)
		seg := &fuzzSegment{s: s, info: info, files: map[string][]byte{}}
		for _, fi := range info.Files {
			seg.files[fi.Suffix] = readFile(t, fs, "idx/"+segid.FileName(fuzzID, fi.Suffix))
		}
		if _, err := WriteMask(fs, "idx", fuzzID+1, roaring.BitmapOf(0, 3, 8), 9); err != nil {
			panic(err)
		}
		seg.mask = readFile(t, fs, "idx/"+segid.FileName(fuzzID+1, MaskSuffix))
		fuzzSeg = seg
	})
	return fuzzSeg
}

// fixFrame recomputes the footer's payload length and CRC.
func fixFrame(data []byte) []byte {
	if len(data) < frameSize {
		return data
	}
	data = append([]byte(nil), data...)
	ft := data[len(data)-footerSize:]
	binary.LittleEndian.PutUint64(ft[0:8], uint64(len(data)-frameSize))
	binary.LittleEndian.PutUint32(ft[8:12], crc32.Checksum(data[:len(data)-footerSize], crcTable))
	return data
}

func fuzzFile(f *testing.F, suffix string) {
	seg := loadFuzzSegment(f)
	orig := seg.files[suffix]
	f.Add(orig, false)
	f.Add(orig, true)
	f.Fuzz(func(t *testing.T, data []byte, fix bool) { runFuzzOne(t, seg, suffix, data, fix) })
}

// runFuzzOne runs one fuzz input against file suffix of the fuzz segment.
func runFuzzOne(t *testing.T, seg *fuzzSegment, suffix string, data []byte, fix bool) {
	if fix {
		data = fixFrame(data)
	}
	fs := vfs.NewMem()
	if err := fs.MkdirAll("idx", 0o755); err != nil {
		t.Fatal(err)
	}
	info := seg.info
	info.Files = append([]FileInfo(nil), seg.info.Files...)
	for i, fi := range info.Files {
		content := seg.files[fi.Suffix]
		if fi.Suffix == suffix {
			content = data
			info.Files[i].Size = int64(len(data))
		}
		writeFile(t, fs, "idx/"+segid.FileName(fuzzID, fi.Suffix), content)
	}
	r, err := Open(fs, "idx", seg.s, info)
	if err != nil {
		mustBeCorruption(t, err)
		return
	}
	defer r.Close()
	verr := r.Validate(context.Background())
	if verr != nil {
		mustBeCorruption(t, verr)
	}
	exerciseReader(t, r, seg.s, verr == nil)
}

func mustBeCorruption(t *testing.T, err error) {
	t.Helper()
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *CorruptionError", err)
	}
}

// exerciseReader calls every read method. When valid is set (Validate
// passed) no call may fail.
func exerciseReader(t *testing.T, r *Reader, s *schema.Schema, valid bool) {
	t.Helper()
	check := func(err error, what string) {
		t.Helper()
		if err == nil {
			return
		}
		mustBeCorruption(t, err)
		if valid {
			t.Fatalf("%s failed on a validated segment: %v", what, err)
		}
	}
	n := r.NumDocs()
	for field := range s.Fields {
		f := &s.Fields[field]
		r.NumTerms(field)
		r.FieldStats(field)
		for doc := uint32(0); doc < n; doc++ {
			r.FieldLength(field, doc)
		}
		if hasDict(f) {
			exerciseTerms(t, r, field, valid, check)
		}
		if f.Type == schema.SparseVector {
			it, err := r.SparseDims(field)
			check(err, "SparseDims")
			for k := 0; it.Next() && k < 1000; k++ {
				p, err := r.SparsePostings(field, it.Term())
				check(err, "SparsePostings")
				if valid && p == nil {
					t.Fatalf("dimension %q not found", it.Term())
				}
				for p != nil && p.Next() {
					p.Weight()
				}
				if p != nil {
					check(p.Err(), "SparsePostings.Next")
				}
			}
			check(it.Err(), "SparseDims.Next")
			_, err = r.SparsePostings(field, "light")
			check(err, "SparsePostings")
			exerciseSeismic(r.Seismic(field), n, check)
		}
		for doc := uint32(0); doc < n; doc++ {
			switch {
			case f.Reorder:
				_, err := r.ForwardTerms(field, doc)
				check(err, "ForwardTerms")
			case f.IsNumeric():
				_, err := r.Numbers(field, doc)
				check(err, "Numbers")
				_, _, err = r.Number(field, doc)
				check(err, "Number")
			case f.Type == schema.DenseVector:
				_, _, err := r.DenseVector(field, doc)
				check(err, "DenseVector")
			}
		}
	}
	for doc := uint32(0); doc < n; doc++ {
		pk, err := r.PrimaryKey(doc)
		check(err, "PrimaryKey")
		if err == nil {
			docs, err := r.PrimaryKeyDocs(pk)
			check(err, "PrimaryKeyDocs")
			if valid && len(docs) == 0 {
				t.Fatalf("primary key %q of doc %d not found", pk, doc)
			}
		}
		_, err = r.StoredDocument(doc)
		check(err, "StoredDocument")
		_, err = r.Document(doc)
		check(err, "Document")
	}
	r.PostingsBytes()
}

// exerciseSeismic reads every part of a Seismic index a query reads.
func exerciseSeismic(x *SeismicIndex, numDocs uint32, check func(error, string)) {
	if x == nil {
		return
	}
	q := new(SeismicQuery)
	q.Reset(x.NumDims())
	for k := uint32(0); k < x.NumDims(); k++ {
		q.Set(k, float32(k%7)/3)
	}
	var docs []uint32
	for ord := uint32(0); ord < min(x.NumDims(), 1000); ord++ {
		first, n, _, err := x.Blocks(ord)
		check(err, "Seismic.Blocks")
		for b := first; err == nil && b < first+n; b++ {
			_, err := x.SummaryScore(b, q)
			check(err, "Seismic.SummaryScore")
			docs, err = x.BlockDocs(b, docs[:0])
			check(err, "Seismic.BlockDocs")
		}
	}
	_, _, err := x.Dim("light")
	check(err, "Seismic.Dim")
	for doc := uint32(0); doc < numDocs; doc++ {
		_, err := x.DocScore(doc, q)
		check(err, "Seismic.DocScore")
	}
}

func exerciseTerms(t *testing.T, r *Reader, field int, valid bool, check func(error, string)) {
	t.Helper()
	it, err := r.Terms(field)
	check(err, "Terms")
	for k := 0; it.Next() && k < 5000; k++ {
		term := it.Term()
		p, err := r.Postings(field, term)
		check(err, "Postings")
		if valid && p == nil {
			t.Fatalf("term %q not found", term)
		}
		for p != nil && p.Next() {
			_, err := p.Positions()
			check(err, "Positions")
		}
		if p != nil {
			check(p.Err(), "Postings.Next")
		}
		got, err := r.TermAt(field, it.Ordinal())
		check(err, "TermAt")
		if valid && got != term {
			t.Fatalf("TermAt(%d) = %q, want %q", it.Ordinal(), got, term)
		}
	}
	check(it.Err(), "Terms.Next")
	for _, term := range []string{"", "light", "the", "zzzz", "\xff"} {
		p, err := r.Postings(field, term)
		check(err, "Postings")
		for p != nil && p.Next() {
		}
	}
	it, _ = r.Terms(field)
	it.Seek("m")
	check(it.Err(), "Seek")
}

func FuzzOpenTerms(f *testing.F)    { fuzzFile(f, SuffixTerms) }
func FuzzOpenPostings(f *testing.F) { fuzzFile(f, SuffixPostings) }
func FuzzOpenNorms(f *testing.F)    { fuzzFile(f, SuffixNorms) }
func FuzzOpenStore(f *testing.F)    { fuzzFile(f, SuffixStore) }
func FuzzOpenPK(f *testing.F)       { fuzzFile(f, SuffixPrimaryKey) }
func FuzzOpenNumbers(f *testing.F)  { fuzzFile(f, SuffixNumbers) }
func FuzzOpenForward(f *testing.F)  { fuzzFile(f, SuffixForward) }
func FuzzOpenVectors(f *testing.F)  { fuzzFile(f, SuffixVectors) }
func FuzzOpenRowStats(f *testing.F) { fuzzFile(f, SuffixRowStats) }
func FuzzOpenSeismic(f *testing.F)  { fuzzFile(f, SuffixSeismic) }

func FuzzReadMask(f *testing.F) {
	seg := loadFuzzSegment(f)
	f.Add(seg.mask, false)
	f.Add(seg.mask, true)
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		if fix {
			data = fixFrame(data)
		}
		fs := vfs.NewMem()
		if err := fs.MkdirAll("idx", 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, fs, "idx/"+segid.FileName(fuzzID+1, MaskSuffix), data)
		bm, err := ReadMask(fs, "idx", fuzzID+1, 9)
		if err != nil {
			mustBeCorruption(t, err)
			return
		}
		if !bm.IsEmpty() && bm.Maximum() >= 9 {
			t.Fatalf("mask holds doc %d of 9", bm.Maximum())
		}
	})
}

// fuzzTargets maps each fuzz target to the seed bytes of its corpus.
func fuzzTargets(seg *fuzzSegment) map[string][]byte {
	return map[string][]byte{
		"FuzzOpenTerms":    seg.files[SuffixTerms],
		"FuzzOpenPostings": seg.files[SuffixPostings],
		"FuzzOpenNorms":    seg.files[SuffixNorms],
		"FuzzOpenStore":    seg.files[SuffixStore],
		"FuzzOpenPK":       seg.files[SuffixPrimaryKey],
		"FuzzOpenNumbers":  seg.files[SuffixNumbers],
		"FuzzOpenForward":  seg.files[SuffixForward],
		"FuzzOpenVectors":  seg.files[SuffixVectors],
		"FuzzOpenRowStats": seg.files[SuffixRowStats],
		"FuzzReadMask":     seg.mask,
	}
}

// TestWriteFuzzCorpus regenerates testdata/fuzz when asked to.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("SEGMENT_WRITE_FUZZ_CORPUS") == "" {
		t.Skip("set SEGMENT_WRITE_FUZZ_CORPUS=1 to regenerate the seed corpora")
	}
	seg := loadFuzzSegment(t)
	fs := vfs.Default
	for name, data := range fuzzTargets(seg) {
		dir := filepath.Join("testdata", "fuzz", name)
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		seeds := map[string][]byte{"seed-valid": data}
		if len(data) > frameSize+8 {
			// A mutated payload byte with a fixed frame: exercises decoders.
			mid := append([]byte(nil), data...)
			mid[headerSize+(len(data)-frameSize)/2] ^= 0x5a
			seeds["seed-mid-flip"] = fixFrame(mid)
			// A damaged directory offset with a fixed frame.
			dirOff := append([]byte(nil), data...)
			dirOff[len(data)-footerSize-8] ^= 0x03
			seeds["seed-dir-offset"] = fixFrame(dirOff)
		}
		seeds["seed-truncated"] = data[:len(data)/2]
		for seed, b := range seeds {
			for _, fix := range []bool{false, true} {
				content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nbool(%v)\n", b, fix)
				writeFile(t, fs, filepath.Join(dir, fmt.Sprintf("%s-%v", seed, fix)), []byte(content))
			}
		}
	}
}
