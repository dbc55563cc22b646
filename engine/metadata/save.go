package metadata

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// DurabilityError reports that a generation was committed (the rename
// happened) but the directory fsync failed: the commit stands, and crash
// durability is degraded until a later directory sync succeeds (C04).
type DurabilityError struct {
	// Err is the directory-sync failure.
	Err error
}

func (e *DurabilityError) Error() string {
	return fmt.Sprintf("metadata: committed, but directory fsync failed (crash durability degraded): %v", e.Err)
}

func (e *DurabilityError) Unwrap() error { return e.Err }

// IsDurabilityError reports whether err is a post-rename directory-sync
// failure, that is, a successful commit with degraded durability.
func IsDurabilityError(err error) bool {
	var d *DurabilityError
	return errors.As(err, &d)
}

// Save publishes m as the new generation (C02). Callers serialize Save
// (C01). Errors before the rename mean nothing was committed; a
// *DurabilityError means the rename happened and the commit stands.
func Save(fs vfs.FS, dir string, m *Metadata) error {
	if err := m.Validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return fmt.Errorf("metadata: encode: %w", err)
	}
	tmp := fs.PathJoin(dir, TempFileName)
	if err := writeSynced(fs, tmp, append(data, '\n')); err != nil {
		_ = fs.Remove(tmp)
		return err
	}
	// Sync the directory before the rename so that the entries of every
	// segment and mask file the new generation references are durable
	// first: otherwise a crash could keep the rename and lose a file entry,
	// leaving metadata that references a missing file.
	if err := SyncDir(fs, dir); err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("metadata: before rename: %w", err)
	}
	// The rename is the commit point: readers see either the old or the new
	// generation, never a mix.
	if err := fs.Rename(tmp, fs.PathJoin(dir, FileName)); err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("metadata: rename %s over %s: %w", TempFileName, FileName, err)
	}
	// Sync the directory so that a crash cannot undo the rename and bring an
	// older generation back after this one was acknowledged.
	if err := SyncDir(fs, dir); err != nil {
		return &DurabilityError{Err: err}
	}
	return nil
}

// writeSynced writes data to a new file and fsyncs it.
func writeSynced(fs vfs.FS, path string, data []byte) error {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("metadata: create %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("metadata: write %s: %w", path, err)
	}
	// Sync before the rename: otherwise a crash after the rename could leave
	// metadata.json empty or torn while the old generation is gone.
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("metadata: fsync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("metadata: close %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs a directory so that entries created, renamed or removed in
// it survive a crash.
func SyncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("metadata: open directory %s: %w", dir, err)
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return fmt.Errorf("metadata: fsync directory %s: %w", dir, err)
	}
	return d.Close()
}

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrNotExist)
}
