package segment

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/internal/jsonvalid"
	"github.com/summadev/summa/engine/internal/par"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// Validate fully validates a segment: the cheap checks of Open, every
// file's CRC, and every structure: all postings decode with increasing doc
// ids below the document count, terms are sorted, positions agree with the
// norms, stored blocks decompress into well-formed records, and the pk,
// numeric, forward and vector columns have consistent sizes and values.
func Validate(ctx context.Context, fs vfs.FS, dir string, s *schema.Schema, info Info) error {
	r, release, err := openForValidate(fs, dir, s, info)
	if err != nil {
		return err
	}
	defer release()
	defer r.Close()
	return r.Validate(ctx)
}

// OpenValidated fsyncs, fully validates and opens a segment written
// without its fsync (MergeOptions.Unsynced), making every check Validate
// makes; it returns the segment open, or the first failure in Validate's
// order after a sync failure. The structure checks read the files while
// they are synced (on another goroutine: the sync waits for the disk, the
// checks for the CPU). The segment is then opened again and the checksums
// computed on the bytes as they are once the sync returned: the footers'
// CRCs were computed from the bytes the writer wrote, so bytes changed
// after the write, even during the sync after a structure check read them,
// fail here; the reader returned is that second one, tuned by opts (at
// most one, as in Open; the first reader, closed at once, caches nothing).
func OpenValidated(ctx context.Context, fs vfs.FS, dir string, s *schema.Schema, info Info, opts ...ReaderOptions) (*Reader, error) {
	o := oneOption(opts)
	pre, err := Open(fs, dir, s, info)
	if err != nil {
		return nil, err
	}
	synced := make(chan error, 1)
	go func() { synced <- syncFiles(fs, dir, info) }()
	structErr := pre.validate(ctx, false, true)
	syncErr := <-synced
	pre.Close()
	if syncErr != nil {
		return nil, syncErr
	}
	r, err := Open(fs, dir, s, info, o)
	if err != nil {
		return nil, err
	}
	if err := r.validate(ctx, true, false); err != nil {
		r.Close()
		return nil, err
	}
	if structErr != nil {
		r.Close()
		return nil, structErr
	}
	return r, nil
}

// syncFiles fsyncs the files of a segment written unsynced. Without it a
// power loss after a metadata commit that references the segment could
// leave a published segment whose file is empty or torn.
func syncFiles(fs vfs.FS, dir string, info Info) error {
	for _, fi := range info.Files {
		path := fs.PathJoin(dir, segid.FileName(info.ID, fi.Suffix))
		f, err := fs.Open(path)
		if err != nil {
			return fmt.Errorf("segment: sync %s: %w", path, err)
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("segment: sync %s: %w", path, err)
		}
	}
	return nil
}

// Validate runs Validate's checks on an open segment. The checks are
// independent and run concurrently (GOMAXPROCS at most); when several
// fail, the error reported is the one the checks' fixed order puts first
// (checksums, then structures, then block maxima), whatever finished first.
func (r *Reader) Validate(ctx context.Context) error {
	return r.validate(ctx, true, true)
}

// validate runs the checksum checks (crc) and the structure checks
// (structure) of Validate.
func (r *Reader) validate(ctx context.Context, crc, structure bool) error {
	var checks []func() error
	for _, fi := range r.info.parts() {
		if !crc {
			break
		}
		checks = append(checks, func() error {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("segment: validate %s: %w", r.id, err)
			}
			return checkCRC(r.file(fi.Suffix).data, r.id, fi.Suffix)
		})
	}
	var termsBM, vectorsBM error
	if structure {
		checks = r.structureChecks(ctx, checks, &termsBM, &vectorsBM)
	}
	errs := make([]error, len(checks))
	par.Do(len(checks), func(i int) { errs[i] = checks[i]() })
	for _, err := range append(errs, termsBM, vectorsBM) {
		if err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("segment: validate %s: %w", r.id, err)
	}
	return nil
}

// structureChecks appends Validate's structure checks to checks, in
// their reporting order; the block-max disagreements they find go to
// termsBM and vectorsBM, reported after every other check's error.
func (r *Reader) structureChecks(ctx context.Context, checks []func() error, termsBM, vectorsBM *error) []func() error {
	checks = append(checks, func() (err error) { err, *termsBM = r.validateTerms(ctx); return err })
	// The store's blocks are checked in ranges, concurrently for a large
	// store; the first failing range reports its first failing block.
	blocks := r.store.numBlocks
	n := uint32(1)
	if procs := runtime.GOMAXPROCS(0); procs > 1 {
		n = uint32(min(max(len(r.store.payload)/chunkBytes, 1), 4*procs))
	}
	for k := uint32(0); k < n; k++ {
		lo, hi := uint32(uint64(blocks)*uint64(k)/uint64(n)), uint32(uint64(blocks)*uint64(k+1)/uint64(n))
		checks = append(checks, func() error { return r.validateStore(ctx, lo, hi) })
	}
	return append(checks,
		func() error { return r.validateColumns(ctx) },
		func() (err error) { err, *vectorsBM = r.validateVectors(ctx); return err },
		func() error { return r.validateIVF(ctx) },
		func() error { return r.validateSeismic(ctx) })
}

// validateForward checks a reorder field's term lists: bounds, increasing
// ordinals below the term count, and as many terms per document as the
// postings hold. A large column is checked in document ranges,
// concurrently; the first failing range reports its first failing
// document, as one walk would.
func (r *Reader) validateForward(ctx context.Context, field int, distinct []uint32) error {
	c := &r.fwds[field]
	if !c.ok {
		return nil
	}
	if c.offs.at(0) != 0 || c.offs.at(int(r.numDocs)) != uint64(len(c.data)) {
		return corruptf(r.id, SuffixForward, "field %d: offsets do not cover the term lists", field)
	}
	n := 1
	if procs := runtime.GOMAXPROCS(0); procs > 1 {
		n = min(max(len(c.data)/chunkBytes, 1), 4*procs)
	}
	errs := make([]error, n)
	failed := par.NewMin(n)
	par.DoUntil(n, failed.Get, func(k int) {
		lo, hi := uint32(uint64(r.numDocs)*uint64(k)/uint64(n)), uint32(uint64(r.numDocs)*uint64(k+1)/uint64(n))
		if errs[k] = r.validateForwardDocs(ctx, field, distinct, lo, hi); errs[k] != nil {
			failed.Lower(k)
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// validateForwardDocs checks the term lists of documents [lo, hi).
func (r *Reader) validateForwardDocs(ctx context.Context, field int, distinct []uint32, lo, hi uint32) error {
	c := &r.fwds[field]
	var ords []uint32
	for doc := lo; doc < hi; doc++ {
		if doc%ctxCheckEvery == ctxCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("segment: validate %s: %w", r.id, err)
			}
		}
		var err error
		if ords, err = c.decode(r.id, doc, ords[:0]); err != nil {
			return err
		}
		if uint32(len(ords)) != distinct[doc] {
			return corruptf(r.id, SuffixForward, "field %d doc %d: %d terms, postings hold %d", field, doc, len(ords), distinct[doc])
		}
	}
	return nil
}

// validateStore decompresses the blocks [lo, hi) and parses their
// records.
func (r *Reader) validateStore(ctx context.Context, lo, hi uint32) error {
	sr := r.store
	var bounds []int
	for b := lo; b < hi; b++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("segment: validate %s: %w", r.id, err)
		}
		buf, first, bs, err := sr.decodeBlock(b, bounds)
		if err != nil {
			return err
		}
		bounds = bs
		for i := 0; i+1 < len(bounds); i++ {
			rec := (*buf)[bounds[i]:bounds[i+1]]
			stored, err := sr.checkRecord(rec, r.schema)
			// A record flagged recFromJSON had its JSON checked whole by
			// parseRecord (stringsFromJSON); others are checked here.
			if err == nil && len(stored) > 0 && rec[0] != recFromJSON && !jsonvalid.Valid(stored) {
				err = corruptf(r.id, SuffixStore, "doc %d: stored document is not valid JSON", first+uint32(i))
			}
			if err != nil {
				rawPool.Put(buf)
				return err
			}
		}
		rawPool.Put(buf)
	}
	return nil
}

// validateColumns checks the offset tables of the pk and numeric columns.
func (r *Reader) validateColumns(ctx context.Context) error {
	if r.pk.has {
		if err := checkOffsets(r.pk.offs, uint64(len(r.pk.data))); err != nil {
			return corruptf(r.id, SuffixPrimaryKey, "%v", err)
		}
	}
	for field := range r.nums {
		c := &r.nums[field]
		if !c.ok || c.single {
			continue
		}
		if err := checkOffsets(c.offs, c.n); err != nil {
			return corruptf(r.id, SuffixNumbers, "field %d: %v", field, err)
		}
	}
	return ctx.Err()
}

// checkOffsets checks that an offset table starts at 0, never decreases and
// ends at end.
func checkOffsets(t offsetTable, end uint64) error {
	var prev uint64
	for i := 0; i < t.n; i++ {
		o := t.at(i)
		if (i == 0 && o != 0) || o < prev {
			return fmt.Errorf("offset %d of %d is %d after %d", i, t.n, o, prev)
		}
		prev = o
	}
	if prev != end {
		return fmt.Errorf("offsets end at %d, data holds %d", prev, end)
	}
	return nil
}

// validateVectors checks dense values are finite and decodes every sparse
// dimension's postings, rebuilding their block-max records on the way (see
// validateTerms for bmErr).
func (r *Reader) validateVectors(ctx context.Context) (err, bmErr error) {
	var bm bmChecker
	for field, c := range r.dense {
		if c == nil {
			continue
		}
		for i := 0; i+4 <= len(c.vals); i += 4 {
			x := math.Float32frombits(binary.LittleEndian.Uint32(c.vals[i:]))
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return corruptf(r.id, SuffixVectors, "field %d: vector value %d is not finite", field, i/4), nil
			}
		}
	}
	for field, d := range r.sparse {
		if d == nil {
			continue
		}
		bf := bm.field(r, field)
		it := &TermIterator{d: d}
		var count uint32
		var sumDF uint64
		for it.Next() {
			if count%ctxCheckEvery == ctxCheckEvery-1 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("segment: validate %s: %w", r.id, err), nil
				}
			}
			count++
			p := newSparsePostings(d, it.c.e)
			sumDF += uint64(p.DocFreq())
			for p.Next() {
				if bf != nil {
					bm.ps = append(bm.ps, bmPosting{doc: p.Doc(), w: p.Weight()})
				}
			}
			if err := p.Err(); err != nil {
				return err, nil
			}
			if p.n != p.df {
				return corruptf(r.id, SuffixVectors, "field %d: dimension %q decoded %d of %d documents", field, it.TermBytes(), p.n, p.df), nil
			}
			bm.term(r, field, bf, it.c.e.ord)
		}
		if err := it.Err(); err != nil {
			return err, nil
		}
		if count != d.numTerms || sumDF != d.sumDocFreq {
			return corruptf(r.id, SuffixVectors, "field %d: iterated %d dimensions and %d postings, dictionary says %d and %d", field, count, sumDF, d.numTerms, d.sumDocFreq), nil
		}
	}
	return nil, bm.err
}
