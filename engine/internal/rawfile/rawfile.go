// Package rawfile opens files of the operating system's filesystem
// (vfs.Default) with one system call each, for the commit path of an
// index: pebble's vfs.Default wraps an os.File, whose open costs eight
// calls on Linux (the open, four fcntl for the poller's non-blocking
// probe, an epoll_ctl, pebble's fstatfs and sync_file_range probe). A
// one-document commit opens or renames about six files; the calls were a
// visible share of its critical path.
package rawfile

import "github.com/cockroachdb/pebble/v2/vfs"

// Supported reports whether fs is the operating system's filesystem on a
// system where this package opens files itself (Linux). Elsewhere, and
// for any other filesystem, callers use fs.
func Supported(fs vfs.FS) bool { return supported && fs == vfs.Default }
