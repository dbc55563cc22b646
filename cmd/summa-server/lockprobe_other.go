//go:build !unix

package main

// probeLock is a no-op where fcntl locks are not available; opening the
// registry still fails on a locked data directory.
func probeLock(dir string) error { return nil }
