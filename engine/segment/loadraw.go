package segment

import (
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
	"golang.org/x/sys/unix"
)

// loadFileRaw is loadFile for vfs.Default, through system calls: opening
// an index of many segments opens thousands of files, and an os.File costs
// a dozen calls per open (descriptor flags, the poller, pebble's
// sync_file_range probe) where a read-only check needs three or four:
// open, one read (small files) or stat and map (large ones), close.
func loadFileRaw(path string, size int64, id segid.ID, suffix string, limit int64) (*loadedFile, error) {
	fd, err := openRaw(path)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("segment: open %s: %w", path, ErrMissingFile)
		}
		return nil, fmt.Errorf("segment: open %s: %w", path, err)
	}
	defer unix.Close(fd)
	if size < frameSize {
		// Sizes below the framing fail loadFile's checks: take that path.
		return nil, corruptf(id, suffix, "file of %d bytes is shorter than its framing", size)
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
				return nil, fmt.Errorf("segment: read %s: %w", path, err)
			}
			n += k
			if k < want {
				break // a short read of a regular file is its end
			}
		}
		if int64(n) != size {
			return nil, corruptf(id, suffix, "file has %d or more bytes, metadata records %d", n, size)
		}
		return &loadedFile{data: data[:size:size]}, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("segment: stat %s: %w", path, err)
	}
	if st.Size != size {
		return nil, corruptf(id, suffix, "file has %d bytes, metadata records %d", st.Size, size)
	}
	data, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("segment: map %s: %w", path, err)
	}
	return &loadedFile{data: data, mapped: true}, nil
}

// openRaw opens path read-only, retrying on EINTR.
func openRaw(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
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
func readSmall(f vfs.File, path string, size int64, id segid.ID, suffix string) (*loadedFile, error) {
	if size < frameSize {
		return nil, corruptf(id, suffix, "file of %d bytes is shorter than its framing", size)
	}
	data := make([]byte, size+1)
	n, err := f.ReadAt(data, 0)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("segment: read %s: %w", path, err)
	}
	if int64(n) != size {
		if int64(n) > size {
			st, err := f.Stat()
			if err != nil {
				return nil, fmt.Errorf("segment: stat %s: %w", path, err)
			}
			n = int(st.Size())
		}
		return nil, corruptf(id, suffix, "file has %d bytes, metadata records %d", n, size)
	}
	return &loadedFile{data: data[:size:size]}, nil
}
