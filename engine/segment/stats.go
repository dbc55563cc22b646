package segment

import (
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// fieldStat is one field's statistics.
type fieldStat struct {
	totalLen uint64
	docsWith uint32
	numTerms uint32
}

// writeRowStats writes the rowstats file; its payload is only the
// directory: numDocs, nFields (every schema field), nFields × (totalLength,
// docsWithField, numTerms).
func (b *Builder) writeRowStats(w *fileWriter) {
	w.beginDirectory()
	w.uvarint(uint64(b.numDocs))
	w.uvarint(uint64(len(b.fields)))
	for i := range b.fields {
		var st fieldStat
		if ix := b.fields[i].index; ix != nil {
			st = fieldStat{totalLen: ix.totalLen, docsWith: ix.docsWith, numTerms: uint32(len(ix.terms))}
		}
		w.uvarint(st.totalLen)
		w.uvarint(uint64(st.docsWith))
		w.uvarint(uint64(st.numTerms))
	}
}

func openRowStats(id segid.ID, s *schema.Schema, payload []byte, numDocs uint32) ([]fieldStat, error) {
	dir, err := splitDirectory(payload, id, SuffixRowStats)
	if err != nil {
		return nil, err
	}
	d := decoder{b: dir}
	n := d.uvarint()
	nf := d.uvarint()
	if d.err == nil && (n != uint64(numDocs) || nf != uint64(len(s.Fields))) {
		return nil, corruptf(id, SuffixRowStats, "%d documents and %d fields, want %d and %d", n, nf, numDocs, len(s.Fields))
	}
	stats := make([]fieldStat, len(s.Fields))
	for i := range stats {
		stats[i] = fieldStat{totalLen: d.uvarint(), docsWith: d.u32v(), numTerms: d.u32v()}
		if stats[i].docsWith > numDocs {
			d.fail("field %d: %d documents with the field", i, stats[i].docsWith)
		}
	}
	d.done()
	if d.err != nil {
		return nil, corruptf(id, SuffixRowStats, "directory: %v", d.err)
	}
	return stats, nil
}
