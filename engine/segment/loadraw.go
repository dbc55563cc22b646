package segment

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
	"golang.org/x/sys/unix"
)

// loadFileRaw is loadFile for vfs.Default, through system calls: opening
// an index of many segments opens thousands of files, and an os.File costs
// a dozen calls per open (descriptor flags, the poller, pebble's
// sync_file_range probe) where a read-only check needs three or four:
// open, one read (small files) or stat and map (large ones), close. path
// is NUL-terminated (see rawPath).
func loadFileRaw(path []byte, size int64, id segid.ID, suffix string, limit int64) (loadedFile, error) {
	fd, err := openRaw(path)
	if err != nil {
		name := string(path[:len(path)-1])
		if errors.Is(err, unix.ENOENT) {
			return loadedFile{}, fmt.Errorf("segment: open %s: %w", name, ErrMissingFile)
		}
		return loadedFile{}, fmt.Errorf("segment: open %s: %w", name, err)
	}
	defer unix.Close(fd)
	if size < frameSize {
		// Sizes below the framing fail loadFile's checks: take that path.
		return loadedFile{}, corruptf(id, suffix, "file of %d bytes is shorter than its framing", size)
	}
	if size <= limit {
		data := make([]byte, size+1)
		n := 0
		for n < len(data) {
			want := len(data) - n
			k, err := unix.Pread(fd, data[n:], int64(n))
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return loadedFile{}, fmt.Errorf("segment: read %s: %w", path[:len(path)-1], err)
			}
			n += k
			if k < want {
				break // a short read of a regular file is its end
			}
		}
		if int64(n) != size {
			return loadedFile{}, corruptf(id, suffix, "file has %d or more bytes, metadata records %d", n, size)
		}
		return loadedFile{suffix: suffix, data: data[:size:size]}, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return loadedFile{}, fmt.Errorf("segment: stat %s: %w", path[:len(path)-1], err)
	}
	if st.Size != size {
		return loadedFile{}, corruptf(id, suffix, "file has %d bytes, metadata records %d", st.Size, size)
	}
	data, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return loadedFile{}, fmt.Errorf("segment: map %s: %w", path[:len(path)-1], err)
	}
	return loadedFile{suffix: suffix, data: data, mapped: true}, nil
}

// rawPath returns the path of segment id's file suffix in dir (the name
// segid.FileName gives, joined to dir), NUL-terminated for openRaw: one
// allocation, where the name, its join and the system call's copy of the
// path took three each for every file Open loads.
func rawPath(dir string, id segid.ID, suffix string) []byte {
	b := make([]byte, 0, len(dir)+1+len(segid.Prefix)+16+1+len(suffix)+1)
	b = append(b, dir...)
	if len(dir) > 0 && dir[len(dir)-1] != '/' {
		b = append(b, '/')
	}
	b = append(b, segid.Prefix...)
	b = strconv.AppendUint(b, uint64(id), 16)
	b = append(b, '.')
	b = append(b, suffix...)
	return append(b, 0)
}

// atFDCWD is unix.AT_FDCWD as a variable: the constant is negative, and
// only a variable converts to the uintptr of a system call argument.
var atFDCWD = unix.AT_FDCWD

// openRaw opens the NUL-terminated path read-only, retrying on EINTR.
func openRaw(path []byte) (int, error) {
	if len(path) == 0 || path[len(path)-1] != 0 {
		return -1, fmt.Errorf("segment: path %q is not NUL-terminated", path)
	}
	for {
		fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&path[0])),
			uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
		switch errno {
		case 0:
			return int(fd), nil
		case unix.EINTR:
			continue
		default:
			return -1, errno
		}
	}
}

// isDefaultFS reports whether fs is the operating system's (where
// loadFileRaw applies).
func isDefaultFS(fs vfs.FS) bool { return fs == vfs.Default }

// readLimit is the size up to which a file is read into memory instead
// of mapped: for small files one read costs less than a stat, a map, the
// page faults of the framing checks and an unmap. Read files live on the
// heap, not in the page cache: the limit bounds that to 144 KiB per
// segment of nine files (small segments are the ones merges remove).
const readLimit = 16 << 10

// readSmall reads a file of the recorded size (at most readLimit) with one
// read of one byte more, which finds a shorter and a longer file alike.
func readSmall(f vfs.File, path string, size int64, id segid.ID, suffix string) (loadedFile, error) {
	if size < frameSize {
		return loadedFile{}, corruptf(id, suffix, "file of %d bytes is shorter than its framing", size)
	}
	data := make([]byte, size+1)
	n, err := f.ReadAt(data, 0)
	if err != nil && err != io.EOF {
		return loadedFile{}, fmt.Errorf("segment: read %s: %w", path, err)
	}
	if int64(n) != size {
		if int64(n) > size {
			st, err := f.Stat()
			if err != nil {
				return loadedFile{}, fmt.Errorf("segment: stat %s: %w", path, err)
			}
			n = int(st.Size())
		}
		return loadedFile{}, corruptf(id, suffix, "file has %d bytes, metadata records %d", n, size)
	}
	return loadedFile{suffix: suffix, data: data[:size:size]}, nil
}
