package segment

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/summadev/summa/engine/ivf"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// openIVF parses the ivf file's directory and maps every run; it checks
// each run's shape, its model hash against its centroids, and that the
// runs of a field hold as many vectors as the vec file has for it.
func openIVF(id segid.ID, s *schema.Schema, payload []byte, numDocs uint32, dense []*denseCol) ([][]*ivf.Run, error) {
	want := func(i int) bool { return IsBinaryIVF(&s.Fields[i]) }
	return fieldEntries(id, SuffixIVF, payload, numDocs, nil, want, len(s.Fields), func(d *decoder, ord int) ([]*ivf.Run, error) {
		words := d.intv(ivf.Words(schema.MaxDenseDims))
		nRuns := d.intv(len(payload))
		if d.err != nil {
			return nil, nil
		}
		if words != ivf.Words(s.Fields[ord].Dims) {
			return nil, corruptf(id, SuffixIVF, "field %d: %d-word codes for %d dimensions", ord, words, s.Fields[ord].Dims)
		}
		runs := []*ivf.Run{}
		var total uint64
		for k := 0; k < nRuns && d.err == nil; k++ {
			r, err := openRun(id, ord, d, payload, words)
			if err != nil || r == nil {
				return nil, err
			}
			total += uint64(r.Len())
			runs = append(runs, r)
		}
		if d.err != nil {
			return nil, nil
		}
		var have uint64
		if dense[ord] != nil {
			have = uint64(dense[ord].count)
		}
		if total != have {
			return nil, corruptf(id, SuffixIVF, "field %d: runs hold %d vectors, the vec file %d", ord, total, have)
		}
		return runs, nil
	})
}

// openRun reads one run's directory entry and maps its arrays.
func openRun(id segid.ID, ord int, d *decoder, payload []byte, words int) (*ivf.Run, error) {
	quant := d.uvarint()
	k, count := d.uvarint(), d.uvarint()
	var hb [8]byte
	copy(hb[:], d.bytes(8))
	hash := binary.LittleEndian.Uint64(hb[:])
	centOff, offsOff, codeOff, docOff := d.uvarint(), d.uvarint(), d.uvarint(), d.uvarint()
	if d.err != nil {
		return nil, nil
	}
	if quant != ivf.QuantizerSign {
		return nil, corruptf(id, SuffixIVF, "field %d: unknown quantizer %d", ord, quant)
	}
	limit := uint64(len(payload))
	if k < 1 || k > limit || count > limit {
		return nil, corruptf(id, SuffixIVF, "field %d: run of K=%d with %d vectors does not fit the payload", ord, k, count)
	}
	w := uint64(words)
	for _, off := range []uint64{centOff, offsOff, codeOff, docOff} {
		if off%8 != 0 {
			return nil, corruptf(id, SuffixIVF, "field %d: unaligned run array at %d", ord, off)
		}
	}
	cent, ok1 := subslice(payload, centOff, k*w*8)
	offs, ok2 := subslice(payload, offsOff, (k+1)*4)
	codes, ok3 := subslice(payload, codeOff, count*w*8)
	docs, ok4 := subslice(payload, docOff, count*4)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return nil, corruptf(id, SuffixIVF, "field %d: run arrays outside the payload", ord)
	}
	r := &ivf.Run{
		Model:   &ivf.Model{K: int(k), Words: words, Centroids: u64View(cent)},
		Offsets: u32View(offs), Codes: u64View(codes), Docs: u32View(docs),
	}
	if err := r.Check(); err != nil {
		return nil, corruptf(id, SuffixIVF, "field %d: %v", ord, err)
	}
	if got := r.Model.Hash(); got != hash {
		return nil, corruptf(id, SuffixIVF, "field %d: model hash %016x, centroids hash to %016x", ord, hash, got)
	}
	return r, nil
}

// checkIVFInfo compares the metadata's record of the IVF payload with the
// ivf file: same fields, run counts, vector counts and model hashes.
func (r *Reader) checkIVFInfo() error {
	recs := r.info.IVF
	k := 0
	for i := range r.schema.Fields {
		if !IsBinaryIVF(&r.schema.Fields[i]) {
			continue
		}
		if k >= len(recs) || recs[k].Field != r.schema.Fields[i].Name {
			return corruptf(r.id, SuffixIVF, "segment metadata does not record field %q's runs", r.schema.Fields[i].Name)
		}
		rec, runs := recs[k], r.ivf[i]
		k++
		if rec.Runs != len(runs) || len(rec.Models) != len(runs) || rec.Fragmented != (len(runs) > 1) {
			return corruptf(r.id, SuffixIVF, "field %q: metadata records %d runs (fragmented %v), file has %d", rec.Field, rec.Runs, rec.Fragmented, len(runs))
		}
		var n uint32
		for j, run := range runs {
			h, ok := parseModelName(rec.Models[j])
			if !ok || h != run.Model.Hash() {
				return corruptf(r.id, SuffixIVF, "field %q run %d: metadata model %q, file %s", rec.Field, j, rec.Models[j], modelName(run.Model.Hash()))
			}
			n += uint32(run.Len())
		}
		if n != rec.Vectors {
			return corruptf(r.id, SuffixIVF, "field %q: metadata records %d vectors, runs hold %d", rec.Field, rec.Vectors, n)
		}
	}
	if k != len(recs) {
		return corruptf(r.id, SuffixIVF, "segment metadata records %d binary fields, schema has %d", len(recs), k)
	}
	return nil
}

// IVFRuns returns the encoded runs of a binary dense field; ok is false
// when the segment has no IVF payload for it (not a binary field, or a
// segment written before the ivf file: search it exactly).
func (r *Reader) IVFRuns(field int) ([]*ivf.Run, bool) {
	if !r.fieldOK(field) || r.ivf == nil || r.ivf[field] == nil {
		return nil, false
	}
	return r.ivf[field], true
}

// validateIVF decodes every run: shapes, doc IDs, cluster assignment, and
// that the runs of a field hold every document having a vector exactly
// once, with the sign code of its stored float vector.
func (r *Reader) validateIVF(ctx context.Context) error {
	if r.ivf == nil {
		return nil
	}
	for field, runs := range r.ivf {
		if runs == nil {
			continue
		}
		c := r.dense[field]
		seen := make([]uint64, (r.numDocs+63)/64)
		code := make([]uint64, ivf.Words(r.schema.Fields[field].Dims))
		for k, run := range runs {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("segment: validate %s: %w", r.id, err)
			}
			if err := run.CheckFull(r.numDocs); err != nil {
				return corruptf(r.id, SuffixIVF, "field %d run %d: %v", field, k, err)
			}
			w := run.Model.Words
			for i, doc := range run.Docs {
				if seen[doc/64]&(1<<(doc%64)) != 0 {
					return corruptf(r.id, SuffixIVF, "field %d: doc %d encoded twice", field, doc)
				}
				seen[doc/64] |= 1 << (doc % 64)
				vec, ok, err := r.DenseVector(field, doc)
				if err != nil {
					return err
				}
				if !ok || c == nil {
					return corruptf(r.id, SuffixIVF, "field %d: doc %d encoded without a vector", field, doc)
				}
				ivf.Encode(code, vec)
				if ivf.Hamming(code, run.Codes[i*w:(i+1)*w]) != 0 {
					return corruptf(r.id, SuffixIVF, "field %d run %d: doc %d's code is not its vector's sign code", field, k, doc)
				}
			}
		}
	}
	return nil
}
