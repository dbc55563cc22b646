//go:build !linux

package index

import "github.com/cockroachdb/pebble/v2/vfs"

// dropPages leaves the page cache alone where there is no fadvise.
func dropPages(vfs.File) {}
