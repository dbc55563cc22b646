// Package metadata reads and writes metadata.json, the only commit point of
// an index (C02): a generation is written and fsynced as metadata.json.tmp,
// renamed over metadata.json, and the directory is fsynced.
package metadata

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/internal/strictjson"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// FileName is the commit point's name inside an index directory.
const FileName = "metadata.json"

// TempFileName is the name a generation is written under before the rename.
const TempFileName = "metadata.json.tmp"

// FormatVersion is the metadata format written by this version.
const FormatVersion = 1

// MaxFileBytes bounds metadata.json; a larger file is rejected as corrupt.
const MaxFileBytes = 256 << 20

// ErrNotFound is returned by Load when the directory has no metadata.json.
var ErrNotFound = errors.New("metadata: metadata.json not found")

// ErrCorrupt matches (errors.Is) every refusal of a metadata.json's
// content by Load and Decode: malformed or coerced JSON, an invalid
// schema, an inconsistent generation.
var ErrCorrupt = errors.New("metadata: metadata.json is corrupt")

// Metadata is one committed generation of an index.
type Metadata struct {
	// Version is the format version.
	Version int `json:"version"`
	// Generation increases by one with every published generation.
	Generation uint64 `json:"generation"`
	// NextID is the next segment or mask ID to hand out; IDs are never reused.
	NextID segid.ID `json:"nextId"`
	// Schema is the index's schema.
	Schema *schema.Schema `json:"schema"`
	// Segments lists the live segments.
	Segments []Segment `json:"segments"`
	// UID identifies the index across its generations: drawn at random
	// when the index is created and kept by every later generation, so
	// that an index deleted and created again under its name is another
	// one to a follower even at the same generation number; empty in
	// indexes created before it existed.
	UID string `json:"uid,omitempty"`
}

// NewUID returns a random index UID (32 hex digits).
func NewUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("metadata: index uid: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Segment is one live segment: its files and its current deletion mask.
type Segment struct {
	segment.Info
	// Deletes is the current deletion-mask generation, if any (L09).
	Deletes *Mask `json:"deletes,omitempty"`
	// BPConverged is true when BP reordering of this segment converged.
	BPConverged bool `json:"bpConverged,omitempty"`
	// BPUnconvergedPasses counts budget-truncated BP passes of its lineage.
	BPUnconvergedPasses int `json:"bpUnconvergedPasses,omitempty"`
	// Seismic is the Seismic debt and its maintenance counters (M09);
	// nil when the segment has none.
	Seismic *SeismicDebt `json:"seismic,omitempty"`
}

// Mask is one immutable deletion-mask generation with its own ID (L09).
type Mask struct {
	// ID names the mask file seg_<ID>.del.
	ID segid.ID `json:"id"`
	// Deleted is the number of deleted rows.
	Deleted uint32 `json:"deleted"`
	// Size is the mask file's size in bytes.
	Size int64 `json:"size"`
}

// LiveDocuments returns the segment's documents minus its deleted rows.
func (s *Segment) LiveDocuments() uint32 {
	if s.Deletes == nil {
		return s.Documents
	}
	return s.Documents - s.Deletes.Deleted
}

// IDs returns every ID this generation references: segments and masks.
func (m *Metadata) IDs() []segid.ID {
	out := make([]segid.ID, 0, 2*len(m.Segments))
	for _, s := range m.Segments {
		out = append(out, s.ID)
		if s.Deletes != nil {
			out = append(out, s.Deletes.ID)
		}
	}
	return out
}

// Clone returns a deep copy whose segment list can be edited.
func (m *Metadata) Clone() *Metadata {
	c := *m
	c.Segments = make([]Segment, len(m.Segments))
	for i, s := range m.Segments {
		if s.Deletes != nil {
			d := *s.Deletes
			s.Deletes = &d
		}
		s.Files = append([]segment.FileInfo(nil), s.Files...)
		s.Parts = append([]segment.FileInfo(nil), s.Parts...)
		s.IVF = cloneIVF(s.IVF)
		if s.Seismic != nil {
			d := *s.Seismic
			s.Seismic = &d
		}
		c.Segments[i] = s
	}
	return &c
}

// Validate checks the internal consistency of a decoded generation.
func (m *Metadata) Validate() error {
	if m.Version != FormatVersion {
		return fmt.Errorf("metadata: unsupported format version %d", m.Version)
	}
	if m.Schema == nil {
		return fmt.Errorf("metadata: no schema")
	}
	if m.NextID == 0 {
		return fmt.Errorf("metadata: nextId is 0; IDs start at 1")
	}
	// Every ID once (m.IDs(), without building its list: this runs on
	// every commit's critical path).
	seen := make(map[segid.ID]struct{}, 2*len(m.Segments))
	check := func(id segid.ID) error {
		if _, ok := seen[id]; ok {
			return fmt.Errorf("metadata: id %s referenced twice", id)
		}
		seen[id] = struct{}{}
		if id >= m.NextID {
			return fmt.Errorf("metadata: id %s is not below nextId %s", id, m.NextID)
		}
		return nil
	}
	for i := range m.Segments {
		s := &m.Segments[i]
		if err := check(s.ID); err != nil {
			return err
		}
		if s.Deletes != nil {
			if err := check(s.Deletes.ID); err != nil {
				return err
			}
		}
	}
	for i := range m.Segments {
		if err := m.Segments[i].validate(); err != nil {
			return err
		}
	}
	return nil
}

// validate checks one segment's entry: counts and sizes in range, each
// file once.
func (s *Segment) validate() error {
	if s.Deletes != nil && s.Deletes.Deleted > s.Documents {
		return fmt.Errorf("metadata: segment %s deletes %d of %d rows", s.ID, s.Deletes.Deleted, s.Documents)
	}
	if s.Deletes != nil && s.Deletes.Size < 0 {
		return fmt.Errorf("metadata: segment %s: mask size %d", s.ID, s.Deletes.Size)
	}
	if s.BPUnconvergedPasses < 0 {
		return fmt.Errorf("metadata: segment %s: bpUnconvergedPasses %d", s.ID, s.BPUnconvergedPasses)
	}
	if err := s.Seismic.validate(s); err != nil {
		return err
	}
	for i, f := range s.Files {
		// The suffix becomes part of a path: only a plain word may pass.
		if !validSuffix(f.Suffix) || listedBefore(s.Files, i) {
			return fmt.Errorf("metadata: segment %s: file suffix %q is invalid or listed twice", s.ID, clip(f.Suffix))
		}
		if f.Size < 0 {
			return fmt.Errorf("metadata: segment %s: file %q has size %d", s.ID, f.Suffix, f.Size)
		}
	}
	for i, f := range s.Parts {
		if !validSuffix(f.Suffix) || listedBefore(s.Parts, i) {
			return fmt.Errorf("metadata: segment %s: part suffix %q is invalid or listed twice", s.ID, clip(f.Suffix))
		}
		if f.Size < 0 {
			return fmt.Errorf("metadata: segment %s: part %q has size %d", s.ID, f.Suffix, f.Size)
		}
	}
	return nil
}

// listedBefore reports whether files[i]'s suffix appears before i. Lists
// hold a dozen files at most: a scan costs less than a map per segment,
// which was a good share of opening an index of many segments.
func listedBefore(files []segment.FileInfo, i int) bool {
	for _, f := range files[:i] {
		if f.Suffix == files[i].Suffix {
			return true
		}
	}
	return false
}

// validSuffix reports whether a file suffix is 1 to 16 lowercase letters
// or digits, the shape of every suffix the engine writes.
func validSuffix(s string) bool {
	if len(s) == 0 || len(s) > 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// clip shortens s for messages.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// Load reads dir/metadata.json.
func Load(fs vfs.FS, dir string) (*Metadata, error) {
	return load(fs, dir, MaxFileBytes)
}

// load is Load with a file larger than limit bytes refused as corrupt.
func load(fs vfs.FS, dir string, limit int64) (*Metadata, error) {
	f, err := fs.Open(fs.PathJoin(dir, FileName))
	if err != nil {
		if isNotExist(err) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("metadata: open: %w", err)
	}
	defer f.Close()
	data, err := readAll(f, limit)
	if err != nil {
		return nil, fmt.Errorf("metadata: read: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrCorrupt, limit)
	}
	return Decode(data)
}

// readAll reads f whole, up to limit+1 bytes, into one buffer of its size
// (plus the byte that shows it grew) instead of io.ReadAll's doublings: a
// metadata.json of 1,000 segments is about 400 KB. Stat's size is only a
// hint: a failed Stat, or a size below zero or above limit, leaves the
// buffer to grow as the file is read.
func readAll(f vfs.File, limit int64) ([]byte, error) {
	var size int64
	if st, err := f.Stat(); err == nil && st.Size() >= 0 && st.Size() <= limit {
		size = st.Size()
	}
	data := make([]byte, size+1)
	n, err := io.ReadFull(f, data)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return data[:n], nil
	case err != nil:
		return nil, err
	}
	// Longer than its size said: read the rest.
	rest, err := io.ReadAll(io.LimitReader(f, limit+1-int64(n)))
	return append(data, rest...), err
}

// Decode reads the content of a metadata.json and validates it. Nulls
// (other than an empty list), members given twice or with another case,
// numbers out of range for their field and anything after the object are
// refused, never read as zeros or defaults; members this version does not
// know are skipped, as a later format may add them.
//
// The usual text is read in one pass (decodeFast); any other goes through
// the reference decoder, so that what is accepted and the errors are
// those of decodeReference.
func Decode(data []byte) (*Metadata, error) {
	m, ok := decodeFast(data)
	if !ok {
		var err error
		if m, err = decodeReference(data); err != nil {
			return nil, err
		}
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return m, nil
}

// decodeReference decodes data with the strict check of the text
// (strictjson) then encoding/json: the definition of what Decode accepts.
func decodeReference(data []byte) (*Metadata, error) {
	var m Metadata
	if err := strictjson.Decode(data, &m, strictjson.Options{AllowUnknown: true, NullSlices: true}); err != nil {
		return nil, fmt.Errorf("%w: decode: %w", ErrCorrupt, err)
	}
	return &m, nil
}
