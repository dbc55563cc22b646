package segment

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// rewriteBlockMax returns r's bmp file written again in format version
// version with record offsets of width bytes; a version 2 or 3 directory
// records dirWidth as the width (equal to width unless a test lies).
// Below version 4 the text and exact fields' records are encoded again
// without superblock tables, below version 3 without mix codes either.
func rewriteBlockMax(t *testing.T, r *Reader, version uint32, width, dirWidth int) []byte {
	t.Helper()
	var payload, dir []byte
	nFields := 0
	for ord, f := range r.bmax {
		if f == nil {
			continue
		}
		records, offs := f.records, make([]uint64, f.numTerms+1)
		for i := range offs {
			offs[i] = f.offset(uint32(i))
		}
		if version < superVersion && f.kind != bmSparse {
			mix := f.mix
			if version < mixBlockMaxVersion {
				mix = mixRef{}
			}
			records, offs = recordsIn(t, r, ord, f.kind, mix)
		}
		recOff := uint64(len(payload))
		payload = append(payload, records...)
		tableOff := uint64(len(payload))
		for _, o := range offs {
			if width == 4 {
				payload = binary.LittleEndian.AppendUint32(payload, uint32(o))
			} else {
				payload = binary.LittleEndian.AppendUint64(payload, o)
			}
		}
		dir = binary.AppendUvarint(dir, uint64(ord))
		dir = append(dir, f.kind)
		dir = binary.AppendUvarint(dir, uint64(f.numTerms))
		dir = binary.AppendUvarint(dir, recOff)
		dir = binary.AppendUvarint(dir, uint64(len(records)))
		dir = binary.AppendUvarint(dir, tableOff)
		if version != legacyBlockMaxVersion {
			dir = append(dir, byte(dirWidth))
		}
		if version >= mixBlockMaxVersion && f.kind == bmTokenized {
			dir = binary.LittleEndian.AppendUint64(dir, math.Float64bits(f.mix.a))
			dir = binary.LittleEndian.AppendUint64(dir, math.Float64bits(f.mix.b))
		}
		nFields++
	}
	dirOff := uint64(len(payload))
	payload = binary.AppendUvarint(payload, uint64(r.numDocs))
	payload = binary.AppendUvarint(payload, BlockShift)
	payload = binary.AppendUvarint(payload, uint64(nFields))
	payload = append(payload, dir...)
	payload = binary.LittleEndian.AppendUint64(payload, dirOff)
	data := append([]byte(nil), r.file(SuffixBlockMax).data[:headerSize]...)
	binary.LittleEndian.PutUint32(data[12:16], version)
	data = append(data, payload...)
	data = append(data, r.file(SuffixBlockMax).data[len(r.file(SuffixBlockMax).data)-footerSize:]...)
	return fixFrame(data)
}

// recordsIn encodes the records of text or exact field ord again from its
// postings without superblock tables (format version 3) and with the mix
// codes of mix (none when zero: version 2), returning them and their
// offsets.
func recordsIn(t *testing.T, r *Reader, ord int, kind byte, mix mixRef) ([]byte, []uint64) {
	t.Helper()
	it, err := r.Terms(ord)
	if err != nil {
		t.Fatal(err)
	}
	var recs []byte
	var offs []uint64
	e := bmEncoder{mix: mix, noSupers: true}
	for it.Next() {
		p, err := r.Postings(ord, it.Term())
		if err != nil {
			t.Fatal(err)
		}
		var ps []bmPosting
		for p.Next() {
			ps = append(ps, bmPosting{doc: p.Doc(), tf: p.Freq()})
		}
		offs = append(offs, uint64(len(recs)))
		recs = e.encode(recs, kind, ps, func(d uint32) uint32 { return r.FieldLength(ord, d) })
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	return recs, append(offs, uint64(len(recs)))
}

// withBlockMax writes data as the bmp file of the segment info describes
// (separate files) and opens it.
func withBlockMax(t *testing.T, fs vfs.FS, r *Reader, info Info, data []byte) (Info, *Reader, error) {
	t.Helper()
	info.Files = append([]FileInfo(nil), info.Files...)
	for i := range info.Files {
		if info.Files[i].Suffix == SuffixBlockMax {
			info.Files[i].Size = int64(len(data))
		}
	}
	writeFile(t, fs, "idx/"+segid.FileName(info.ID, SuffixBlockMax), data)
	r2, err := Open(fs, "idx", r.schema, info)
	return info, r2, err
}

// TestBlockMaxOffsetsAreFourBytes checks that a new segment's bmp file is
// format version 4 with 4-byte record offsets, numTerms+1 per field.
func TestBlockMaxOffsetsAreFourBytes(t *testing.T) {
	r, _, s, _ := blockMaxSegment(t)
	if v := fileVersion(r.file(SuffixBlockMax).data); v != superVersion {
		t.Fatalf("bmp file version %d, want %d", v, superVersion)
	}
	n := 0
	for ord, f := range r.bmax {
		if f == nil {
			continue
		}
		n++
		if f.width != 4 || len(f.table) != 4*(int(f.numTerms)+1) {
			t.Errorf("field %s: offset width %d, table of %d bytes for %d terms", s.Fields[ord].Name, f.width, len(f.table), f.numTerms)
		}
	}
	if n == 0 {
		t.Fatal("no field has block maxima")
	}
}

// TestReadsVersion1BlockMax rewrites a segment's bmp file in format
// version 1 (8-byte offsets, no width in the directory, no mix codes): it
// opens, validates and serves the same records; Validate still finds a
// damaged offset; a merge rewrites it in the current version.
func TestReadsVersion1BlockMax(t *testing.T) {
	r, fs, s, info := blockMaxSegment(t)
	v1 := rewriteBlockMax(t, r, legacyBlockMaxVersion, 8, 0)
	_, r1, err := withBlockMax(t, fs, r, info, v1)
	if err != nil {
		t.Fatalf("open with a version 1 bmp file: %v", err)
	}
	defer r1.Close()
	if err := r1.Validate(context.Background()); err != nil {
		t.Fatalf("version 1 bmp file does not validate: %v", err)
	}
	for ord, f := range r.bmax {
		if f == nil {
			continue
		}
		f1 := r1.bmax[ord]
		if f1.width != 8 {
			t.Fatalf("field %d: version 1 offsets read at width %d", ord, f1.width)
		}
		if f1.mix.on() {
			t.Fatalf("field %d: version 1 read with mix codes", ord)
		}
		if f.kind != bmTokenized {
			for o := range f.numTerms {
				a, err1 := f.record(r.id, o)
				b, err2 := f1.record(r1.id, o)
				if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
					t.Fatalf("field %d term %d: records differ (%v, %v)", ord, o, err1, err2)
				}
			}
		}
	}
	// Damage term 1's start in the first field's table: Validate must see it.
	f := r1.bmax[fieldOrd(s, "title")]
	off := headerSize + uintptrOffset(r1.file(SuffixBlockMax).payload, f.table) + 8
	bad := append([]byte(nil), v1...)
	bad[off]++
	if _, r2, err := withBlockMax(t, fs, r, info, fixFrame(bad)); err == nil {
		wantCorruption(t, r2.Validate(context.Background()), "version 1 offset damaged")
		r2.Close()
	} else {
		wantCorruption(t, err, "version 1 offset damaged")
	}
	mergeToCurrent(t, fs, s, r1, 0x91)
}

// TestBlockMaxOffsetDamageDetected checks the offsets of versions 2 and
// on: a width other than the table's, or a damaged offset, is corruption.
func TestBlockMaxOffsetDamageDetected(t *testing.T) {
	r, fs, s, info := blockMaxSegment(t)
	for _, w := range []int{0, 3, 8} {
		_, r2, err := withBlockMax(t, fs, r, info, rewriteBlockMax(t, r, superVersion, 4, w))
		if err == nil {
			err = r2.Validate(context.Background())
			r2.Close()
		}
		wantCorruption(t, err, "directory width lies")
	}
	orig := rewriteBlockMax(t, r, superVersion, 4, 4)
	if !bytes.Equal(orig, r.file(SuffixBlockMax).data) {
		t.Fatal("rewriting the bmp file in the current version does not give the written bytes")
	}
	f := r.bmax[fieldOrd(s, "body")]
	for _, term := range []uint32{0, 1, f.numTerms / 2, f.numTerms} {
		bad := append([]byte(nil), orig...)
		bad[headerSize+uintptrOffset(r.file(SuffixBlockMax).payload, f.table)+4*int(term)] ^= 0x01
		_, r2, err := withBlockMax(t, fs, r, info, fixFrame(bad))
		if err == nil {
			err = r2.Validate(context.Background())
			r2.Close()
		}
		wantCorruption(t, err, "offset damaged")
	}
}

// TestReadsVersion2BlockMax rewrites a segment's bmp file in format
// version 2 (no mix codes): it opens and validates, its tokenized records
// have no mix reference, and a merge rewrites it in the current version
// with one.
func TestReadsVersion2BlockMax(t *testing.T) {
	r, fs, s, info := blockMaxSegment(t)
	r2 := openAtVersion(t, fs, r, info, mixBlockMaxVersion-1)
	body := fieldOrd(s, "body")
	bt, err := r2.BlockMaxTerm(body, "the")
	if err != nil || bt == nil {
		t.Fatalf("term the: %v", err)
	}
	if _, _, ok := bt.MixRef(); ok {
		t.Fatal("version 2 record read with mix codes")
	}
	checkTermBlocks(t, r2, &s.Fields[body], body, "the")
	rm := mergeToCurrent(t, fs, s, r2, 0x92)
	if rm.bmax[body].mix != r.bmax[body].mix {
		t.Fatalf("merged mix reference %+v, the segment's own %+v", rm.bmax[body].mix, r.bmax[body].mix)
	}
}

// TestBlockMaxMixReferenceDamageDetected: a tokenized field's mix
// reference that is not a positive finite number, or that differs from
// the one its codes were computed with, is corruption.
func TestBlockMaxMixReferenceDamageDetected(t *testing.T) {
	r, fs, s, info := blockMaxSegment(t)
	body := fieldOrd(s, "body")
	saved := r.bmax[body].mix
	defer func() { r.bmax[body].mix = saved }()
	for _, mix := range []mixRef{{a: 0.3, b: 0}, {a: 0.3, b: math.NaN()}, {a: -1, b: 0.01}, {a: 0.3, b: math.Inf(1)}, {a: saved.a, b: saved.b * 2}} {
		r.bmax[body].mix = mix
		data := rewriteBlockMax(t, r, superVersion, 4, 4)
		_, r2, err := withBlockMax(t, fs, r, info, data)
		if err == nil {
			err = r2.Validate(context.Background())
			r2.Close()
		}
		wantCorruption(t, err, "mix reference damaged")
	}
}

// openAtVersion opens r with its bmp file rewritten in format version
// version (4-byte offsets), failing unless it opens and validates; the
// reader is closed at the test's end.
func openAtVersion(t *testing.T, fs vfs.FS, r *Reader, info Info, version uint32) *Reader {
	t.Helper()
	_, rv, err := withBlockMax(t, fs, r, info, rewriteBlockMax(t, r, version, 4, 4))
	if err != nil {
		t.Fatalf("open with a version %d bmp file: %v", version, err)
	}
	t.Cleanup(func() { rv.Close() })
	if err := rv.Validate(context.Background()); err != nil {
		t.Fatalf("version %d bmp file does not validate: %v", version, err)
	}
	return rv
}

// mergeToCurrent merges src alone into segment id and opens the output,
// failing unless its bmp file is in the current format version and
// validates.
func mergeToCurrent(t *testing.T, fs vfs.FS, s *schema.Schema, src *Reader, id segid.ID) *Reader {
	t.Helper()
	merged, err := Merge(context.Background(), fs, "idx", id, s, []*Reader{src}, Concat([]*Reader{src}, nil))
	if err != nil {
		t.Fatal(err)
	}
	rm, err := Open(fs, "idx", s, merged)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rm.Close() })
	if v := fileVersion(rm.file(SuffixBlockMax).data); v != superVersion {
		t.Fatalf("merge of a version %d bmp file wrote version %d", fileVersion(src.file(SuffixBlockMax).data), v)
	}
	if err := rm.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rm
}
