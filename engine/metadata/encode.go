package metadata

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// appendJSON appends m as compact JSON to dst: the bytes json.Marshal(m)
// returns, written in one pass without reflection (encoding a generation
// of 36 segments with json.Marshal was the largest CPU item of a
// one-document commit, before the metadata file's fsync can start).
// FuzzEncodeMatchesMarshal checks it against json.Marshal over random
// generations, every member set; a member added to one of the types fails
// that test until it is written here.
func (m *Metadata) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"version":`...)
	dst = strconv.AppendInt(dst, int64(m.Version), 10)
	dst = append(dst, `,"generation":`...)
	dst = strconv.AppendUint(dst, m.Generation, 10)
	dst = append(dst, `,"nextId":`...)
	dst = appendID(dst, m.NextID)
	dst = append(dst, `,"schema":`...)
	if m.Schema == nil {
		dst = append(dst, "null"...)
	} else {
		// The schema's own encoding (json.Marshal output: compact, HTML
		// escaped, which json.Marshal's compaction of a Marshaler's output
		// leaves as it is).
		s, err := m.Schema.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("metadata: encode schema: %w", err)
		}
		dst = append(dst, s...)
	}
	dst = append(dst, `,"segments":`...)
	if m.Segments == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range m.Segments {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = m.Segments[i].appendJSON(dst)
		}
		dst = append(dst, ']')
	}
	if m.UID != "" {
		// json.Marshal's own string encoding (a decoded uid may hold
		// anything).
		u, err := json.Marshal(m.UID)
		if err != nil {
			return nil, fmt.Errorf("metadata: encode uid: %w", err)
		}
		dst = append(append(dst, `,"uid":`...), u...)
	}
	return append(dst, '}'), nil
}

// appendJSON appends one segment entry: segment.Info's members, then the
// segment's own, omitempty members left out when empty.
func (s *Segment) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendID(dst, s.ID)
	dst = append(dst, `,"documents":`...)
	dst = strconv.AppendUint(dst, uint64(s.Documents), 10)
	dst = append(dst, `,"files":`...)
	dst = appendFiles(dst, s.Files)
	if len(s.Parts) > 0 {
		dst = append(dst, `,"parts":`...)
		dst = appendFiles(dst, s.Parts)
	}
	if len(s.IVF) > 0 {
		dst = append(dst, `,"ivf":[`...)
		for i := range s.IVF {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendIVF(dst, &s.IVF[i])
		}
		dst = append(dst, ']')
	}
	if d := s.Deletes; d != nil {
		dst = append(dst, `,"deletes":{"id":`...)
		dst = appendID(dst, d.ID)
		dst = append(dst, `,"deleted":`...)
		dst = strconv.AppendUint(dst, uint64(d.Deleted), 10)
		dst = append(dst, `,"size":`...)
		dst = strconv.AppendInt(dst, d.Size, 10)
		dst = append(dst, '}')
	}
	if s.BPConverged {
		dst = append(dst, `,"bpConverged":true`...)
	}
	if s.BPUnconvergedPasses != 0 {
		dst = append(dst, `,"bpUnconvergedPasses":`...)
		dst = strconv.AppendInt(dst, int64(s.BPUnconvergedPasses), 10)
	}
	if d := s.Seismic; d != nil {
		dst = append(dst, `,"seismic":{"pendingTerms":`...)
		dst = strconv.AppendInt(dst, int64(d.PendingTerms), 10)
		if d.PartialPasses != 0 {
			dst = append(dst, `,"partialPasses":`...)
			dst = strconv.AppendInt(dst, int64(d.PartialPasses), 10)
		}
		if d.Stalls != 0 {
			dst = append(dst, `,"stalls":`...)
			dst = strconv.AppendInt(dst, int64(d.Stalls), 10)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendFiles appends a list of FileInfo (null when nil, as json.Marshal
// writes a nil slice).
func appendFiles(dst []byte, files []segment.FileInfo) []byte {
	if files == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, f := range files {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"suffix":`...)
		dst = appendString(dst, f.Suffix)
		dst = append(dst, `,"size":`...)
		dst = strconv.AppendInt(dst, f.Size, 10)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendIVF appends one IVFInfo.
func appendIVF(dst []byte, f *segment.IVFInfo) []byte {
	dst = append(dst, `{"field":`...)
	dst = appendString(dst, f.Field)
	dst = append(dst, `,"runs":`...)
	dst = strconv.AppendInt(dst, int64(f.Runs), 10)
	dst = append(dst, `,"vectors":`...)
	dst = strconv.AppendUint(dst, uint64(f.Vectors), 10)
	dst = append(dst, `,"models":`...)
	if f.Models == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, m := range f.Models {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, m)
		}
		dst = append(dst, ']')
	}
	if f.Fragmented {
		dst = append(dst, `,"fragmented":true`...)
	}
	return append(dst, '}')
}

// appendID appends a segment ID as its JSON string (MarshalText's hex
// digits need no escape).
func appendID(dst []byte, id segid.ID) []byte {
	dst = append(dst, '"')
	dst = strconv.AppendUint(dst, uint64(id), 16)
	return append(dst, '"')
}

// appendString appends s as a JSON string: as it is between quotes when
// every byte is printable ASCII that json.Marshal does not escape (the
// suffixes, field names and model hashes the engine writes), else through
// json.Marshal itself, so escapes and invalid UTF-8 come out as it writes
// them.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// encodeBuffers recycles the buffers metadata.json is encoded into.
var encodeBuffers = sync.Pool{New: func() any { return new([]byte) }}
