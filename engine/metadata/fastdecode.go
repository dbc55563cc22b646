package metadata

import (
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// decodeFast reads the common shape of a metadata.json in one pass over
// its bytes and returns ok=false for anything else, leaving that text to
// the reference decoder (strictjson, then encoding/json), which accepts or
// refuses it with its usual errors. It declines whatever the reference
// would refuse (a null other than a list, a member given twice, a member
// it does not know, a number out of range or not an integer, text after
// the object, invalid UTF-8), and also what it merely does not handle
// (escapes in strings outside the schema, unknown members, integers with
// signs, fractions or exponents where the reference would accept them), so an accepted text
// decodes to exactly what the reference decodes (FuzzDecodeFastMatches).
// Opening an index with many segments spent most of its time in the two
// passes of the reference decoder: the strict check of the text and the
// reflection-driven decode.
func decodeFast(data []byte) (*Metadata, bool) {
	d := fastDecoder{data: data}
	var m Metadata
	d.ws()
	if !d.metadata(&m) {
		return nil, false
	}
	d.ws()
	return &m, d.pos == len(d.data) // nothing after the object
}

// fastDecoder reads one metadata.json; every method returns false to
// decline the text. It scans the bytes itself: a tokenizer cost about
// 100 ns per token, most of the decode.
type fastDecoder struct {
	// data is the text.
	data []byte
	// pos is the offset of the next byte to read.
	pos int
	// files is scratch space for a list of FileInfo, copied out at its
	// exact length.
	files []segment.FileInfo
}

// A member is one member of an object the decoder reads: its name, and
// the reader of its value into the object's Go value.
type member[T any] struct {
	name string
	read func(d *fastDecoder, v *T) bool
}

// members are the members of one object, at most 64 (object records those
// read in a bitmask).
type members[T any] []member[T]

// names lists the members' names.
func (ms members[T]) names() []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.name
	}
	return out
}

// object reads an object whose members are all in ms, each at most once,
// into v.
func object[T any](d *fastDecoder, v *T, ms members[T]) bool {
	if !d.eat('{') {
		return false
	}
	var seen uint64
	for {
		name, ok := d.member(seen != 0)
		switch {
		case !ok:
			return false
		case name == nil:
			return true
		}
		i := index(ms, name)
		if i < 0 || seen&(1<<i) != 0 || !ms[i].read(d, v) {
			return false
		}
		seen |= 1 << i
	}
}

// index returns the position of the member called name in ms, -1 when
// there is none.
func index[T any](ms members[T], name []byte) int {
	for i, m := range ms {
		if string(name) == m.name {
			return i
		}
	}
	return -1
}

// member reads the next member name of an object and the colon after
// it (after is whether a member was read before: a comma comes first); at
// the closing brace, which it reads, it returns nil, true.
func (d *fastDecoder) member(after bool) ([]byte, bool) {
	d.ws()
	if d.eat('}') {
		return nil, true
	}
	if after {
		if !d.eat(',') {
			return nil, false
		}
		d.ws()
	}
	name, ok := d.str()
	if !ok || name == nil {
		return nil, false
	}
	d.ws()
	if !d.eat(':') {
		return nil, false
	}
	d.ws()
	return name, true
}

// list reads an array, calling elem for each element with the number of
// elements read before it, or a null (a nil list, as the reference reads
// it): isNull tells which.
func (d *fastDecoder) list(elem func(n int) bool) (isNull, ok bool) {
	if d.literal("null") {
		return true, true
	}
	if !d.eat('[') {
		return false, false
	}
	for n := 0; ; n++ {
		more, ok := d.more(n)
		if !more || !ok {
			return false, ok
		}
		if !elem(n) {
			return false, false
		}
	}
}

// listOf reads a list of T, each element with elem: nil for a null, an
// empty list for [].
func listOf[T any](d *fastDecoder, elem func(*T) bool) ([]T, bool) {
	out := []T{}
	isNull, ok := d.list(func(n int) bool {
		out = append(out, *new(T))
		return elem(&out[n])
	})
	if isNull || !ok {
		return nil, ok
	}
	return out, true
}

// more reports whether the array has another element (n elements were
// read), reading its closing bracket when it has none.
func (d *fastDecoder) more(n int) (more, ok bool) {
	d.ws()
	if d.eat(']') {
		return false, true
	}
	if n > 0 {
		if !d.eat(',') {
			return false, false
		}
		d.ws()
	}
	return true, true
}

// int reads a non-negative int (a negative one is declined: the
// reference reads it, and Validate refuses the fields that must not be
// negative).
func (d *fastDecoder) int() (int, bool) {
	v, ok := d.uint(1<<63 - 1)
	return int(v), ok
}

// int64 reads a non-negative int64.
func (d *fastDecoder) int64() (int64, bool) {
	v, ok := d.uint(1<<63 - 1)
	return int64(v), ok
}

// uint32 reads a uint32.
func (d *fastDecoder) uint32() (uint32, bool) {
	v, ok := d.uint(1<<32 - 1)
	return uint32(v), ok
}

// bool reads true or false.
func (d *fastDecoder) bool() (bool, bool) {
	if d.literal("true") {
		return true, true
	}
	return false, d.literal("false")
}

// id reads a segment ID (its hex string).
func (d *fastDecoder) id() (segid.ID, bool) {
	var id segid.ID
	s, ok := d.str()
	if !ok || id.UnmarshalText(s) != nil {
		return 0, false
	}
	return id, true
}

// metadataMembers are the members of a metadata.json.
var metadataMembers = members[Metadata]{
	{"version", func(d *fastDecoder, m *Metadata) (ok bool) { m.Version, ok = d.int(); return ok }},
	{"generation", func(d *fastDecoder, m *Metadata) (ok bool) { m.Generation, ok = d.uint(1<<64 - 1); return ok }},
	{"nextId", func(d *fastDecoder, m *Metadata) (ok bool) { m.NextID, ok = d.id(); return ok }},
	{"schema", (*fastDecoder).schema},
	{"segments", func(d *fastDecoder, m *Metadata) (ok bool) { m.Segments, ok = listOf(d, d.segment); return ok }},
	{"uid", func(d *fastDecoder, m *Metadata) bool { return d.string(&m.UID) }},
}

func (d *fastDecoder) metadata(m *Metadata) bool { return object(d, m, metadataMembers) }

// schema reads the schema object with Schema's own decoder, as the
// reference does.
func (d *fastDecoder) schema(m *Metadata) bool {
	start := d.pos
	if !d.skipValue(0) || d.data[start] != '{' {
		return false
	}
	m.Schema = new(schema.Schema)
	return m.Schema.UnmarshalJSON(d.data[start:d.pos]) == nil
}

// segmentMembers are the members of a segment.
var segmentMembers = members[Segment]{
	{"id", func(d *fastDecoder, s *Segment) (ok bool) { s.ID, ok = d.id(); return ok }},
	{"documents", func(d *fastDecoder, s *Segment) (ok bool) { s.Documents, ok = d.uint32(); return ok }},
	{"files", func(d *fastDecoder, s *Segment) (ok bool) { s.Files, ok = d.fileList(); return ok }},
	{"parts", func(d *fastDecoder, s *Segment) (ok bool) { s.Parts, ok = d.fileList(); return ok }},
	{"ivf", func(d *fastDecoder, s *Segment) (ok bool) { s.IVF, ok = listOf(d, d.ivf); return ok }},
	{"deletes", func(d *fastDecoder, s *Segment) bool { s.Deletes = new(Mask); return d.mask(s.Deletes) }},
	{"bpConverged", func(d *fastDecoder, s *Segment) (ok bool) { s.BPConverged, ok = d.bool(); return ok }},
	{"bpUnconvergedPasses", func(d *fastDecoder, s *Segment) (ok bool) { s.BPUnconvergedPasses, ok = d.int(); return ok }},
	{"seismic", func(d *fastDecoder, s *Segment) bool { s.Seismic = new(SeismicDebt); return d.seismic(s.Seismic) }},
}

func (d *fastDecoder) segment(s *Segment) bool { return object(d, s, segmentMembers) }

// fileList reads a list of FileInfo into the scratch list, and copies it
// out at its exact length.
func (d *fastDecoder) fileList() ([]segment.FileInfo, bool) {
	d.files = d.files[:0]
	isNull, ok := d.list(func(int) bool {
		d.files = append(d.files, segment.FileInfo{})
		return object(d, &d.files[len(d.files)-1], fileMembers)
	})
	if isNull || !ok {
		return nil, ok
	}
	return append([]segment.FileInfo{}, d.files...), true
}

// fileMembers are the members of a FileInfo.
var fileMembers = members[segment.FileInfo]{
	{"suffix", func(d *fastDecoder, f *segment.FileInfo) bool { s, ok := d.str(); f.Suffix = suffix(s); return ok }},
	{"size", func(d *fastDecoder, f *segment.FileInfo) (ok bool) { f.Size, ok = d.int64(); return ok }},
}

// knownSuffixes are the suffixes the engine writes, shared instead of
// allocating a string per file entry.
var knownSuffixes = append(segment.DataSuffixes(), segment.SuffixCompound, segment.SuffixIVF, segment.MaskSuffix)

// suffix returns s as a string, one of knownSuffixes when it is one.
func suffix(s []byte) string {
	for _, k := range knownSuffixes {
		if string(s) == k {
			return k
		}
	}
	return string(s)
}

// ivfMembers are the members of an IVFInfo.
var ivfMembers = members[segment.IVFInfo]{
	{"field", func(d *fastDecoder, f *segment.IVFInfo) bool { return d.string(&f.Field) }},
	{"runs", func(d *fastDecoder, f *segment.IVFInfo) (ok bool) { f.Runs, ok = d.int(); return ok }},
	{"vectors", func(d *fastDecoder, f *segment.IVFInfo) (ok bool) { f.Vectors, ok = d.uint32(); return ok }},
	{"models", func(d *fastDecoder, f *segment.IVFInfo) (ok bool) { f.Models, ok = listOf(d, d.string); return ok }},
	{"fragmented", func(d *fastDecoder, f *segment.IVFInfo) (ok bool) { f.Fragmented, ok = d.bool(); return ok }},
}

func (d *fastDecoder) ivf(f *segment.IVFInfo) bool { return object(d, f, ivfMembers) }

// string reads a string into s.
func (d *fastDecoder) string(s *string) bool {
	b, ok := d.str()
	if ok {
		*s = string(b)
	}
	return ok
}

// maskMembers are the members of a Mask.
var maskMembers = members[Mask]{
	{"id", func(d *fastDecoder, m *Mask) (ok bool) { m.ID, ok = d.id(); return ok }},
	{"deleted", func(d *fastDecoder, m *Mask) (ok bool) { m.Deleted, ok = d.uint32(); return ok }},
	{"size", func(d *fastDecoder, m *Mask) (ok bool) { m.Size, ok = d.int64(); return ok }},
}

func (d *fastDecoder) mask(m *Mask) bool { return object(d, m, maskMembers) }

// seismicMembers are the members of a SeismicDebt.
var seismicMembers = members[SeismicDebt]{
	{"pendingTerms", func(d *fastDecoder, s *SeismicDebt) (ok bool) { s.PendingTerms, ok = d.int(); return ok }},
	{"partialPasses", func(d *fastDecoder, s *SeismicDebt) (ok bool) { s.PartialPasses, ok = d.int(); return ok }},
	{"stalls", func(d *fastDecoder, s *SeismicDebt) (ok bool) { s.Stalls, ok = d.int(); return ok }},
}

func (d *fastDecoder) seismic(s *SeismicDebt) bool { return object(d, s, seismicMembers) }
