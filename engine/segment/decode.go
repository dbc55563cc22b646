package segment

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/summadev/summa/engine/segid"
)

// decoder reads a bounds-checked sequence of varints, fixed-width integers
// and byte strings. The first failure sticks in err; later reads return
// zero values, so callers check err once after a group of reads.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

// remaining returns the number of unread bytes.
func (d *decoder) remaining() int { return len(d.b) - d.off }

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, k := binary.Uvarint(d.b[d.off:])
	if k <= 0 {
		d.fail("bad varint at offset %d", d.off)
		return 0
	}
	d.off += k
	return x
}

// u32v reads a uvarint that must fit in 32 bits.
func (d *decoder) u32v() uint32 {
	x := d.uvarint()
	if x > 1<<32-1 {
		d.fail("value %d overflows 32 bits", x)
		return 0
	}
	return uint32(x)
}

// intv reads a uvarint used as a length or offset into a buffer of at most
// limit bytes.
func (d *decoder) intv(limit int) int {
	x := d.uvarint()
	if x > uint64(limit) {
		d.fail("value %d exceeds limit %d", x, limit)
		return 0
	}
	return int(x)
}

func (d *decoder) u8() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail("truncated at offset %d", d.off)
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *decoder) u32() uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.off < 4 {
		d.fail("truncated at offset %d", d.off)
		return 0
	}
	x := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return x
}

// f64 returns the next 8 bytes as a little-endian float64.
func (d *decoder) f64() float64 {
	b := d.bytes(8)
	if d.err != nil || len(b) < 8 {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

// bytes returns the next n bytes (a sub-slice, not a copy).
func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.fail("%d bytes wanted at offset %d, %d left", n, d.off, len(d.b)-d.off)
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

// done fails unless every byte was consumed.
func (d *decoder) done() {
	if d.err == nil && d.off != len(d.b) {
		d.fail("%d trailing bytes", len(d.b)-d.off)
	}
}

// subslice returns b[off:off+n] when it lies inside b.
func subslice(b []byte, off, n uint64) ([]byte, bool) {
	if off > uint64(len(b)) || n > uint64(len(b))-off {
		return nil, false
	}
	return b[off : off+n], true
}

// offsetTable is a fixed-width (4 or 8 bytes) little-endian array of
// offsets; entry i of n+1 entries starts item i and entry n ends the data.
type offsetTable struct {
	b     []byte
	width int
	n     int // entries
}

func (t offsetTable) at(i int) uint64 {
	if t.width == 4 {
		return uint64(binary.LittleEndian.Uint32(t.b[i*4:]))
	}
	return binary.LittleEndian.Uint64(t.b[i*8:])
}

// span returns the [start, end) range of item i, checked against limit.
func (t offsetTable) span(i int, limit uint64) (uint64, uint64, bool) {
	if i < 0 || i+1 >= t.n {
		return 0, 0, false
	}
	s, e := t.at(i), t.at(i+1)
	if s > e || e > limit {
		return 0, 0, false
	}
	return s, e, true
}

// newOffsetTable checks that b holds n entries of width bytes.
func newOffsetTable(b []byte, width, n int) (offsetTable, bool) {
	if (width != 4 && width != 8) || n < 0 || len(b) != width*n {
		return offsetTable{}, false
	}
	return offsetTable{b: b, width: width, n: n}, true
}

// docOffsets cuts from payload at off the offset table of numDocs
// documents (numDocs+1 entries of width bytes), and checks it.
func docOffsets(payload []byte, off uint64, width int, numDocs uint32) (offsetTable, bool) {
	tb, ok := subslice(payload, off, uint64(width)*(uint64(numDocs)+1))
	if !ok {
		return offsetTable{}, false
	}
	return newOffsetTable(tb, width, int(numDocs)+1)
}

// offsetWidth returns 4 when max fits in 32 bits, else 8.
func offsetWidth(max uint64) int {
	if max <= 1<<32-1 {
		return 4
	}
	return 8
}

// writeOffsets writes offs as an offset table of the given width.
func writeOffsets(w *fileWriter, offs []uint64, width int) {
	var chunk [4096]byte
	n := 0
	for _, o := range offs {
		if n+width > len(chunk) {
			w.write(chunk[:n])
			n = 0
		}
		if width == 4 {
			binary.LittleEndian.PutUint32(chunk[n:], uint32(o))
		} else {
			binary.LittleEndian.PutUint64(chunk[n:], o)
		}
		n += width
	}
	w.write(chunk[:n])
}

// fieldSet parses a directory made of the common prologue (numDocs) and
// one field list (see readFieldList).
func fieldSet(id segid.ID, suffix string, payload []byte, numDocs uint32, want func(int) bool, nFields int,
	fn func(d *decoder, ord int) error) error {
	return fieldSetAfter(id, suffix, payload, numDocs, nil, want, nFields, fn)
}

// fieldSetAfter is fieldSet for a directory whose prologue goes on after
// numDocs: prologue, when not nil, reads the rest of it from d (whose b
// is the whole directory).
func fieldSetAfter(id segid.ID, suffix string, payload []byte, numDocs uint32, prologue func(d *decoder) error,
	want func(int) bool, nFields int, fn func(d *decoder, ord int) error) error {
	dir, err := splitDirectory(payload, id, suffix)
	if err != nil {
		return err
	}
	d := decoder{b: dir}
	if n := d.uvarint(); d.err == nil && n != uint64(numDocs) {
		return corruptf(id, suffix, "%d documents, segment has %d", n, numDocs)
	}
	if prologue != nil {
		if err := prologue(&d); err != nil {
			return err
		}
	}
	if err := readFieldList(&d, id, suffix, want, nFields, fn); err != nil {
		return err
	}
	d.done()
	if d.err != nil {
		return corruptf(id, suffix, "directory: %v", d.err)
	}
	return nil
}

// fieldEntries is fieldSetAfter for a directory whose field entries each
// decode to one T (a column, an index of the field): the result holds the
// entry of each field at its ordinal, the zero T for the fields without
// one (and for an entry decode leaves to the directory's own error).
func fieldEntries[T any](id segid.ID, suffix string, payload []byte, numDocs uint32, prologue func(d *decoder) error,
	want func(int) bool, nFields int, decode func(d *decoder, ord int) (T, error)) ([]T, error) {
	out := make([]T, nFields)
	err := fieldSetAfter(id, suffix, payload, numDocs, prologue, want, nFields, func(d *decoder, ord int) error {
		v, err := decode(d, ord)
		if err != nil {
			return err
		}
		out[ord] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readFieldList reads a count and that many field entries, calling fn for
// each with its ordinal; fn reads the rest of the entry from d. Ordinals
// must increase and be exactly the fields for which want is true.
func readFieldList(d *decoder, id segid.ID, suffix string, want func(int) bool, nFields int,
	fn func(d *decoder, ord int) error) error {
	count := d.intv(nFields)
	next := 0 // first ordinal not yet accounted for
	for i := 0; i < count && d.err == nil; i++ {
		ord := d.intv(nFields - 1)
		if d.err != nil {
			break
		}
		if ord < next || !want(ord) {
			return corruptf(id, suffix, "unexpected field %d in directory", ord)
		}
		for ; next < ord; next++ {
			if want(next) {
				return corruptf(id, suffix, "field %d missing from directory", next)
			}
		}
		next = ord + 1
		if err := fn(d, ord); err != nil {
			return err
		}
	}
	for ; next < nFields && d.err == nil; next++ {
		if want(next) {
			return corruptf(id, suffix, "field %d missing from directory", next)
		}
	}
	if d.err != nil {
		return corruptf(id, suffix, "directory: %v", d.err)
	}
	return nil
}
