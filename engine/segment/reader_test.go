package segment

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/analysis"
	"github.com/summadev/summa/engine/segment/codec"
)

// TestDiskMmap writes a segment to a real directory and reads it through
// memory maps, files up to readLimit through reads.
func TestDiskMmap(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 400)
	dir := t.TempDir()
	info := buildSegment(t, vfs.Default, dir, s, 0xabc, docs)
	if err := Validate(context.Background(), vfs.Default, dir, s, info); err != nil {
		t.Fatal(err)
	}
	r, err := Open(vfs.Default, dir, s, info)
	if err != nil {
		t.Fatal(err)
	}
	mapped := 0
	for _, fi := range info.Files {
		lf := r.file(fi.Suffix)
		if lf.mapped != (fi.Size > readLimit) {
			t.Errorf("%s of %d bytes: mapped %v", fi.Suffix, fi.Size, lf.mapped)
		}
		if lf.mapped {
			mapped++
		}
	}
	if mapped == 0 {
		t.Error("no file is large enough to be mapped")
	}
	checkReader(t, r, s, docs)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := vfs.Default.Remove(vfs.Default.PathJoin(dir, "seg_abc.fwd")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(vfs.Default, dir, s, info); !errors.Is(err, ErrMissingFile) {
		t.Fatalf("missing file on disk: %v", err)
	}
}

// TestConcurrentReads runs every read path from many goroutines on one
// Reader (run with -race).
func TestConcurrentReads(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 300)
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "idx", s, 77, docs)
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	body, _ := s.Field("body")
	emb, _ := s.Field("emb")
	year, _ := s.Field("year")
	sp, _ := s.Field("sp")
	var words []string
	for _, d := range docs[:40] {
		words = append(words, analysis.Terms(d.Fields[body].Strings[0])...)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 400; i++ {
				doc := uint32((g*131 + i*17) % len(docs))
				d := docs[doc]
				if st, err := r.StoredDocument(doc); err != nil || !bytes.Equal(st, d.Stored) {
					errs <- errors.New("stored document mismatch")
					return
				}
				if pk, err := r.PrimaryKey(doc); err != nil || pk != d.PrimaryKey {
					errs <- errors.New("primary key mismatch")
					return
				}
				if v, ok, err := r.DenseVector(emb, doc); err != nil || ok != (d.Fields[emb].Dense != nil) || !slices.Equal(v, d.Fields[emb].Dense) {
					errs <- errors.New("dense vector mismatch")
					return
				}
				if _, err := r.Numbers(year, doc); err != nil {
					errs <- err
					return
				}
				if _, err := r.ForwardTerms(body, doc); err != nil {
					errs <- err
					return
				}
				p, err := r.Postings(body, words[(g+i)%len(words)])
				if err != nil || p == nil {
					errs <- errors.New("missing postings")
					return
				}
				for p.Next() {
					if _, err := p.Positions(); err != nil {
						errs <- err
						return
					}
				}
				if p.Err() != nil {
					errs <- p.Err()
					return
				}
				for _, e := range d.Fields[sp].Sparse {
					sp, err := r.SparsePostings(sp, e.Dim)
					if err != nil || sp == nil || !sp.Advance(doc) || sp.Doc() != doc {
						errs <- errors.New("sparse postings mismatch")
						return
					}
				}
				if _, err := r.Document(doc); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestPostingsAdvance(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 200)
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "idx", s, 5, docs)
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	body, _ := s.Field("body")
	m := buildModel(s, docs)
	want := m.terms[body]["light"]
	if len(want) < 10 {
		t.Fatalf("only %d docs hold light", len(want))
	}
	p, _ := r.Postings(body, "light")
	for k := 0; k < len(want); k += 3 {
		if !p.Advance(want[k].doc) || p.Doc() != want[k].doc {
			t.Fatalf("Advance(%d) at %d", want[k].doc, p.Doc())
		}
		pos, err := p.Positions()
		if err != nil || !slices.Equal(pos, want[k].positions) {
			t.Fatalf("doc %d: positions %v, want %v (%v)", want[k].doc, pos, want[k].positions, err)
		}
		if again, _ := p.Positions(); !slices.Equal(again, pos) {
			t.Fatalf("second Positions call differs")
		}
	}
	if p.Advance(uint32(len(docs))) {
		t.Fatal("Advance past the last doc succeeded")
	}
	it, _ := r.Terms(body)
	if !it.Seek("lig") || it.Term() < "lig" {
		t.Fatalf("Seek(lig) at %q", it.Term())
	}
	if !it.Seek("light") || it.Term() != "light" {
		t.Fatalf("Seek(light) at %q", it.Term())
	}
	if it.Seek("\xff") {
		t.Fatal("Seek past the last term succeeded")
	}
}

// TestDiskSmallFileSize opens, on disk, a segment whose small (read, not
// mapped) norms file grew by one byte, then lost two: both are corrupt.
func TestDiskSmallFileSize(t *testing.T) {
	s := testSchema()
	dir := t.TempDir()
	info := buildSegment(t, vfs.Default, dir, s, 0xabd, opticksDocs(t, s, 20))
	path := vfs.Default.PathJoin(dir, "seg_abd.norms")
	data := readFile(t, vfs.Default, path)
	if len(data) > readLimit {
		t.Fatalf("norms file of %d bytes is not small", len(data))
	}
	for _, bad := range [][]byte{append(append([]byte(nil), data...), 0), data[:len(data)-2]} {
		writeFile(t, vfs.Default, path, bad)
		var c *CorruptionError
		if _, err := Open(vfs.Default, dir, s, info); !errors.As(err, &c) {
			t.Fatalf("norms file of %d bytes, %d recorded: %v", len(bad), len(data), err)
		}
	}
}

// TestPostingsRelease reads a term's postings with a full block, releases
// the iterator and checks that it is spent (no document, Err set) and
// that a new iterator, which may reuse the released buffers, reads the
// same documents.
func TestPostingsRelease(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 400)
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "idx", s, 6, docs)
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	body, _ := s.Field("body")
	read := func() []uint32 {
		p, err := r.Postings(body, "the")
		if err != nil || p == nil {
			t.Fatalf("postings of the: %v", err)
		}
		if p.DocFreq() < codec.BlockSize {
			t.Fatalf("the is in %d documents, want a full block", p.DocFreq())
		}
		var got []uint32
		for p.Next() {
			got = append(got, p.Doc(), p.Freq())
		}
		if p.Err() != nil {
			t.Fatal(p.Err())
		}
		p.Release()
		if p.Next() || p.Advance(0) || p.Err() == nil {
			t.Fatal("a released iterator still reads")
		}
		return got
	}
	first := read()
	if again := read(); !slices.Equal(first, again) {
		t.Fatal("an iterator reusing released buffers reads other postings")
	}
}

// TestDictFirstTermsIndex looks every term of a field up, and a
// neighbour of every term that is absent, twice: the lookups before the
// in-memory index of first terms exists probe the blocks, the later ones
// search the index, and both must find exactly the dictionary's terms.
func TestDictFirstTermsIndex(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 400)
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "idx", s, 7, docs)
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	body, _ := s.Field("body")
	d := r.dicts[body]
	if d.numBlocks < 8 {
		t.Fatalf("only %d dictionary blocks", d.numBlocks)
	}
	type term struct {
		t  string
		df uint32
	}
	var terms []term
	it, _ := r.Terms(body)
	for it.Next() {
		terms = append(terms, term{it.Term(), it.DocFreq()})
	}
	present := map[string]bool{}
	for _, x := range terms {
		present[x.t] = true
	}
	for round := range 2 {
		for _, x := range terms {
			p, err := r.Postings(body, x.t)
			if err != nil || p == nil || p.DocFreq() != x.df {
				t.Fatalf("round %d: %q not found with df %d (%v)", round, x.t, x.df, err)
			}
			for _, absent := range []string{x.t + "\x00", x.t[:len(x.t)-1]} {
				if present[absent] {
					continue
				}
				if p, err := r.Postings(body, absent); err != nil || p != nil {
					t.Fatalf("round %d: absent %q found (%v)", round, absent, err)
				}
			}
		}
		if round == 0 && d.firsts.Load() == nil {
			t.Fatal("no index of first terms after every term was looked up")
		}
	}
	if p, _ := r.Postings(body, ""); p != nil {
		t.Fatal("the empty term was found")
	}
}

// TestPostingsBuffered checks the decoded run Buffered returns, after
// Next and after Advance (inside a run and across skipped blocks): it
// starts at Doc(), holds the following documents in order, and
// BufferedFreq gives each one's frequency; it is empty at the end.
func TestPostingsBuffered(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 0)
	fs := vfs.NewMem()
	r := openTestReader(t, fs, buildSegment(t, fs, "idx", s, 6, docs))
	body, _ := s.Field("body")
	want := buildModel(s, docs).terms[body]["the"]
	if len(want) < 4*128 {
		t.Fatalf("only %d docs hold the: too few blocks", len(want))
	}
	check := func(p *Postings, k int) {
		t.Helper()
		b := p.Buffered()
		if len(b) == 0 || b[0] != p.Doc() || p.Doc() != want[k].doc {
			t.Fatalf("at posting %d (doc %d): run %v", k, p.Doc(), b[:min(len(b), 3)])
		}
		for i, d := range b {
			if k+i >= len(want) || d != want[k+i].doc || p.BufferedFreq(i) != uint32(len(want[k+i].positions)) {
				t.Fatalf("posting %d, run index %d: doc %d freq %d", k, i, d, p.BufferedFreq(i))
			}
		}
	}
	p, _ := r.Postings(body, "the")
	for k := 0; p.Next(); k++ {
		check(p, k)
	}
	if len(p.Buffered()) != 0 {
		t.Fatal("a run at the end")
	}
	p, _ = r.Postings(body, "the")
	for _, k := range []int{0, 5, 6, 300, 301, 450, 500, len(want) - 1} {
		if !p.Advance(want[k].doc) {
			t.Fatalf("Advance(%d) failed", want[k].doc)
		}
		check(p, k)
	}
	// A run at a time: NextRun lands on the document after each run, and
	// the positions of the documents passed are skipped, not read.
	p, _ = r.Postings(body, "the")
	k := 0
	read := false
	for ok := p.Next(); ok; ok = p.NextRun() {
		check(p, k)
		if k >= 3*128 && !read {
			got, err := p.Positions()
			if err != nil || !slices.Equal(got, want[k].positions) {
				t.Fatalf("positions of doc %d after runs: %v %v, want %v", p.Doc(), got, err, want[k].positions)
			}
			read = true
		}
		k += len(p.Buffered())
	}
	if !read {
		t.Fatal("no run started past the third block")
	}
	if k != len(want) || p.Err() != nil {
		t.Fatalf("runs covered %d of %d postings (%v)", k, len(want), p.Err())
	}
}
