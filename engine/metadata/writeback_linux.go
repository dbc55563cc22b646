package metadata

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's dirty pages, without
// waiting: a hint, not a sync (nothing is durable until the fsync, which
// also reports any write error). Started for the segment and mask files of
// a commit before its metadata is encoded and written, their writes run
// meanwhile instead of inside the fsync round. A file without a descriptor
// (the in-memory test filesystem) is left alone.
func startWriteback(f vfs.File) {
	if fd := f.Fd(); fd != vfs.InvalidFd {
		_ = unix.SyncFileRange(int(fd), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	}
}
