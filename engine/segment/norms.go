package segment

import (
	"encoding/binary"

	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// writeNorms writes the norms file: per tokenized indexed field the field
// length of every document at a fixed width (1, 2 or 4 bytes LE), then the
// directory: numDocs, nFields, nFields × (ord, width, offset).
func (b *Builder) writeNorms(w *fileWriter) {
	type entry struct{ ord, width, off uint64 }
	var entries []entry
	for i := range b.fields {
		ix := b.fields[i].index
		if ix == nil || !ix.tokenized {
			continue
		}
		var maxNorm uint32
		for _, n := range ix.norms {
			maxNorm = max(maxNorm, n)
		}
		width := normWidth(maxNorm)
		entries = append(entries, entry{uint64(i), uint64(width), w.offset()})
		buf := make([]byte, 0, 4096)
		for _, n := range ix.norms {
			switch width {
			case 1:
				buf = append(buf, byte(n))
			case 2:
				buf = binary.LittleEndian.AppendUint16(buf, uint16(n))
			default:
				buf = binary.LittleEndian.AppendUint32(buf, n)
			}
			if len(buf) >= 4092 {
				w.write(buf)
				buf = buf[:0]
			}
		}
		w.write(buf)
	}
	dir := make([][]uint64, len(entries))
	for i, e := range entries {
		dir[i] = []uint64{e.ord, e.width, e.off}
	}
	w.entryDirectory(b.numDocs, dir)
}

func normWidth(max uint32) int {
	switch {
	case max <= 0xff:
		return 1
	case max <= 0xffff:
		return 2
	}
	return 4
}

// normCol is one field's norms.
type normCol struct {
	width int
	data  []byte
}

func (c normCol) at(doc uint32) uint32 {
	switch c.width {
	case 1:
		return uint32(c.data[doc])
	case 2:
		return uint32(binary.LittleEndian.Uint16(c.data[2*int(doc):]))
	case 4:
		return binary.LittleEndian.Uint32(c.data[4*int(doc):])
	}
	return 0
}

func openNorms(id segid.ID, s *schema.Schema, payload []byte, numDocs uint32) ([]normCol, error) {
	want := func(i int) bool { return s.Fields[i].IsTokenized() && s.Fields[i].IsIndexed() }
	return fieldEntries(id, SuffixNorms, payload, numDocs, nil, want, len(s.Fields), func(d *decoder, ord int) (normCol, error) {
		width := d.uvarint()
		off := d.uvarint()
		if d.err != nil {
			return normCol{}, nil
		}
		if width != 1 && width != 2 && width != 4 {
			return normCol{}, corruptf(id, SuffixNorms, "field %d: norm width %d", ord, width)
		}
		data, ok := subslice(payload, off, width*uint64(numDocs))
		if !ok {
			return normCol{}, corruptf(id, SuffixNorms, "field %d: norms outside payload", ord)
		}
		return normCol{width: int(width), data: data}, nil
	})
}
