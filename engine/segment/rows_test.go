package segment

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

// rowUses are the Reader methods that read the row parts, each returning
// its error (fields of testSchema: 2 body, reorder; 3 year, u64).
var rowUses = map[string]func(r *Reader) error{
	"StoredDocument": func(r *Reader) error { _, err := r.StoredDocument(1); return err },
	"PrimaryKey":     func(r *Reader) error { _, err := r.PrimaryKey(1); return err },
	"Numbers":        func(r *Reader) error { _, err := r.Numbers(3, 1); return err },
	"Number":         func(r *Reader) error { _, _, err := r.Number(3, 1); return err },
	"ForwardTerms":   func(r *Reader) error { _, err := r.ForwardTerms(2, 1); return err },
	"Document":       func(r *Reader) error { _, err := r.Document(1); return err },
	"Validate":       func(r *Reader) error { return r.Validate(context.Background()) },
	"Merge": func(r *Reader) error {
		_, err := Merge(context.Background(), vfs.NewMem(), "", 0x77, r.schema, []*Reader{r}, Concat([]*Reader{r}, nil))
		return err
	},
}

// TestRowPartsCheckedOnFirstUse: damage to the framing or directory of a
// row part (store, pk, num, fwd) of a compound segment does not fail Open
// and does not disturb what search reads (dictionaries, postings, norms,
// statistics, block maxima); the first use of the row parts, and every
// use after it, returns the *CorruptionError naming that part that Open
// would have returned, never a panic or a value, and DeferredErr reports
// it. Breaking loadRows's check (returning nil) fails this test.
func TestRowPartsCheckedOnFirstUse(t *testing.T) {
	fs := vfs.NewMem()
	s, info := compoundSegment(t, fs, "idx", 60)
	path := "idx/" + segid.FileName(corruptID, SuffixCompound)
	orig := readFile(t, fs, path)
	sizes := map[string]int64{}
	for _, p := range info.Parts {
		sizes[p.Suffix] = p.Size
	}
	for _, suffix := range rowSuffixes {
		base, size := partOffset(t, info, suffix), sizes[suffix]
		for what, off := range map[string]int64{
			"header magic": 2, "kind": 9, "version": 12, "segment id": 16,
			"footer length": size - footerSize + 1, "footer magic": size - 3,
			"directory offset": size - footerSize - 1,
		} {
			bad := append([]byte(nil), orig...)
			bad[base+off] ^= 0x40
			writeFile(t, fs, path, bad)
			name := fmt.Sprintf("%s %s", suffix, what)
			r, err := Open(fs, "idx", s, info)
			if err != nil {
				t.Fatalf("%s: Open checked a row part: %v", name, err)
			}
			if r.DeferredErr() != nil {
				t.Fatalf("%s: DeferredErr before any use: %v", name, r.DeferredErr())
			}
			searchStillWorks(t, r, name)
			var first error
			for use, f := range rowUses {
				err := f(r)
				var ce *CorruptionError
				if !errors.As(err, &ce) || ce.File != segid.FileName(corruptID, suffix) {
					t.Fatalf("%s: %s returned %v, want the corruption of %s", name, use, err, suffix)
				}
				if first == nil {
					first = ce
				}
			}
			var ce *CorruptionError
			if d := r.DeferredErr(); !errors.As(d, &ce) || d.Error() != first.Error() {
				t.Fatalf("%s: DeferredErr %v, uses returned %v", name, d, first)
			}
			r.Close()
		}
	}
	writeFile(t, fs, path, orig)
}

// searchStillWorks reads what a query reads: a term's postings, norms and
// statistics, and the block maxima.
func searchStillWorks(t *testing.T, r *Reader, name string) {
	t.Helper()
	it, err := r.Terms(2)
	if err != nil || !it.Next() {
		t.Fatalf("%s: terms: %v", name, err)
	}
	p, err := r.Postings(2, it.Term())
	if err != nil || p == nil || !p.Next() {
		t.Fatalf("%s: postings of %q: %v", name, it.Term(), err)
	}
	if r.FieldLength(2, p.Doc()) == 0 {
		t.Fatalf("%s: no field length for doc %d", name, p.Doc())
	}
	if total, with := r.FieldStats(2); total == 0 || with == 0 {
		t.Fatalf("%s: field stats %d %d", name, total, with)
	}
	if bt, err := r.BlockMaxTerm(2, it.Term()); err != nil || bt == nil {
		t.Fatalf("%s: block maxima: %v", name, err)
	}
}

// TestRowPartsFirstUseConcurrent: sound row parts are checked once, by
// whichever use comes first, while other goroutines use them (run with
// -race); DeferredErr stays nil.
func TestRowPartsFirstUseConcurrent(t *testing.T) {
	fs := vfs.NewMem()
	s, info := compoundSegment(t, fs, "idx", 60)
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 8 {
		for use, f := range rowUses {
			if use == "Merge" || use == "Validate" {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := f(r); err != nil {
					errs <- fmt.Errorf("%s: %w", use, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if r.DeferredErr() != nil {
		t.Fatal(r.DeferredErr())
	}
	want, err := r.Document(59)
	if err != nil || want.PrimaryKey != "opticks-0059" {
		t.Fatalf("document 59: %+v, %v", want, err)
	}
}
