package segment

import "fmt"

// DocIDParts splits a docs section's bytes by how they are coded (doc.go,
// "post"). Every field is a byte count; IDs is their doc-id share.
type DocIDParts struct {
	// Skip is the skip table (two blocks or more).
	Skip uint64
	// Packed is the full blocks' doc ids coded as packed gaps (patched
	// frame of reference, headers and exceptions included).
	Packed uint64
	// Interp is the full blocks' doc ids coded by interpolation.
	Interp uint64
	// Tail is the tail's doc-id bits (a list below one block is all
	// tail), rounded up to bytes.
	Tail uint64
	// Legacy is the doc-id varints of a version 1 docs section.
	Legacy uint64
	// Freqs is the frequencies (packed blocks and gamma codes).
	Freqs uint64
}

// IDs returns the bytes that hold doc ids: every part but Freqs.
func (p DocIDParts) IDs() uint64 { return p.Skip + p.Packed + p.Interp + p.Tail + p.Legacy }

// DocSectionBytes splits DocPostingsBytes into the bytes holding doc-id
// gaps and the bytes holding frequencies: the doc-id part is what docid
// reordering shrinks.
func (r *Reader) DocSectionBytes() (ids, freqs int64, err error) {
	for f := range r.dicts {
		a, b, err := r.FieldDocSectionBytes(f)
		if err != nil {
			return 0, 0, err
		}
		ids, freqs = ids+a, freqs+b
	}
	return ids, freqs, nil
}

// FieldDocSectionBytes is DocSectionBytes for one field (zeros for a field
// without terms).
func (r *Reader) FieldDocSectionBytes(field int) (ids, freqs int64, err error) {
	if !r.fieldOK(field) || r.dicts[field] == nil {
		return 0, 0, nil
	}
	it := &TermIterator{d: r.dicts[field]}
	for it.Next() {
		p, err := it.DocIDParts()
		if err != nil {
			return 0, 0, fmt.Errorf("field %d: %w", field, err)
		}
		ids += int64(p.IDs())
		freqs += int64(p.Freqs)
	}
	return ids, freqs, it.Err()
}

// DocIDParts splits the current term's docs section by how its bytes are
// coded (Reader.DocSectionBytes sums them over a field's terms).
func (it *TermIterator) DocIDParts() (DocIDParts, error) {
	d, e := it.d, it.c.e
	parts := docsSectionParts
	if d.legacyDocs {
		parts = legacySectionParts
	}
	p, ok := parts(d.post[e.postOff:e.postOff+e.docsLen], e.df, d.numDocs)
	if !ok {
		return DocIDParts{}, corruptf(d.id, d.postSuffix, "term %d: docs section does not parse", e.ord)
	}
	return p, nil
}
