package index

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// dropPages waits for the pages of f written so far to reach the disk
// (their writeback, not a sync: the metadata save still syncs the file,
// C02) and asks the kernel to drop them from the page cache. A file
// without a descriptor (the in-memory test filesystem) is left alone.
func dropPages(f vfs.File) {
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return
	}
	_ = unix.SyncFileRange(int(fd), 0, 0,
		unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
	_ = unix.Fadvise(int(fd), 0, 0, unix.FADV_DONTNEED)
}
