package segment

import (
	"encoding/binary"
	"fmt"
)

// SectionSize is the size of one section of a segment's format: where the
// segment's bytes go (Reader.SectionSizes).
type SectionSize struct {
	// Part is the part (or file) holding the section: SuffixPostings,
	// SuffixTerms, ...
	Part string
	// Field is the schema field the section belongs to; "" for a section
	// of the whole part.
	Field string
	// Section names the section: "doc ids", "freqs", "skip", "positions",
	// "term suffixes", ...; "framing" is a part's header, footer and
	// directory, and whatever the other sections of the part leave over.
	Section string
	// Bytes is the section's size.
	Bytes int64
}

// SectionSizes breaks the segment's bytes down by part, field and
// section (doc.go describes each). The sizes add up to the segment's
// parts: every part ends with a "framing" entry holding its header,
// footer, directory and any byte no other section of the part claims.
// It reads every docs section's block headers and every dictionary
// entry, so it costs about a walk of the terms.
func (r *Reader) SectionSizes() ([]SectionSize, error) {
	var out []SectionSize
	for _, fi := range r.info.parts() {
		var (
			secs []SectionSize
			err  error
		)
		switch fi.Suffix {
		case SuffixPostings:
			secs, err = r.postingsSizes()
		case SuffixTerms:
			secs, err = r.termsSizes()
		case SuffixNorms:
			secs = r.normsSizes()
		case SuffixStore:
			secs = r.storeSizes()
		case SuffixPrimaryKey:
			secs = r.pkSizes()
		case SuffixNumbers:
			secs = r.numbersSizes()
		case SuffixForward:
			secs = r.forwardSizes()
		case SuffixBlockMax:
			secs, err = r.blockMaxSizes()
		}
		if err != nil {
			return nil, fmt.Errorf("segment %s: sizes of %s: %w", r.id, fi.Suffix, err)
		}
		var used int64
		for i := range secs {
			secs[i].Part = fi.Suffix
			used += secs[i].Bytes
		}
		if used > fi.Size {
			return nil, corruptf(r.id, fi.Suffix, "sections add up to %d bytes, part has %d", used, fi.Size)
		}
		out = append(out, secs...)
		out = append(out, SectionSize{Part: fi.Suffix, Section: "framing", Bytes: fi.Size - used})
	}
	return out, nil
}

// postingsSizes splits each field's postings region into skip tables,
// doc ids, frequencies and positions.
func (r *Reader) postingsSizes() ([]SectionSize, error) {
	var out []SectionSize
	for f, d := range r.dicts {
		if d == nil {
			continue
		}
		name := r.schema.Fields[f].Name
		var skip, ids, freqs, pos int64
		it := &TermIterator{d: d}
		for it.Next() {
			p, err := it.DocIDParts()
			if err != nil {
				return nil, err
			}
			skip += int64(p.Skip)
			ids += int64(p.IDs() - p.Skip)
			freqs += int64(p.Freqs)
			pos += int64(it.c.e.posLen)
		}
		if err := it.Err(); err != nil {
			return nil, err
		}
		out = append(out,
			SectionSize{Field: name, Section: "doc ids", Bytes: ids},
			SectionSize{Field: name, Section: "freqs", Bytes: freqs},
			SectionSize{Field: name, Section: "skip", Bytes: skip})
		if d.hasPos {
			out = append(out, SectionSize{Field: name, Section: "positions", Bytes: pos})
		}
	}
	return out, nil
}

// termsSizes splits each dictionary into its entries' parts (the term
// suffixes, the prefix and suffix lengths, docFreq and section lengths)
// and the block index.
func (r *Reader) termsSizes() ([]SectionSize, error) {
	var out []SectionSize
	uv := func(x uint64) int64 { return int64(len(binary.AppendUvarint(nil, x))) }
	for f, d := range r.dicts {
		if d == nil {
			continue
		}
		var suffixes, lens, stats int64
		it := &TermIterator{d: d}
		for it.Next() {
			e := it.c.e
			shared := 0
			if e.ord%d.blockSize != 0 {
				for shared < len(it.prev) && shared < len(it.term) && it.prev[shared] == it.term[shared] {
					shared++
				}
			}
			suffixes += int64(len(it.term) - shared)
			lens += uv(uint64(shared)) + uv(uint64(len(it.term)-shared))
			stats += uv(uint64(e.df)) + uv(e.docsLen)
			if d.hasPos {
				stats += uv(e.posLen)
			}
		}
		if err := it.Err(); err != nil {
			return nil, err
		}
		name := r.schema.Fields[f].Name
		out = append(out,
			SectionSize{Field: name, Section: "term suffixes", Bytes: suffixes},
			SectionSize{Field: name, Section: "prefix and suffix lengths", Bytes: lens},
			SectionSize{Field: name, Section: "docFreq and section lengths", Bytes: stats},
			SectionSize{Field: name, Section: "block index", Bytes: int64(len(d.index))})
	}
	return out, nil
}

// normsSizes is each tokenized field's column of lengths.
func (r *Reader) normsSizes() []SectionSize {
	var out []SectionSize
	for f, c := range r.norms {
		if c.width > 0 {
			out = append(out, SectionSize{Field: r.schema.Fields[f].Name, Section: "lengths", Bytes: int64(len(c.data))})
		}
	}
	return out
}

// storeSizes is the compressed blocks and the block index.
func (r *Reader) storeSizes() []SectionSize {
	var blocks int64
	for b := range r.store.numBlocks {
		blocks += int64(binary.LittleEndian.Uint32(r.store.index[uint64(b)*storeIndexEntry+12:]))
	}
	return []SectionSize{
		{Section: "compressed blocks", Bytes: blocks},
		{Section: "block index", Bytes: int64(len(r.store.index))},
	}
}

// pkSizes is the key bytes and their offset table.
func (r *Reader) pkSizes() []SectionSize {
	if !r.pk.has {
		return nil
	}
	return []SectionSize{
		{Section: "keys", Bytes: int64(len(r.pk.data))},
		{Section: "offset table", Bytes: int64(len(r.pk.offs.b))},
	}
}

// numbersSizes is each numeric field's values and count table.
func (r *Reader) numbersSizes() []SectionSize {
	return r.columnSizes("values", "count table", len(r.nums), func(f int) (bool, int, int) {
		return r.nums[f].ok, len(r.nums[f].vals), len(r.nums[f].offs.b)
	})
}

// forwardSizes is each reordered field's term lists and offset table.
func (r *Reader) forwardSizes() []SectionSize {
	return r.columnSizes("term lists", "offset table", len(r.fwds), func(f int) (bool, int, int) {
		return r.fwds[f].ok, len(r.fwds[f].data), len(r.fwds[f].offs.b)
	})
}

// columnSizes lists, for each of the n fields whose column the part
// holds, the column's data (as section) and its table of offsets (as
// table); col returns whether field f has a column and the sizes of both.
func (r *Reader) columnSizes(section, table string, n int, col func(f int) (ok bool, data, offsets int)) []SectionSize {
	var out []SectionSize
	for f := range n {
		if ok, data, offsets := col(f); ok {
			name := r.schema.Fields[f].Name
			out = append(out, SectionSize{Field: name, Section: section, Bytes: int64(data)},
				SectionSize{Field: name, Section: table, Bytes: int64(offsets)})
		}
	}
	return out
}

// blockMaxSizes splits each field's block-max records into their block
// entries (with the record headers), their data (the postings copied by
// block) and their superblock tables, plus the offset table.
func (r *Reader) blockMaxSizes() ([]SectionSize, error) {
	var out []SectionSize
	for f, bf := range r.bmax {
		if bf == nil {
			continue
		}
		df := func(uint32) uint32 { return 0 }
		if d := r.dicts[f]; d != nil {
			dfs := make([]uint32, 0, d.numTerms)
			it := &TermIterator{d: d}
			for it.Next() {
				dfs = append(dfs, it.DocFreq())
			}
			if err := it.Err(); err != nil {
				return nil, err
			}
			df = func(o uint32) uint32 { return dfs[o] }
		}
		var entries, data, supers int64
		for o := range bf.numTerms {
			rec, err := bf.record(r.id, o)
			if err != nil {
				return nil, err
			}
			t, err := parseBlockTerm(rec, bf.bmLayout, df(o), r.numDocs, r.id)
			if err != nil {
				return nil, err
			}
			data += int64(len(t.data))
			supers += int64(len(t.supers))
			entries += int64(len(rec) - len(t.data) - len(t.supers))
		}
		name := r.schema.Fields[f].Name
		out = append(out,
			SectionSize{Field: name, Section: "block entries", Bytes: entries},
			SectionSize{Field: name, Section: "block postings", Bytes: data},
			SectionSize{Field: name, Section: "superblocks", Bytes: supers},
			SectionSize{Field: name, Section: "offset table", Bytes: int64(len(bf.table))})
	}
	return out, nil
}
