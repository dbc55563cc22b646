package metadata

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

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

// SyncError is the failure of SaveSyncing to sync one of the unsynced
// files it was given (nothing was committed). After a failed fsync the
// file's unwritten data may be lost even if a later fsync succeeds, so the
// caller must not reference that file again: it writes it anew.
type SyncError struct {
	// Name is the file's name in the index directory.
	Name string
	// Err is the underlying error.
	Err error
}

// Error implements error.
func (e *SyncError) Error() string { return "metadata: sync " + e.Name + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *SyncError) Unwrap() error { return e.Err }

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
	return SaveSyncing(fs, dir, m, nil)
}

// SaveSyncing is Save that also fsyncs the files of dir named in unsynced
// (written and closed, never synced: the segments and deletion masks of
// the commit) before
// the rename. The metadata file, those files and the directory (whose
// entries for every referenced file exist by then) are synced in one round
// of concurrent fsyncs, so that a commit costs two sequential fsync
// latencies (that round, then the directory after the rename) instead of
// one per file. Any failure of that round commits nothing; the failure of
// an unsynced file's fsync is a *SyncError.
func SaveSyncing(fs vfs.FS, dir string, m *Metadata, unsynced []string) error {
	if err := m.Validate(); err != nil {
		return err
	}
	// The unsynced files are opened first and their writeback started, so
	// that their data is on its way to the disk while the metadata is
	// encoded and written; the fsync round below then finds it written.
	files, err := openUnsynced(fs, dir, unsynced)
	if err != nil {
		return err
	}
	// Compact: half the bytes of an indented file, so less to encode, write
	// and decode on every commit and open (jq pretty-prints it).
	data, err := json.Marshal(m)
	if err != nil {
		closeAll(files)
		return fmt.Errorf("metadata: encode: %w", err)
	}
	tmp := fs.PathJoin(dir, TempFileName)
	f, err := writeFile(fs, tmp, append(data, '\n'))
	if err != nil {
		closeAll(files)
		_ = fs.Remove(tmp)
		return err
	}
	// Sync, before the rename: the metadata file (otherwise a crash after
	// the rename could leave metadata.json empty or torn while the old
	// generation is gone), the unsynced files it references, and the
	// directory, so that the entries of every segment and mask file the new
	// generation references are durable first (otherwise a crash could keep
	// the rename and lose a file entry, leaving metadata that references a
	// missing file).
	if err := syncBeforeRename(fs, dir, f, files); err != nil {
		_ = fs.Remove(tmp)
		return err
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

// unsyncedFile is an unsynced file of the directory, open for its fsync.
type unsyncedFile struct {
	// name is the file's name in the directory.
	name string
	// f is the open file.
	f vfs.File
}

// openUnsynced opens the files of dir named in unsynced and starts their
// writeback. A failure to open one is a *SyncError (the file cannot be
// synced); the files opened so far are closed.
func openUnsynced(fs vfs.FS, dir string, unsynced []string) ([]unsyncedFile, error) {
	files := make([]unsyncedFile, 0, len(unsynced))
	for _, name := range unsynced {
		f, err := fs.Open(fs.PathJoin(dir, name))
		if err != nil {
			closeAll(files)
			return nil, &SyncError{Name: name, Err: fmt.Errorf("metadata: open %s to sync it: %w", name, err)}
		}
		startWriteback(f)
		files = append(files, unsyncedFile{name: name, f: f})
	}
	return files, nil
}

// closeAll closes files, ignoring errors (nothing was written through
// them).
func closeAll(files []unsyncedFile) {
	for _, u := range files {
		_ = u.f.Close()
	}
}

// writeFile writes data to a new file and returns it open, unsynced.
func writeFile(fs vfs.FS, path string, data []byte) (vfs.File, error) {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("metadata: create %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("metadata: write %s: %w", path, err)
	}
	return f, nil
}

// syncBeforeRename fsyncs and closes tmp and the unsynced files, and
// fsyncs dir: concurrently on a real disk (files with descriptors; one
// batch of asynchronous fsyncs where the system has them, see fsyncBatch,
// else one goroutine each), in order elsewhere (the in-memory test
// filesystem, where the order keeps crash tests deterministic).
func syncBeforeRename(fs vfs.FS, dir string, tmp vfs.File, files []unsyncedFile) error {
	if tmp.Fd() != vfs.InvalidFd {
		if err, ok := syncBatch(fs, dir, tmp, files); ok {
			return err
		}
	}
	jobs := []func() error{func() error {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return fmt.Errorf("metadata: fsync %s: %w", TempFileName, err)
		}
		if err := tmp.Close(); err != nil {
			return fmt.Errorf("metadata: close %s: %w", TempFileName, err)
		}
		return nil
	}}
	for _, u := range files {
		jobs = append(jobs, func() error {
			err := u.f.Sync()
			if cerr := u.f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return &SyncError{Name: u.name, Err: fmt.Errorf("metadata: fsync %s: %w", u.name, err)}
			}
			return nil
		})
	}
	jobs = append(jobs, func() error {
		if err := SyncDir(fs, dir); err != nil {
			return fmt.Errorf("metadata: before rename: %w", err)
		}
		return nil
	})
	errs := make([]error, len(jobs))
	if tmp.Fd() == vfs.InvalidFd {
		for i, job := range jobs {
			errs[i] = job()
		}
		return errors.Join(errs...)
	}
	var wg sync.WaitGroup
	for i, job := range jobs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = job() }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// syncBatch is syncBeforeRename by one fsyncBatch of the descriptors of
// tmp, the unsynced files and dir; ok is false, and nothing is synced or
// closed, when a descriptor is missing or the batch cannot be set up.
func syncBatch(fs vfs.FS, dir string, tmp vfs.File, files []unsyncedFile) (err error, ok bool) {
	d, derr := fs.OpenDir(dir)
	if derr != nil {
		return nil, false // the fallback reports it
	}
	fds := make([]uintptr, 0, len(files)+2)
	fds = append(fds, tmp.Fd())
	for _, u := range files {
		fds = append(fds, u.f.Fd())
	}
	fds = append(fds, d.Fd())
	for _, fd := range fds {
		if fd == vfs.InvalidFd {
			d.Close()
			return nil, false
		}
	}
	errs, ok := fsyncBatch(fds)
	if !ok {
		d.Close()
		return nil, false
	}
	var out []error
	if err := errs[0]; err != nil {
		tmp.Close()
		out = append(out, fmt.Errorf("metadata: fsync %s: %w", TempFileName, err))
	} else if err := tmp.Close(); err != nil {
		out = append(out, fmt.Errorf("metadata: close %s: %w", TempFileName, err))
	}
	for i, u := range files {
		err := errs[1+i]
		if cerr := u.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			out = append(out, &SyncError{Name: u.name, Err: fmt.Errorf("metadata: fsync %s: %w", u.name, err)})
		}
	}
	if err := errs[len(errs)-1]; err != nil {
		out = append(out, fmt.Errorf("metadata: before rename: fsync directory %s: %w", dir, err))
	}
	d.Close()
	return errors.Join(out...), true
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
