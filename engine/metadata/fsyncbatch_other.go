//go:build !linux

package metadata

// fsyncBatch is unavailable: the caller syncs another way.
func fsyncBatch([]uintptr) ([]error, bool) { return nil, false }
