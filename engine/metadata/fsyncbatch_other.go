//go:build !linux

package metadata

// fsyncs is a batch of asynchronous fsyncs; none exist on this system.
type fsyncs struct{}

// startFsyncs is unavailable: the caller syncs another way.
func startFsyncs([]uintptr) (*fsyncs, bool) { return nil, false }

// add is never called (startFsyncs never succeeds).
func (*fsyncs) add(...uintptr) {}

// wait is never called (startFsyncs never succeeds).
func (*fsyncs) wait() []error { return nil }
