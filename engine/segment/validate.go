package segment

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
)

// Validate fully validates a segment: the cheap checks of Open, every
// file's CRC, and every structure: all postings decode with increasing doc
// ids below the document count, terms are sorted, positions agree with the
// norms, stored blocks decompress into well-formed records, and the pk,
// numeric, forward and vector columns have consistent sizes and values.
func Validate(ctx context.Context, fs vfs.FS, dir string, s *schema.Schema, info Info) error {
	r, err := Open(fs, dir, s, info)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Validate(ctx)
}

// Validate runs Validate's checks on an open segment.
func (r *Reader) Validate(ctx context.Context) error {
	for _, fi := range r.info.parts() {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("segment: validate %s: %w", r.id, err)
		}
		if err := checkCRC(r.files[fi.Suffix].data, r.id, fi.Suffix); err != nil {
			return err
		}
	}
	checks := []func(context.Context) error{r.validateTerms, r.validateStore, r.validateColumns, r.validateVectors, r.validateIVF, r.validateSeismic, r.validateBlockMax}
	for _, check := range checks {
		if err := check(ctx); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("segment: validate %s: %w", r.id, err)
		}
	}
	return nil
}

// validateTerms decodes every dictionary and postings list, and checks them
// against norms, row statistics, the primary-key column and the forward
// term lists.
func (r *Reader) validateTerms(ctx context.Context) error {
	lengths := make([]uint32, r.numDocs)  // per doc: sum of frequencies
	distinct := make([]uint32, r.numDocs) // per doc: number of terms
	var positions []uint32
	for field, d := range r.dicts {
		if d == nil {
			continue
		}
		clear(lengths)
		clear(distinct)
		isPK := field == r.schema.Primary()
		it := &TermIterator{d: d}
		var count uint32
		var sumDF uint64
		for it.Next() {
			if count%ctxCheckEvery == ctxCheckEvery-1 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("segment: validate %s: %w", r.id, err)
				}
			}
			count++
			p := it.Postings()
			sumDF += uint64(p.DocFreq())
			for p.Next() {
				doc := p.Doc()
				if lengths[doc]+p.Freq() < lengths[doc] {
					return corruptf(r.id, SuffixPostings, "field %d doc %d: frequencies overflow", field, doc)
				}
				lengths[doc] += p.Freq()
				distinct[doc]++
				if d.hasPos {
					var err error
					if positions, err = p.AppendPositions(positions[:0]); err != nil {
						return err
					}
				}
				if isPK {
					pk, err := r.PrimaryKey(doc)
					if err != nil {
						return err
					}
					if pk != string(it.TermBytes()) {
						return corruptf(r.id, SuffixPrimaryKey, "doc %d has key %q, postings say %q", doc, pk, it.TermBytes())
					}
				}
			}
			if err := p.checkEnd(); err != nil {
				return err
			}
		}
		if err := it.Err(); err != nil {
			return err
		}
		if count != d.numTerms || sumDF != d.sumDocFreq {
			return corruptf(r.id, SuffixTerms, "field %d: iterated %d terms and %d postings, dictionary says %d and %d", field, count, sumDF, d.numTerms, d.sumDocFreq)
		}
		var total uint64
		var with uint32
		for doc, n := range lengths {
			total += uint64(n)
			if n > 0 {
				with++
			}
			if d.hasPos && r.norms[field].at(uint32(doc)) != n {
				return corruptf(r.id, SuffixNorms, "field %d doc %d: length %d, postings hold %d", field, doc, r.norms[field].at(uint32(doc)), n)
			}
			if isPK && n != 1 {
				return corruptf(r.id, SuffixPostings, "doc %d has %d primary-key postings", doc, n)
			}
		}
		if st := r.stats[field]; st.totalLen != total || st.docsWith != with {
			return corruptf(r.id, SuffixRowStats, "field %d: length %d in %d documents, postings hold %d in %d", field, st.totalLen, st.docsWith, total, with)
		}
		if err := r.validateForward(ctx, field, distinct); err != nil {
			return err
		}
	}
	return nil
}

// validateForward checks a reorder field's term lists: bounds, increasing
// ordinals below the term count, and as many terms per document as the
// postings hold.
func (r *Reader) validateForward(ctx context.Context, field int, distinct []uint32) error {
	c := &r.fwds[field]
	if !c.ok {
		return nil
	}
	if c.offs.at(0) != 0 || c.offs.at(int(r.numDocs)) != uint64(len(c.data)) {
		return corruptf(r.id, SuffixForward, "field %d: offsets do not cover the term lists", field)
	}
	var ords []uint32
	for doc := uint32(0); doc < r.numDocs; doc++ {
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

// validateStore decompresses every block and parses every record.
func (r *Reader) validateStore(ctx context.Context) error {
	sr := r.store
	vals := make([]schema.Values, len(r.schema.Fields))
	var bounds []int
	for b := uint32(0); b < sr.numBlocks; b++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("segment: validate %s: %w", r.id, err)
		}
		buf, first, bs, err := sr.decodeBlock(b, bounds)
		if err != nil {
			return err
		}
		bounds = bs
		for i := 0; i+1 < len(bounds); i++ {
			clear(vals)
			stored, err := sr.parseRecord((*buf)[bounds[i]:bounds[i+1]], vals, r.schema)
			if err == nil && len(stored) > 0 && !json.Valid(stored) {
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
// dimension's postings.
func (r *Reader) validateVectors(ctx context.Context) error {
	for field, c := range r.dense {
		if c == nil {
			continue
		}
		for i := 0; i+4 <= len(c.vals); i += 4 {
			x := math.Float32frombits(binary.LittleEndian.Uint32(c.vals[i:]))
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return corruptf(r.id, SuffixVectors, "field %d: vector value %d is not finite", field, i/4)
			}
		}
	}
	for field, d := range r.sparse {
		if d == nil {
			continue
		}
		it := &TermIterator{d: d}
		var count uint32
		var sumDF uint64
		for it.Next() {
			if count%ctxCheckEvery == ctxCheckEvery-1 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("segment: validate %s: %w", r.id, err)
				}
			}
			count++
			p := newSparsePostings(d, it.c.e)
			sumDF += uint64(p.DocFreq())
			for p.Next() {
			}
			if err := p.Err(); err != nil {
				return err
			}
			if p.n != p.df {
				return corruptf(r.id, SuffixVectors, "field %d: dimension %q decoded %d of %d documents", field, it.TermBytes(), p.n, p.df)
			}
		}
		if err := it.Err(); err != nil {
			return err
		}
		if count != d.numTerms || sumDF != d.sumDocFreq {
			return corruptf(r.id, SuffixVectors, "field %d: iterated %d dimensions and %d postings, dictionary says %d and %d", field, count, sumDF, d.numTerms, d.sumDocFreq)
		}
	}
	return nil
}
