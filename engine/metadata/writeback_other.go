//go:build !linux

package metadata

import "github.com/cockroachdb/pebble/v2/vfs"

// startWriteback is a no-op where sync_file_range does not exist; the
// fsync round syncs the files all the same.
func startWriteback(vfs.File) {}
