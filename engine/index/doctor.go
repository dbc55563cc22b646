package index

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/lifecycle"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// DoctorReport is what a doctor run found and removed in one index.
type DoctorReport struct {
	// CheckedSegments counts metadata-live segments fully validated.
	CheckedSegments int
	// RemovedSegments lists the segments removed from metadata.
	RemovedSegments []segid.ID
	// RemovedDocuments counts the live documents the removal dropped.
	RemovedDocuments uint64
	// Reasons maps each removed segment to why it failed validation.
	Reasons map[string]string
}

// Doctor repairs an index offline (R01): under the single-writer lock it
// fully validates every metadata-live segment and its mask, removes the
// entries that fail in one atomic metadata save, and deletes their files
// and any orphan. It is destructive by design and never runs implicitly
// (R02): normal opens only quarantine.
func Doctor(ctx context.Context, fs vfs.FS, dir string, opts Options) (DoctorReport, error) {
	rep := DoctorReport{RemovedSegments: []segid.ID{}}
	lock, err := lockDir(fs, dir)
	if err != nil {
		return rep, err
	}
	defer lock.Close()
	meta, err := metadata.Load(fs, dir)
	if err != nil {
		if errors.Is(err, metadata.ErrNotFound) {
			return rep, ErrNotFound
		}
		return rep, fmt.Errorf("index: doctor %s: %w", dir, err)
	}
	next := meta.Clone()
	next.Segments = next.Segments[:0]
	for _, s := range meta.Segments {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("index: doctor %s: %w", dir, err)
		}
		rep.CheckedSegments++
		verr := validateSegment(ctx, fs, dir, meta, s)
		// Only a failure that repeats removes a segment: a transient I/O
		// error gets the attempts an open gets, then stops the run before
		// anything is removed (the doctor is destructive: it must never
		// drop a sound segment for one failed read).
		for attempt := 0; verr != nil && !isDeterministic(verr) && ctx.Err() == nil && attempt < openRetries; attempt++ {
			verr = validateSegment(ctx, fs, dir, meta, s)
		}
		if verr != nil && !isDeterministic(verr) && ctx.Err() == nil {
			return rep, fmt.Errorf("index: doctor %s: validate %s: %w", dir, s.ID, verr)
		}
		if verr == nil {
			next.Segments = append(next.Segments, s)
			continue
		}
		if ctx.Err() != nil {
			return rep, fmt.Errorf("index: doctor %s: %w", dir, ctx.Err())
		}
		rep.RemovedSegments = append(rep.RemovedSegments, s.ID)
		rep.RemovedDocuments += uint64(s.LiveDocuments())
		if rep.Reasons == nil {
			rep.Reasons = map[string]string{}
		}
		rep.Reasons[s.ID.String()] = verr.Error()
	}
	opts = opts.withDefaults()
	mgr := lifecycle.NewManager(fs, dir, meta.IDs(), meta.NextID, lifecycle.Options{Logger: opts.Logger})
	if len(rep.RemovedSegments) > 0 {
		next.Generation++
		next.NextID = mgr.NextID()
		// One atomic save removes every broken entry (R01); publishing
		// ownership retires and deletes the removed files. No index is
		// open: nothing to install, no claim to release.
		cp := commitPoint{caller: commitByDoctor, next: next}
		if _, err := cp.run(fs, dir, mgr, opts.Hooks); err != nil {
			return rep, fmt.Errorf("index: doctor %s: save repaired metadata: %w", dir, err)
		}
	}
	if _, err := mgr.Sweep(); err != nil {
		return rep, fmt.Errorf("index: doctor %s: sweep: %w", dir, err)
	}
	mgr.WaitDeletes()
	return rep, nil
}

// validateSegment fully validates a segment and its current mask.
func validateSegment(ctx context.Context, fs vfs.FS, dir string, meta *metadata.Metadata, s metadata.Segment) error {
	if err := segment.Validate(ctx, fs, dir, meta.Schema, s.Info); err != nil {
		return err
	}
	if s.Deletes != nil {
		bm, err := segment.ReadMask(fs, dir, s.Deletes.ID, s.Documents)
		if err != nil {
			return fmt.Errorf("deletion mask %s: %w", s.Deletes.ID, err)
		}
		if uint32(bm.GetCardinality()) != s.Deletes.Deleted {
			return &segment.CorruptionError{Segment: s.Deletes.ID, File: segid.FileName(s.Deletes.ID, "del"),
				Reason: fmt.Sprintf("holds %d rows, metadata says %d", bm.GetCardinality(), s.Deletes.Deleted)}
		}
	}
	return nil
}

// Validate fully validates every metadata-live segment of an open index
// (every checksum and document count) and returns the failures by segment.
func (idx *Index) Validate(ctx context.Context) (map[segid.ID]error, error) {
	meta := idx.Metadata()
	out := make(map[segid.ID]error)
	for _, s := range meta.Segments {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if err := validateSegment(ctx, idx.fs, idx.dir, meta, s); err != nil {
			out[s.ID] = err
		}
	}
	return out, nil
}
