package metadata

import (
	"bytes"
	"io"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// decodeFast reads the common shape of a metadata.json in one pass over
// its tokens and returns ok=false for anything else, leaving that text to
// the reference decoder (strictjson, then encoding/json), which accepts or
// refuses it with its usual errors. It declines whatever the reference
// would refuse (a null other than a list, a member given twice, a member
// it does not know, a number out of range or not an integer, text after
// the object, invalid UTF-8), and also what it merely does not handle
// (escapes in member names, unknown members, integers with signs or
// exponents where the reference would accept them), so an accepted text
// decodes to exactly what the reference decodes (FuzzDecodeFastMatches).
// Opening an index with many segments spent most of its time in the two
// passes of the reference decoder: the strict check of the text and the
// reflection-driven decode.
func decodeFast(data []byte) (*Metadata, bool) {
	d := fastDecoder{dec: jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true))}
	var m Metadata
	if !d.metadata(&m) {
		return nil, false
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return nil, false // text after the object
	}
	return &m, true
}

// fastDecoder reads one metadata.json; every method returns false to
// decline the text.
type fastDecoder struct {
	// dec tokenizes the text and checks its syntax.
	dec *jsontext.Decoder
}

// The members of each object, by position: object reports the position
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
// once, calling member with each one's position to read its value.
func (d *fastDecoder) object(names []string, member func(i int) bool) bool {
	if tok, err := d.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	var seen uint64
	for d.dec.PeekKind() == '"' {
		raw, err := d.dec.ReadValue()
		if err != nil || bytes.IndexByte(raw, '\\') >= 0 {
			return false
		}
		name := raw[1 : len(raw)-1]
		i := 0
		for i < len(names) && string(name) != names[i] {
			i++
		}
		if i == len(names) || seen&(1<<i) != 0 || !member(i) {
			return false
		}
		seen |= 1 << i
	}
	tok, err := d.dec.ReadToken()
	return err == nil && tok.Kind() == '}'
}

// array reads an array, calling open when it starts (not for null, a nil
// list as the reference reads it) and elem for each element.
func (d *fastDecoder) array(open func(), elem func() bool) bool {
	if d.dec.PeekKind() == 'n' {
		_, err := d.dec.ReadToken()
		return err == nil
	}
	if tok, err := d.dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return false
	}
	open()
	for d.dec.PeekKind() != ']' {
		if d.dec.PeekKind() == 0 || !elem() {
			return false
		}
	}
	_, err := d.dec.ReadToken()
	return err == nil
}

// uint reads a non-negative integer of at most max, written in plain
// decimal digits.
func (d *fastDecoder) uint(max uint64) (uint64, bool) {
	raw, err := d.dec.ReadValue()
	if err != nil || len(raw) == 0 || len(raw) > 20 || (raw[0] == '0' && len(raw) > 1) {
		return 0, false
	}
	var v uint64
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
		next := v*10 + uint64(c-'0')
		if next/10 != v {
			return 0, false // overflow
		}
		v = next
	}
	return v, v <= max
}

// int reads a non-negative int (a negative one is declined: the
// reference reads it, and Validate refuses the fields that must not be
// negative).
func (d *fastDecoder) int() (int, bool) {
	v, ok := d.uint(1<<63 - 1)
	return int(v), ok && uint64(int(v)) == v
}

// str reads a string without escapes.
func (d *fastDecoder) str() ([]byte, bool) {
	raw, err := d.dec.ReadValue()
	if err != nil || len(raw) < 2 || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		return nil, false
	}
	return raw[1 : len(raw)-1], true
}

// bool reads true or false.
func (d *fastDecoder) bool() (bool, bool) {
	tok, err := d.dec.ReadToken()
	if err != nil || (tok.Kind() != 't' && tok.Kind() != 'f') {
		return false, false
	}
	return tok.Bool(), true
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
	return d.object(metadataMembers, func(i int) bool {
		var ok bool
		switch i {
		case 0:
			m.Version, ok = d.int()
		case 1:
			m.Generation, ok = d.uint(1<<64 - 1)
		case 2:
			m.NextID, ok = d.id()
		case 3:
			if d.dec.PeekKind() != '{' {
				return false
			}
			raw, err := d.dec.ReadValue()
			if err != nil {
				return false
			}
			m.Schema = new(schema.Schema)
			ok = m.Schema.UnmarshalJSON(raw) == nil
		case 4:
			ok = d.array(func() { m.Segments = []Segment{} }, func() bool {
				m.Segments = append(m.Segments, Segment{})
				return d.segment(&m.Segments[len(m.Segments)-1])
			})
		}
		return ok
	})
}

func (d *fastDecoder) segment(s *Segment) bool {
	return d.object(segmentMembers, func(i int) bool {
		var ok bool
		switch i {
		case 0:
			s.ID, ok = d.id()
		case 1:
			var v uint64
			v, ok = d.uint(1<<32 - 1)
			s.Documents = uint32(v)
		case 2:
			s.Files, ok = d.files()
		case 3:
			s.Parts, ok = d.files()
		case 4:
			ok = d.array(func() { s.IVF = []segment.IVFInfo{} }, func() bool {
				s.IVF = append(s.IVF, segment.IVFInfo{})
				return d.ivf(&s.IVF[len(s.IVF)-1])
			})
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

// files reads a list of FileInfo.
func (d *fastDecoder) files() ([]segment.FileInfo, bool) {
	var out []segment.FileInfo
	ok := d.array(func() { out = []segment.FileInfo{} }, func() bool {
		var f segment.FileInfo
		ok := d.object(fileMembers, func(i int) bool {
			if i == 0 {
				s, ok := d.str()
				f.Suffix = suffix(s)
				return ok
			}
			var ok bool
			f.Size, ok = d.int64()
			return ok
		})
		out = append(out, f)
		return ok
	})
	return out, ok
}

// int64 reads a non-negative int64.
func (d *fastDecoder) int64() (int64, bool) {
	v, ok := d.uint(1<<63 - 1)
	return int64(v), ok
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
	return d.object(ivfMembers, func(i int) bool {
		var ok bool
		switch i {
		case 0:
			var s []byte
			s, ok = d.str()
			f.Field = string(s)
		case 1:
			f.Runs, ok = d.int()
		case 2:
			var v uint64
			v, ok = d.uint(1<<32 - 1)
			f.Vectors = uint32(v)
		case 3:
			ok = d.array(func() { f.Models = []string{} }, func() bool {
				s, ok := d.str()
				f.Models = append(f.Models, string(s))
				return ok
			})
		case 4:
			f.Fragmented, ok = d.bool()
		}
		return ok
	})
}

func (d *fastDecoder) mask(m *Mask) bool {
	return d.object(maskMembers, func(i int) bool {
		var ok bool
		switch i {
		case 0:
			m.ID, ok = d.id()
		case 1:
			var v uint64
			v, ok = d.uint(1<<32 - 1)
			m.Deleted = uint32(v)
		case 2:
			m.Size, ok = d.int64()
		}
		return ok
	})
}

func (d *fastDecoder) seismic(s *SeismicDebt) bool {
	return d.object(seismicMembers, func(i int) bool {
		var ok bool
		switch i {
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
