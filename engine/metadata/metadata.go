// Package metadata reads and writes metadata.json, the only commit point of
// an index (C02): a generation is written and fsynced as metadata.json.tmp,
// renamed over metadata.json, and the directory is fsynced.
package metadata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
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
	seen := make(map[segid.ID]bool)
	for _, id := range m.IDs() {
		if seen[id] {
			return fmt.Errorf("metadata: id %s referenced twice", id)
		}
		seen[id] = true
		if id >= m.NextID {
			return fmt.Errorf("metadata: id %s is not below nextId %s", id, m.NextID)
		}
	}
	for _, s := range m.Segments {
		if s.Deletes != nil && s.Deletes.Deleted > s.Documents {
			return fmt.Errorf("metadata: segment %s deletes %d of %d rows", s.ID, s.Deletes.Deleted, s.Documents)
		}
	}
	return nil
}

// Load reads dir/metadata.json.
func Load(fs vfs.FS, dir string) (*Metadata, error) {
	f, err := fs.Open(fs.PathJoin(dir, FileName))
	if err != nil {
		if isNotExist(err) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("metadata: open: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("metadata: read: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("metadata: metadata.json larger than %d bytes", MaxFileBytes)
	}
	var m Metadata
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("metadata: decode metadata.json: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}
