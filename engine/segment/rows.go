package segment

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/summadev/summa/engine/schema"
)

// The row parts of a segment: stored fields, primary keys, numeric
// columns and forward term lists, per document.

// rowSuffixes are the row parts' suffixes.
var rowSuffixes = [...]string{SuffixStore, SuffixPrimaryKey, SuffixNumbers, SuffixForward}

// parseRows reads the directories of the row parts (store, pk, num,
// fwd: per-document data) and checks the forward lists' term counts
// against the dictionaries.
func (r *Reader) parseRows() error {
	s, id, n := r.schema, r.id, r.numDocs
	var payloads [len(rowSuffixes)][]byte
	for i, suffix := range rowSuffixes {
		payloads[i] = r.file(suffix).payload
	}
	store, err := openStore(id, payloads[0], n, s, fileVersion(r.file(SuffixStore).data), r.cache)
	if err != nil {
		return err
	}
	pk, err := openPK(id, s, payloads[1], n)
	if err != nil {
		return err
	}
	nums, err := openNumbers(id, s, payloads[2], n)
	if err != nil {
		return err
	}
	fwds, err := openForward(id, s, payloads[3], n)
	if err != nil {
		return err
	}
	for i := range s.Fields {
		var terms uint32
		if r.dicts[i] != nil {
			terms = r.dicts[i].numTerms
		}
		if fwds[i].ok && fwds[i].numTerms != terms {
			return corruptf(id, SuffixForward, "field %d: %d terms, dictionary has %d", i, fwds[i].numTerms, terms)
		}
	}
	r.store, r.pk, r.nums, r.fwds = store, pk, nums, fwds
	return nil
}

// PrimaryKey returns the primary key of doc.
func (r *Reader) PrimaryKey(doc uint32) (string, error) {
	k, err := r.primaryKeyBytes(doc)
	return string(k), err
}

// primaryKeyBytes is PrimaryKey as a sub-slice of the column (no copy).
func (r *Reader) primaryKeyBytes(doc uint32) ([]byte, error) {
	if !r.pk.has {
		return nil, fmt.Errorf("segment: primary key of doc %d: %w", doc, schema.ErrNoPrimaryKey)
	}
	if doc >= r.numDocs {
		return nil, fmt.Errorf("segment: doc %d out of range (%d documents)", doc, r.numDocs)
	}
	s, e, ok := r.pk.offs.span(int(doc), uint64(len(r.pk.data)))
	if !ok {
		return nil, corruptf(r.id, SuffixPrimaryKey, "doc %d: bad key bounds", doc)
	}
	return r.pk.data[s:e], nil
}

// StoredDocument returns the JSON object of doc's stored fields.
func (r *Reader) StoredDocument(doc uint32) ([]byte, error) {
	return r.store.stored(doc)
}

// ForwardTerms returns the sorted distinct term ordinals of doc in a
// reorder field.
func (r *Reader) ForwardTerms(field int, doc uint32) ([]uint32, error) {
	if !r.fieldOK(field) || !r.fwds[field].ok {
		return nil, fmt.Errorf("segment: field %d has no forward term lists", field)
	}
	if doc >= r.numDocs {
		return nil, fmt.Errorf("segment: doc %d out of range (%d documents)", doc, r.numDocs)
	}
	return r.fwds[field].decode(r.id, doc, nil)
}

// Numbers returns the raw 8-byte values of a numeric field in doc: u64 as
// is, i64 as two's complement, f64 as IEEE-754 bits.
func (r *Reader) Numbers(field int, doc uint32) ([]uint64, error) {
	if !r.fieldOK(field) || !r.nums[field].ok {
		return nil, fmt.Errorf("segment: field %d is not numeric", field)
	}
	if doc >= r.numDocs {
		return nil, fmt.Errorf("segment: doc %d out of range (%d documents)", doc, r.numDocs)
	}
	c := &r.nums[field]
	s, e, ok := c.span(doc)
	if !ok {
		return nil, corruptf(r.id, SuffixNumbers, "field %d doc %d: bad value bounds", field, doc)
	}
	if s == e {
		return nil, nil
	}
	out := make([]uint64, e-s)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(c.vals[8*(s+uint64(i)):])
	}
	return out, nil
}

// Number returns the first raw value of a numeric field in doc, or
// ok=false when doc has none.
func (r *Reader) Number(field int, doc uint32) (uint64, bool, error) {
	if !r.fieldOK(field) || !r.nums[field].ok {
		return 0, false, fmt.Errorf("segment: field %d is not numeric", field)
	}
	if doc >= r.numDocs {
		return 0, false, fmt.Errorf("segment: doc %d out of range (%d documents)", doc, r.numDocs)
	}
	c := &r.nums[field]
	s, e, ok := c.span(doc)
	if !ok {
		return 0, false, corruptf(r.id, SuffixNumbers, "field %d doc %d: bad value bounds", field, doc)
	}
	if s == e {
		return 0, false, nil
	}
	return binary.LittleEndian.Uint64(c.vals[8*s:]), true, nil
}

// Document rebuilds doc as a *schema.Document from the store and the
// columns (tests use it as an oracle; no production path calls it):
// strings and sparse vectors come from the store, numbers, dense vectors
// and the primary key from their columns. The strings and sparse vectors
// of fields that are not stored come back empty from a segment of the
// current store format, which does not keep them; a legacy (version 1)
// store still returns them.
func (r *Reader) Document(doc uint32) (*schema.Document, error) {
	rec, err := r.store.record(doc)
	if err != nil {
		return nil, err
	}
	out := &schema.Document{Fields: make([]schema.Values, len(r.schema.Fields))}
	if out.Stored, err = r.store.parseRecord(rec, out.Fields, r.schema); err != nil {
		return nil, err
	}
	for i := range r.schema.Fields {
		f := &r.schema.Fields[i]
		switch {
		case r.nums[i].ok:
			raw, err := r.Numbers(i, doc)
			if err != nil {
				return nil, err
			}
			setNumbers(f, &out.Fields[i], raw)
		case r.dense[i] != nil:
			v, ok, err := r.DenseVector(i, doc)
			if err != nil {
				return nil, err
			}
			if ok {
				out.Fields[i].Dense = v
			}
		}
	}
	if r.pk.has {
		if out.PrimaryKey, err = r.PrimaryKey(doc); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// setNumbers converts raw column values back to a field's typed values.
func setNumbers(f *schema.Field, v *schema.Values, raw []uint64) {
	if len(raw) == 0 {
		return
	}
	switch f.Type {
	case schema.U64:
		v.U64 = raw
	case schema.I64:
		v.I64 = make([]int64, len(raw))
		for i, x := range raw {
			v.I64[i] = int64(x)
		}
	case schema.F64:
		v.F64 = make([]float64, len(raw))
		for i, x := range raw {
			v.F64[i] = math.Float64frombits(x)
		}
	}
}
