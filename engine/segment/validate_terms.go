package segment

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/summadev/summa/engine/internal/par"
)

// termsCheck is one range of one field's terms that validateTerms checks
// on its own: a field with many postings is cut into ranges checked
// concurrently (see splitDicts).
type termsCheck struct {
	field  int
	lo, hi []byte // the range [lo, hi); nil bounds are open
	// only is set when the range is its field's only one: it adds to the
	// field's per-document counts without atomics (others add to a
	// private slot's, or atomically when the field has no slots).
	only bool
	// Results: the ordinals covered, the terms and postings counted, the
	// first failure and the first block-max disagreement.
	start, end uint32
	count      uint32
	sumDF      uint64
	err, bmErr error
}

// termsField is the per-document state the ranges of a field share:
// added to by a field's only range, folded from the slots' once the
// ranges are done, or added to atomically when slots is nil.
type termsField struct {
	lengths  []uint32 // per doc: sum of frequencies
	distinct []uint32 // per doc: number of terms
	// slots lend the ranges of a field cut in several private lengths and
	// distinct counts (nil: one range, or atomics; see newDocSlots).
	slots *docSlots
}

// validateTerms decodes every dictionary and postings list, and checks them
// against norms, row statistics, the primary-key column and the forward
// term lists. The same decoding rebuilds the fields' block-max records
// (see bmChecker): a disagreement is returned as bmErr, which Validate
// reports after every other check's error. The ranges of all fields run
// concurrently; failures are reported in the order a walk of the fields
// one after the other, term after term, would meet them.
func (r *Reader) validateTerms(ctx context.Context) (err, bmErr error) {
	fields := make([]*termsField, len(r.dicts))
	var checks []*termsCheck
	for field, d := range r.dicts {
		if d == nil {
			continue
		}
		fields[field] = &termsField{lengths: make([]uint32, r.numDocs), distinct: make([]uint32, r.numDocs)}
		n := 1
		if procs := runtime.GOMAXPROCS(0); procs > 1 {
			n = min(max(len(d.post)/chunkBytes, 1), 4*procs)
		}
		keys := splitDicts([]*dict{d}, n)
		fields[field].slots = newDocSlots(r.numDocs, len(keys)+1, 2)
		for k := 0; k <= len(keys); k++ {
			c := &termsCheck{field: field, only: len(keys) == 0}
			if k > 0 {
				c.lo = keys[k-1]
			}
			if k < len(keys) {
				c.hi = keys[k]
			}
			checks = append(checks, c)
		}
	}
	par.Do(len(checks), func(i int) { r.checkTermRange(ctx, checks[i], fields[checks[i].field]) })
	for field, d := range r.dicts {
		if d == nil {
			continue
		}
		next := uint32(0) // the ordinal the next range must start at
		var count uint32
		var sumDF uint64
		for _, c := range checks {
			if c.field != field {
				continue
			}
			if c.err != nil {
				return c.err, nil
			}
			if c.start != next || c.end-c.start != c.count {
				return corruptf(r.id, SuffixTerms, "field %d: terms %d to %d iterated as %d terms from %d", field, c.start, c.end, c.count, next), nil
			}
			next = c.end
			count += c.count
			sumDF += c.sumDF
			if bmErr == nil {
				bmErr = c.bmErr
			}
		}
		if count != d.numTerms || sumDF != d.sumDocFreq {
			return corruptf(r.id, SuffixTerms, "field %d: iterated %d terms and %d postings, dictionary says %d and %d", field, count, sumDF, d.numTerms, d.sumDocFreq), nil
		}
		if tf := fields[field]; tf.slots != nil {
			if doc, ok := tf.slots.fold(tf.lengths, tf.distinct); !ok {
				return corruptf(r.id, SuffixPostings, "field %d doc %d: frequencies overflow", field, doc), nil
			}
		}
		if err := r.checkFieldLengths(ctx, field, d, fields[field]); err != nil {
			return err, nil
		}
	}
	return nil, bmErr
}

// checkTermRange walks the terms of one range and their postings.
func (r *Reader) checkTermRange(ctx context.Context, c *termsCheck, tf *termsField) {
	field := c.field
	d := r.dicts[field]
	isPK := field == r.schema.Primary()
	var bm bmChecker
	bf := bm.field(r, field)
	p := new(Postings)
	lengths, distinct, atomically := tf.lengths, tf.distinct, !c.only
	if tf.slots != nil {
		slot := tf.slots.get()
		defer tf.slots.put(slot)
		lengths, distinct, atomically = slot.counts[0], slot.counts[1], false
	}
	it := &TermIterator{d: d}
	start, ok := it.seekFrom(c.lo)
	c.start, c.end = start, start
	fail := func(err error) { c.err = err }
	for ; ok && (c.hi == nil || bytes.Compare(it.TermBytes(), c.hi) < 0); ok = it.Next() {
		if c.count%ctxCheckEvery == ctxCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				fail(fmt.Errorf("segment: validate %s: %w", r.id, err))
				return
			}
		}
		c.count++
		p.init(d, it.c.e)
		c.sumDF += uint64(p.DocFreq())
		posOff := 0 // the next document's positions in p.pos
		// The documents a decoded block at a time; positions are
		// checked as the block's documents are walked.
		for {
			docs, freqs, more := p.nextBlock()
			if !more {
				break
			}
			if bf != nil {
				bm.docs, bm.freqs = append(bm.docs, docs...), append(bm.freqs, freqs...)
			}
			checkPos := d.hasPos
			if checkPos {
				if end, ok := blockPositionsEnd(p.pos, posOff, freqs); ok {
					posOff, checkPos = end, false // the block's at once
				}
			}
			for k, doc := range docs {
				freq := freqs[k]
				var sum uint32
				if !atomically {
					lengths[doc] += freq
					distinct[doc]++
					sum = lengths[doc]
				} else {
					sum = atomic.AddUint32(&lengths[doc], freq)
					atomic.AddUint32(&distinct[doc], 1)
				}
				if sum < freq {
					fail(corruptf(r.id, SuffixPostings, "field %d doc %d: frequencies overflow", field, doc))
					return
				}
				if checkPos {
					if posOff = p.checkPositions(posOff, doc, freq); posOff < 0 {
						fail(p.Err())
						return
					}
				}
				if isPK {
					pk, err := r.primaryKeyBytes(doc)
					if err != nil {
						fail(err)
						return
					}
					if !bytes.Equal(pk, it.TermBytes()) {
						fail(corruptf(r.id, SuffixPrimaryKey, "doc %d has key %q, postings say %q", doc, pk, it.TermBytes()))
						return
					}
				}
			}
		}
		p.posOff = posOff
		if err := p.checkEnd(); err != nil {
			fail(err)
			return
		}
		bm.term(r, field, bf, it.c.e.ord)
	}
	if err := it.Err(); err != nil {
		fail(err)
		return
	}
	c.end = d.numTerms
	if ok {
		c.end = it.Ordinal() // the first term at or past hi
	}
	c.bmErr = bm.err
}

// checkFieldLengths checks a field's norms, row statistics and forward
// term lists against what its postings hold.
func (r *Reader) checkFieldLengths(ctx context.Context, field int, d *dict, tf *termsField) error {
	isPK := field == r.schema.Primary()
	var total uint64
	var with uint32
	for doc, n := range tf.lengths {
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
	return r.validateForward(ctx, field, tf.distinct)
}
