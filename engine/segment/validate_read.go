package segment

import (
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"golang.org/x/sys/unix"
)

// validateReadLimit is the largest compound file Validate reads into a
// pooled buffer instead of mapping (see openForValidate); the pool keeps
// at most one such buffer per validation running at once.
const validateReadLimit = 32 << 20

// validateBuffers lends openForValidate its buffers (*[]byte).
var validateBuffers sync.Pool

// openForValidate opens a segment for one full validation. A compound
// segment of at most validateReadLimit bytes on the operating system's
// file system is read with pread(2) into a pooled buffer rather than
// mapped: on the development machine (a virtual machine) a first pass over
// freshly mapped page-cache pages cost 0.6 to 0.7 CPU ms per MiB, paid by
// each core that walks them (the checksums on one, the structure checks on
// another), where the kernel's copy costs about 0.15 and the buffer's
// pages are already mapped. The bytes validated are the file's bytes as
// read, as a mapping's would be; a file whose size is not the recorded one
// or that cannot be read whole is opened by Open, which reports it as
// before. release returns the buffer to the pool once the Reader is closed.
func openForValidate(fs vfs.FS, dir string, s *schema.Schema, info Info) (r *Reader, release func(), err error) {
	noop := func() {}
	if !isDefaultFS(fs) || len(info.Files) != 1 || info.Files[0].Suffix != SuffixCompound || len(info.Parts) == 0 {
		r, err = Open(fs, dir, s, info)
		return r, noop, err
	}
	size := info.Files[0].Size
	if size < frameSize || size > validateReadLimit {
		r, err = Open(fs, dir, s, info)
		return r, noop, err
	}
	bp, _ := validateBuffers.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	release = func() { validateBuffers.Put(bp) }
	if cap(*bp) < int(size)+1 {
		*bp = make([]byte, size+1)
	}
	data, ok := readWhole(rawPath(dir, info.ID, SuffixCompound), (*bp)[:size+1])
	if !ok {
		release()
		r, err = Open(fs, dir, s, info)
		return r, noop, err
	}
	if r, err = openWith(fs, dir, s, info, data, ReaderOptions{}); err != nil {
		release()
		return nil, noop, err
	}
	return r, release, nil
}

// readWhole reads the file at the NUL-terminated path into buf, one byte
// longer than the size expected; it returns the bytes read and whether
// the file held exactly len(buf)-1 bytes.
func readWhole(path []byte, buf []byte) ([]byte, bool) {
	fd, err := openRaw(path)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		k, err := unix.Pread(fd, buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil || k == 0 {
			break
		}
		n += k
	}
	if n != len(buf)-1 {
		return nil, false
	}
	return buf[:n:n], true
}
