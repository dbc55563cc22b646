package metadata

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
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
	return SaveSyncing(fs, dir, m, nil, nil)
}

// SaveSyncing is Save that also fsyncs the files of dir named in unsynced
// (written and closed, never synced: the segments and deletion masks of
// the commit) before the rename, and waits there for the fsyncs started
// (files whose fsync their writer started as it finished them). The
// metadata file, those files and the directory (whose entries for every
// referenced file exist by then) are synced in one round of concurrent
// fsyncs, so that a commit costs two sequential fsync latencies (that
// round, then the directory after the rename) instead of one per file.
// Any failure of that round commits nothing; the failure of an unsynced
// or started file's fsync is a *SyncError. started stays the caller's: a
// FileSync waited for here keeps its outcome for a retried save, and one
// the save did not reach is the caller's to wait for or release.
func SaveSyncing(fs vfs.FS, dir string, m *Metadata, unsynced []string, started []*FileSync) error {
	if err := m.Validate(); err != nil {
		return err
	}
	// The unsynced files are opened first. On a real disk their fsyncs and
	// the directory's start now, as asynchronous fsyncs that run while the
	// metadata is encoded and written (early); otherwise their writeback
	// starts, and the round below syncs everything.
	files, err := openUnsynced(fs, dir, unsynced)
	if err != nil {
		return err
	}
	early := startEarlySyncs(fs, dir, files)
	abandon := func() {
		if early != nil {
			early.abandon()
		}
		closeAll(files)
	}
	// Compact: half the bytes of an indented file, so less to encode, write
	// and decode on every commit and open (jq pretty-prints it). The bytes
	// of json.Marshal, written by the one-pass encoder into a reused buffer.
	buf := encodeBuffers.Get().(*[]byte)
	defer encodeBuffers.Put(buf)
	data, err := m.appendJSON((*buf)[:0])
	if err != nil {
		abandon()
		return fmt.Errorf("metadata: encode: %w", err)
	}
	tmp := fs.PathJoin(dir, TempFileName)
	data = append(data, '\n')
	*buf = data
	f, err := writeFile(fs, tmp, data)
	if err != nil {
		abandon()
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
	var d vfs.File // the directory, still open when synced early
	if early != nil {
		d = early.dir
		defer d.Close()
		err = early.finish(f, files)
		// The started fsyncs ran concurrently with these since they
		// started; wait for them here, before the rename.
		err = errors.Join(append([]error{err}, waitAll(started)...)...)
	} else {
		err = syncBeforeRename(fs, dir, f, files, started)
	}
	if err != nil {
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
	if d != nil {
		// The descriptor opened before the rename: an fsync of a directory
		// syncs its current entries, whenever it was opened.
		if err := d.Sync(); err != nil {
			return &DurabilityError{Err: fmt.Errorf("metadata: fsync directory %s: %w", dir, err)}
		}
		return nil
	}
	if err := SyncDir(fs, dir); err != nil {
		return &DurabilityError{Err: err}
	}
	return nil
}

// earlySyncs is the sync round before the rename on a real disk: the
// fsyncs of the unsynced files and of the directory, started before the
// metadata file exists (every entry they must make durable does), which
// the metadata file's fsync joins once written.
type earlySyncs struct {
	// batch holds the fsyncs: the files', then the directory's.
	batch *fsyncs
	// dir is the directory, open for its fsync.
	dir vfs.File
	// dirName names it in errors.
	dirName string
}

// startEarlySyncs starts the fsyncs of files and dir as one asynchronous
// batch; nil when a file has no descriptor (the in-memory filesystem) or
// the system has no such batch. Then only the writeback of files starts,
// and syncBeforeRename syncs.
func startEarlySyncs(fs vfs.FS, dir string, files []unsyncedFile) *earlySyncs {
	fds := make([]uintptr, 0, len(files)+2)
	for _, u := range files {
		fds = append(fds, u.f.Fd())
	}
	var d vfs.File
	if !slices.Contains(fds, vfs.InvalidFd) {
		if f, err := fs.OpenDir(dir); err == nil {
			d = f
			fds = append(fds, d.Fd())
		}
	}
	if d != nil && d.Fd() != vfs.InvalidFd {
		if b, ok := startFsyncs(fds); ok {
			return &earlySyncs{batch: b, dir: d, dirName: dir}
		}
	}
	if d != nil {
		d.Close()
	}
	for _, u := range files {
		startWriteback(u.f)
	}
	return nil
}

// finish adds tmp's fsync to the batch, waits for all, closes tmp and
// the files (the directory stays open for the fsync after the rename;
// the caller closes it), and returns the failures (a *SyncError for a
// file of files).
func (e *earlySyncs) finish(tmp vfs.File, files []unsyncedFile) error {
	var errs []error
	fd := tmp.Fd()
	if fd == vfs.InvalidFd {
		// Cannot happen on the filesystem that gave the others descriptors;
		// sync it the ordinary way.
		errs = e.batch.wait()
		if err := tmp.Sync(); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, nil)
		}
	} else {
		e.batch.add(fd)
		errs = e.batch.wait()
	}
	var out []error
	for i, u := range files {
		err := errs[i]
		if cerr := u.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			out = append(out, &SyncError{Name: u.name, Err: fmt.Errorf("metadata: fsync %s: %w", u.name, err)})
		}
	}
	if err := errs[len(files)]; err != nil {
		out = append(out, fmt.Errorf("metadata: before rename: fsync directory %s: %w", e.dirName, err))
	}
	if err := errs[len(files)+1]; err != nil {
		tmp.Close()
		out = append(out, fmt.Errorf("metadata: fsync %s: %w", TempFileName, err))
	} else if err := tmp.Close(); err != nil {
		out = append(out, fmt.Errorf("metadata: close %s: %w", TempFileName, err))
	}
	return errors.Join(out...)
}

// abandon waits for the started fsyncs (nothing will be renamed) and
// closes the directory.
func (e *earlySyncs) abandon() {
	e.batch.wait()
	e.dir.Close()
}

// unsyncedFile is an unsynced file of the directory, open for its fsync.
type unsyncedFile struct {
	// name is the file's name in the directory.
	name string
	// f is the open file.
	f vfs.File
}

// openUnsynced opens the files of dir named in unsynced. A failure to open one is a *SyncError (the file cannot be
// synced); the files opened so far are closed.
func openUnsynced(fs vfs.FS, dir string, unsynced []string) ([]unsyncedFile, error) {
	files := make([]unsyncedFile, 0, len(unsynced))
	for _, name := range unsynced {
		f, err := fs.Open(fs.PathJoin(dir, name))
		if err != nil {
			closeAll(files)
			return nil, &SyncError{Name: name, Err: fmt.Errorf("metadata: open %s to sync it: %w", name, err)}
		}
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

// syncBeforeRename fsyncs and closes tmp and the unsynced files, waits
// for the started ones, and fsyncs dir, where startEarlySyncs did not:
// concurrently on a real disk (files with descriptors, one goroutine
// each), in order elsewhere (the in-memory test filesystem, where the
// order keeps crash tests deterministic).
func syncBeforeRename(fs vfs.FS, dir string, tmp vfs.File, files []unsyncedFile, started []*FileSync) error {
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
	for _, s := range started {
		jobs = append(jobs, s.Wait)
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
