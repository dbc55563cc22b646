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

// The members of each object, by position: member reports the position
// of the member it reads.
var (
	metadataMembers = []string{"version", "generation", "nextId", "schema", "segments"}
	segmentMembers  = []string{"id", "documents", "files", "parts", "ivf", "deletes", "bpConverged", "bpUnconvergedPasses", "seismic"}
	fileMembers     = []string{"suffix", "size"}
	ivfMembers      = []string{"field", "runs", "vectors", "models", "fragmented"}
	maskMembers     = []string{"id", "deleted", "size"}
	seismicMembers  = []string{"pendingTerms", "partialPasses", "stalls"}
)

// object reads an object whose members are all in names, each at most
// once, calling read with the position of each member to read its value.
func (d *fastDecoder) object(names []string, read func(member int) bool) bool {
	if !d.eat('{') {
		return false
	}
	var seen uint64
	for {
		i, ok := d.member(names, &seen)
		switch {
		case !ok:
			return false
		case i < 0:
			return true
		case !read(i):
			return false
		}
	}
}

// member reads the next member name of an object whose members are all in
// names, each at most once (seen records those read, and that a member was
// read), and returns its position; at the closing brace, which it reads,
// it returns -1, true.
func (d *fastDecoder) member(names []string, seen *uint64) (int, bool) {
	d.ws()
	if d.eat('}') {
		return -1, true
	}
	if *seen != 0 {
		if !d.eat(',') {
			return 0, false
		}
		d.ws()
	}
	name, ok := d.str()
	if !ok {
		return 0, false
	}
	d.ws()
	if !d.eat(':') {
		return 0, false
	}
	d.ws()
	for i, n := range names {
		if string(name) == n {
			if *seen&(1<<i) != 0 {
				return 0, false
			}
			*seen |= 1 << i
			return i, true
		}
	}
	return 0, false
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

func (d *fastDecoder) metadata(m *Metadata) bool {
	return d.object(metadataMembers, func(member int) (ok bool) {
		switch member {
		case 0:
			m.Version, ok = d.int()
		case 1:
			m.Generation, ok = d.uint(1<<64 - 1)
		case 2:
			m.NextID, ok = d.id()
		case 3:
			ok = d.schema(m)
		case 4:
			m.Segments, ok = listOf(d, d.segment)
		}
		return ok
	})
}

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

func (d *fastDecoder) segment(s *Segment) bool {
	return d.object(segmentMembers, func(member int) (ok bool) {
		switch member {
		case 0:
			s.ID, ok = d.id()
		case 1:
			s.Documents, ok = d.uint32()
		case 2:
			s.Files, ok = d.fileList()
		case 3:
			s.Parts, ok = d.fileList()
		case 4:
			s.IVF, ok = listOf(d, d.ivf)
		case 5:
			s.Deletes = new(Mask)
			ok = d.mask(s.Deletes)
		case 6:
			s.BPConverged, ok = d.bool()
		case 7:
			s.BPUnconvergedPasses, ok = d.int()
		case 8:
			s.Seismic = new(SeismicDebt)
			ok = d.seismic(s.Seismic)
		}
		return ok
	})
}

// fileList reads a list of FileInfo into the scratch list, and copies it
// out at its exact length.
func (d *fastDecoder) fileList() ([]segment.FileInfo, bool) {
	d.files = d.files[:0]
	isNull, ok := d.list(func(int) bool {
		d.files = append(d.files, segment.FileInfo{})
		return d.file(&d.files[len(d.files)-1])
	})
	if isNull || !ok {
		return nil, ok
	}
	return append([]segment.FileInfo{}, d.files...), true
}

func (d *fastDecoder) file(f *segment.FileInfo) bool {
	return d.object(fileMembers, func(member int) (ok bool) {
		switch member {
		case 0:
			var s []byte
			s, ok = d.str()
			f.Suffix = suffix(s)
		case 1:
			f.Size, ok = d.int64()
		}
		return ok
	})
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

func (d *fastDecoder) ivf(f *segment.IVFInfo) bool {
	return d.object(ivfMembers, func(member int) (ok bool) {
		switch member {
		case 0:
			var s []byte
			s, ok = d.str()
			f.Field = string(s)
		case 1:
			f.Runs, ok = d.int()
		case 2:
			f.Vectors, ok = d.uint32()
		case 3:
			f.Models, ok = listOf(d, d.string)
		case 4:
			f.Fragmented, ok = d.bool()
		}
		return ok
	})
}

// string reads a string into s.
func (d *fastDecoder) string(s *string) bool {
	b, ok := d.str()
	if ok {
		*s = string(b)
	}
	return ok
}

func (d *fastDecoder) mask(m *Mask) bool {
	return d.object(maskMembers, func(member int) (ok bool) {
		switch member {
		case 0:
			m.ID, ok = d.id()
		case 1:
			m.Deleted, ok = d.uint32()
		case 2:
			m.Size, ok = d.int64()
		}
		return ok
	})
}

func (d *fastDecoder) seismic(s *SeismicDebt) bool {
	return d.object(seismicMembers, func(member int) (ok bool) {
		switch member {
		case 0:
			s.PendingTerms, ok = d.int()
		case 1:
			s.PartialPasses, ok = d.int()
		case 2:
			s.Stalls, ok = d.int()
		}
		return ok
	})
}
