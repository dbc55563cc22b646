package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/metadata"
)

// Close shuts the registry down in the spec's order (S02): new registry
// requests are rejected, then each index waits for its accepted commit to
// release the writer guard before its writer and manager stop; detached
// deletions are waited for; the data-directory lock is released last. If
// ctx ends first, Close returns without publishing anything partial: every
// commit is atomic, so a restart finds every committed document.
func (r *Registry) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.mu.closed {
		r.mu.Unlock()
		return ErrShuttingDown
	}
	r.mu.closed = true
	r.mu.Unlock()
	r.opt.StopScans()
	r.Resume() // stop a drain loop; writes are refused by closed anyway
	var errs []error
	// Accepted commits release their writer guards first.
	for _, e := range r.entries() {
		if t := e.activeCommit(); t != nil && !e.deleting.Load() {
			select {
			case <-t.done:
			case <-ctx.Done():
				return fmt.Errorf("registry: waiting for the commit of %s: %w", e.name, ctx.Err())
			}
		}
	}
	// BP cancellation is signalled, then the supervisor and every running
	// maintenance task are joined: blocking work drains (S01, S02).
	r.opt.Shutdown()
	for _, e := range r.entries() {
		if e.deleting.Load() {
			continue
		}
		if err := e.idx.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("registry: close %s: %w", e.name, err))
		}
	}
	done := make(chan struct{})
	go func() { r.deletions.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("registry: waiting for index deletions: %w", ctx.Err())
	}
	if err := r.lock.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// probeFileName is the fsync probe's scratch file in the data directory.
const probeFileName = ".summa.fsync-probe"

// probeFsync measures the latency of writing and fsyncing a small file and
// fsyncing the directory, the floor of every commit.
func probeFsync(fs vfs.FS, dir string) (time.Duration, error) {
	path := fs.PathJoin(dir, probeFileName)
	start := time.Now()
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, err
	}
	if _, err := f.Write(make([]byte, 4096)); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	f.Close()
	if err := metadata.SyncDir(fs, dir); err != nil {
		return 0, err
	}
	d := time.Since(start)
	return d, fs.Remove(path)
}
