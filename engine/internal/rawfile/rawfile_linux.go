//go:build linux

package rawfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

const supported = true

// Open opens path read-only.
func Open(path string) (vfs.File, error) { return open(path, unix.O_RDONLY, 0) }

// OpenDir opens directory path, for its fsync.
func OpenDir(path string) (vfs.File, error) { return open(path, unix.O_RDONLY|unix.O_DIRECTORY, 0) }

// Create creates path, which must not exist, open for reading and
// writing.
func Create(path string) (vfs.File, error) {
	return open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o666)
}

// CreateLinked is Create with the inode allocated off the directory's
// lock: it opens an unnamed file in path's directory (O_TMPFILE), then
// links it to path (linkat(2)), which fails if path exists. Creating a
// name takes the directory's lock for the whole inode allocation, which on
// ext4 without a journal skips every inode freed in the last 30 s of its
// group and can take a fraction of a millisecond, while renames in the
// same directory wait; an O_TMPFILE open allocates without that lock, and
// the link holds it only to add the entry. Where O_TMPFILE or the link is
// not available (another filesystem, no /proc) it is Create.
func CreateLinked(path string) (vfs.File, error) {
	fd, err := ignoringEINTRN(func() (int, error) {
		return unix.Open(filepath.Dir(path), unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o666)
	})
	if err != nil {
		return Create(path)
	}
	// AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; the descriptor's /proc
	// name, followed, does not.
	err = unix.Linkat(fd, "", unix.AT_FDCWD, path, unix.AT_EMPTY_PATH)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	}
	switch {
	case err == nil:
		return &File{fd: fd, path: path}, nil
	case errors.Is(err, unix.EEXIST):
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	unix.Close(fd)
	return Create(path)
}

// open opens path with open(2) flags (O_CLOEXEC is added) and perm,
// retrying on EINTR. Errors are the system's (an *os.PathError wrapping
// an Errno, so errors.Is(err, fs.ErrNotExist) holds for a missing file).
func open(path string, flags int, perm uint32) (vfs.File, error) {
	fd, err := ignoringEINTRN(func() (int, error) { return unix.Open(path, flags|unix.O_CLOEXEC, perm) })
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &File{fd: fd, path: path}, nil
}

// ignoringEINTR calls call again while it fails with EINTR.
func ignoringEINTR(call func() error) error {
	for {
		if err := call(); err != unix.EINTR {
			return err
		}
	}
}

// ignoringEINTRN is ignoringEINTR for calls that return a count.
func ignoringEINTRN(call func() (int, error)) (int, error) {
	for {
		if n, err := call(); err != unix.EINTR {
			return n, err
		}
	}
}

// Rename renames from to to with one rename(2) (os.Rename first stats
// to, to refuse replacing a directory; the callers rename files only).
func Rename(from, to string) error {
	if err := ignoringEINTR(func() error { return unix.Rename(from, to) }); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

// File is a vfs.File over a descriptor: reads and writes are system calls
// (no poller, no buffering).
type File struct {
	fd int
	// path is the name the file was opened under, for Stat and messages
	// (a later rename does not change it).
	path string
}

var _ vfs.File = (*File)(nil)

// Close closes the descriptor.
func (f *File) Close() error {
	if err := unix.Close(f.fd); err != nil {
		return &os.PathError{Op: "close", Path: f.path, Err: err}
	}
	return nil
}

// Read reads from the file's offset.
func (f *File) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := ignoringEINTRN(func() (int, error) { return unix.Read(f.fd, p) })
	switch {
	case err != nil:
		return 0, &os.PathError{Op: "read", Path: f.path, Err: err}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// ReadAt reads len(p) bytes at off, or fewer and io.EOF at the end.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	return f.whole("read", p, func(b []byte, at int) (int, error) { return unix.Pread(f.fd, b, off+int64(at)) })
}

// Write writes p whole at the file's offset.
func (f *File) Write(p []byte) (int, error) {
	return f.whole("write", p, func(b []byte, _ int) (int, error) { return unix.Write(f.fd, b) })
}

// WriteAt writes p whole at off.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	return f.whole("write", p, func(b []byte, at int) (int, error) { return unix.Pwrite(f.fd, b, off+int64(at)) })
}

// whole calls call(p[n:], n) until all of p is read or written (op), n
// the bytes done so far. A call that does nothing ends it: io.EOF for a
// read, io.ErrShortWrite for a write.
func (f *File) whole(op string, p []byte, call func(b []byte, at int) (int, error)) (int, error) {
	n := 0
	for n < len(p) {
		k, err := ignoringEINTRN(func() (int, error) { return call(p[n:], n) })
		switch {
		case err != nil:
			return n, &os.PathError{Op: op, Path: f.path, Err: err}
		case k == 0 && op == "read":
			return n, io.EOF
		case k == 0:
			return n, &os.PathError{Op: op, Path: f.path, Err: io.ErrShortWrite}
		}
		n += k
	}
	return n, nil
}

// Preallocate does nothing (allowed by vfs.File).
func (f *File) Preallocate(offset, length int64) error { return nil }

// Stat stats the file through its descriptor (/proc/self/fd, which
// follows the file across renames: a spare is renamed after it is opened),
// or the path it was opened under where /proc is not mounted.
func (f *File) Stat() (vfs.FileInfo, error) {
	if fi, err := vfs.Default.Stat("/proc/self/fd/" + strconv.Itoa(f.fd)); err == nil {
		return fi, nil
	}
	return vfs.Default.Stat(f.path)
}

// Sync is fsync(2).
func (f *File) Sync() error {
	if err := ignoringEINTR(func() error { return unix.Fsync(f.fd) }); err != nil {
		return &os.PathError{Op: "fsync", Path: f.path, Err: err}
	}
	return nil
}

// SyncTo syncs the whole file's data (fdatasync): always a full sync.
func (f *File) SyncTo(length int64) (fullSync bool, err error) {
	if err := f.SyncData(); err != nil {
		return false, err
	}
	return true, nil
}

// SyncData is fdatasync(2).
func (f *File) SyncData() error {
	if err := ignoringEINTR(func() error { return unix.Fdatasync(f.fd) }); err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.path, Err: err}
	}
	return nil
}

// Prefetch does nothing (allowed by vfs.File).
func (f *File) Prefetch(offset, length int64) error { return nil }

// Fd returns the descriptor.
func (f *File) Fd() uintptr { return uintptr(f.fd) }

// Link makes to a new name of the file from names (link(2)).
func Link(from, to string) error {
	if err := ignoringEINTR(func() error { return unix.Link(from, to) }); err != nil {
		return &os.LinkError{Op: "link", Old: from, New: to, Err: err}
	}
	return nil
}

// ErrSameFile is returned by Reuse when path is live's file.
var ErrSameFile = errors.New("rawfile: the file to reuse is the live file")

// Reuse opens path for reading and writing and truncates it to zero
// bytes, unless path names the same file (inode) as live, or live cannot
// be stat'ed: then it changes nothing and returns ErrSameFile (or the
// error). A caller that recycles an old generation's file through a hard
// link this way can never empty the live one.
func Reuse(path, live string) (vfs.File, error) {
	var lst unix.Stat_t
	if err := unix.Stat(live, &lst); err != nil {
		return nil, &os.PathError{Op: "stat", Path: live, Err: err}
	}
	f, err := open(path, unix.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Ino == lst.Ino && st.Dev == lst.Dev {
		f.Close()
		return nil, ErrSameFile
	}
	if err := unix.Ftruncate(fd, 0); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "truncate", Path: path, Err: err}
	}
	return f, nil
}
