package metadata

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FileSync is the fsync of one file of the index directory that the next
// generation will reference, started as soon as the file is complete (a
// flushed segment as its worker finishes it, a deletion mask as it is
// written), so that the fsync runs while the rest of the commit is
// prepared instead of inside the save's sync round. SaveSyncing, given the
// FileSync, waits for it before its rename, as for the files it syncs
// itself (C02): starting an fsync earlier changes nothing of what is
// durable when the metadata names the file.
//
// On Linux with asynchronous fsync the fsync is submitted at once (an
// io_submit of IOCB_CMD_FSYNC, which is the fsync(2) of the file with its
// error); elsewhere, and on a filesystem without descriptors (the
// in-memory test filesystem), Wait makes it. A FileSync is used by one
// goroutine at a time; its owner calls Wait, or Release when the file is
// given up, exactly so that the descriptor and the asynchronous context
// are returned.
type FileSync struct {
	// name is the file's name in the directory.
	name string
	// f is the file, open for its fsync; nil once waited for (or if the
	// open failed: err says why).
	f vfs.File
	// batch holds the submitted fsync; nil when Wait syncs f itself.
	batch *fsyncs
	// done is set once Wait or Release ran.
	done bool
	// err is the outcome: nil or a *SyncError.
	err error
}

// StartFileSync opens dir/name (written and closed, never synced) and
// starts its fsync. A failure to open it is reported by Wait.
func StartFileSync(fs vfs.FS, dir, name string) *FileSync {
	s := &FileSync{name: name}
	f, err := fs.Open(fs.PathJoin(dir, name))
	if err != nil {
		s.err = &SyncError{Name: name, Err: fmt.Errorf("metadata: open %s to sync it: %w", name, err)}
		return s
	}
	s.f = f
	if fd := f.Fd(); fd != vfs.InvalidFd {
		if b, ok := startFsyncs([]uintptr{fd}); ok {
			s.batch = b
			return s
		}
		startWriteback(f)
	}
	return s
}

// Name returns the file's name in the directory.
func (s *FileSync) Name() string { return s.name }

// Wait waits for the fsync (or makes it), closes the file and returns nil
// or a *SyncError; later calls return the same. After a failure the
// file's data may be lost whatever a later fsync says: the caller must
// not reference the file again.
func (s *FileSync) Wait() error {
	if s.done {
		return s.err
	}
	s.done = true
	if s.f == nil {
		return s.err
	}
	var err error
	if s.batch != nil {
		err = s.batch.wait()[0]
	} else {
		err = s.f.Sync()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.f = nil
	if err != nil {
		s.err = &SyncError{Name: s.name, Err: fmt.Errorf("metadata: fsync %s: %w", s.name, err)}
	}
	return s.err
}

// Release gives the sync up (the file is abandoned): it waits for a
// submitted fsync, which cannot be recalled, and closes the file.
func (s *FileSync) Release() {
	if s.done {
		return
	}
	s.done = true
	if s.f == nil {
		return
	}
	if s.batch != nil {
		s.batch.wait()
	}
	_ = s.f.Close()
	s.f = nil
}

// waitAll waits for every sync of started and returns their failures.
func waitAll(started []*FileSync) []error {
	var errs []error
	for _, s := range started {
		if err := s.Wait(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// releaseAll releases every sync of started.
func releaseAll(started []*FileSync) {
	for _, s := range started {
		s.Release()
	}
}
