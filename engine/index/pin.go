package index

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// ErrQuarantined: the committed generation has a quarantined segment, so
// it cannot be copied whole (run the doctor first).
var ErrQuarantined = errors.New("index: the committed generation has quarantined segments")

// PinCommitted returns the published generation's metadata (a copy) and
// the snapshot that holds a tracker reference on every file it names
// (segments and current masks, L09), taken together under the published
// state's lock, so that the files stay on disk, whatever maintenance
// retires meanwhile, until the caller closes the snapshot. An online
// backup reads the files through this pin. It fails with ErrQuarantined
// when a metadata-live segment is quarantined (the snapshot would not hold
// it) and ErrClosed once the index closes.
func (idx *Index) PinCommitted() (*Snapshot, *metadata.Metadata, error) {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	if idx.mu.closed || idx.mu.current == nil {
		return nil, nil, ErrClosed
	}
	if n := len(idx.mu.quarantine); n > 0 {
		return nil, nil, fmt.Errorf("%w: %d segment(s)", ErrQuarantined, n)
	}
	s := idx.mu.current
	if s.Generation != idx.mu.meta.Generation {
		return nil, nil, fmt.Errorf("index: snapshot generation %d, metadata generation %d", s.Generation, idx.mu.meta.Generation)
	}
	s.refs.Add(1)
	return s, idx.mu.meta.Clone(), nil
}

// SnapshotFile is one file of a committed generation.
type SnapshotFile struct {
	// Name is the file's name in the index directory (seg_<ID>.<suffix>).
	Name string
	// Size is its size in bytes, as metadata records it.
	Size int64
}

// CommittedFiles returns every seg_ file meta references, in metadata
// order: each live segment's files, then its current deletion mask. A
// copy of the committed state is metadata.json plus exactly these files.
func CommittedFiles(meta *metadata.Metadata) []SnapshotFile {
	var out []SnapshotFile
	for _, s := range meta.Segments {
		for _, f := range s.Files {
			out = append(out, SnapshotFile{Name: segid.FileName(s.ID, f.Suffix), Size: f.Size})
		}
		if s.Deletes != nil {
			out = append(out, SnapshotFile{Name: segid.FileName(s.Deletes.ID, segment.MaskSuffix), Size: s.Deletes.Size})
		}
	}
	return out
}

// ValidateCommitted fully validates every segment and mask meta names in
// dir, the check the doctor runs (every checksum, the format and the
// document counts), without opening the index or touching the directory.
// It returns the first failure, naming the segment.
func ValidateCommitted(ctx context.Context, fs vfs.FS, dir string, meta *metadata.Metadata) error {
	for _, s := range meta.Segments {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := validateSegment(ctx, fs, dir, meta, s); err != nil {
			return fmt.Errorf("segment %s: %w", s.ID, err)
		}
	}
	return nil
}

// FS returns the filesystem of the index directory (Dir).
func (idx *Index) FS() vfs.FS { return idx.fs }
