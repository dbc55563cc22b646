package registry

import (
	"fmt"

	"github.com/summadev/summa/engine/diskspace"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/optimizer"
	"github.com/summadev/summa/engine/segid"
)

// A full volume (the contract's "Storage full"): ingestion, commits and
// explicit maintenance are refused while the data directory's volume has
// less free space than the reserve, or while a write's ENOSPC or EDQUOT
// has not been followed by space returning (diskspace.Monitor); they
// answer errors wrapping diskspace.ErrFull or the system error, which the
// server answers 507 StorageFull. Nothing acknowledged changes: a refused
// write changes nothing, and a write that failed for space fails like any
// write error (C05, C11). Background maintenance pauses: the optimizer
// starts no task while the volume is full, and a task that fails for space
// is not a failure of its sources (no backoff), so it resumes, without a
// retry loop, at the first scan after space returns. The drain's commit
// and the doctor are not refused by the reserve: they may use it.

// Storage returns the volume's free and used bytes, the reserve and
// whether writes are refused.
func (r *Registry) Storage() (diskspace.State, error) {
	return r.space.State()
}

// storageState is Storage for a status: nil when statfs failed.
func (r *Registry) storageState() *diskspace.State {
	st, err := r.space.State()
	if err != nil {
		return nil
	}
	return &st
}

// admitWrite refuses a write needing about need bytes on a full volume.
func (r *Registry) admitWrite(need int64) error {
	if err := r.space.Admit(need); err != nil {
		return fmt.Errorf("registry: write refused: %w", err)
	}
	return nil
}

// observeWrite tells the monitor of a write's no-space error; it returns err.
func (r *Registry) observeWrite(err error) error {
	if err != nil && r.space.Observe(err) {
		r.log.Info("Volume full: writes are refused until space returns", "error", err.Error())
	}
	return err
}

// storageForOptimizer is the optimizer's view of the volume: free bytes
// (-1 when statfs failed) and whether writes are refused.
func (r *Registry) storageForOptimizer() (free int64, full bool) {
	st, err := r.space.State()
	if err != nil {
		return -1, false
	}
	return st.FreeBytes, st.Full
}

// admitTask refuses a background task whose output (at most the size of
// its sources) would eat into the reserve; the error wraps
// optimizer.ErrStorageFull, which pauses maintenance without backoff.
func (r *Registry) admitTask(meta *metadata.Metadata, sources []segid.ID) error {
	if err := r.space.Admit(sourceBytes(meta, sources)); err != nil {
		return fmt.Errorf("%w: %w", optimizer.ErrStorageFull, err)
	}
	return nil
}

// sourceBytes is the size of the sources' files in meta.
func sourceBytes(meta *metadata.Metadata, sources []segid.ID) int64 {
	want := make(map[segid.ID]bool, len(sources))
	for _, id := range sources {
		want[id] = true
	}
	var n int64
	for _, s := range meta.Segments {
		if !want[s.ID] {
			continue
		}
		for _, f := range s.Files {
			n += f.Size
		}
	}
	return n
}
