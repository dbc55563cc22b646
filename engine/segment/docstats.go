package segment

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
	d := r.dicts[field]
	it := &TermIterator{d: d}
	for it.Next() {
		e := it.c.e
		sizes := docsSectionSizes
		if d.legacyDocs {
			sizes = legacySectionSizes
		}
		a, b, ok := sizes(d.post[e.postOff:e.postOff+e.docsLen], e.df)
		if !ok {
			return 0, 0, corruptf(r.id, SuffixPostings, "field %d term %d: docs section does not parse", field, e.ord)
		}
		ids += int64(a)
		freqs += int64(b)
	}
	return ids, freqs, it.Err()
}
