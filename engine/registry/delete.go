package registry

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/metadata"
)

// Delete starts the ordered deletion of an index (D01) and returns once
// step 1 is durable: the lease is held and the .deleting marker exists.
// The remaining steps run detached from the request (D02). Deleting an
// index that is already being deleted is not an error.
func (r *Registry) Delete(ctx context.Context, name string) error {
	r.mu.Lock()
	if r.mu.closed {
		r.mu.Unlock()
		return ErrShuttingDown
	}
	e := r.mu.entries[name]
	r.mu.Unlock()
	if e == nil || e.idx == nil {
		return ErrIndexNotFound
	}
	if e.deleting.Load() { // D04: before the lease
		return nil
	}
	if err := e.acquireLease(ctx); err != nil {
		return err
	}
	if e.deleting.Load() { // D04: after the lease
		e.releaseLease()
		return nil
	}
	// Step 1: the marker, durable before anything else happens.
	if err := writeMarker(r.fs, e.dir); err != nil {
		e.releaseLease()
		return fmt.Errorf("registry: delete %s: %w", name, err)
	}
	e.deleting.Store(true)
	r.deletions.Add(1)
	go r.finishDelete(e) // D02: detached; it releases the lease
	return nil
}

// finishDelete runs steps 2 to 7 of D01.
func (r *Registry) finishDelete(e *entry) {
	defer r.deletions.Done()
	log := r.log.WithValues("index", e.name)
	// Step 2: no new lifecycle claims; signal maintenance and waiters.
	e.idx.Manager().Close()
	e.cancel()
	// Step 3: drain issued search and writer handles.
	e.hmu.Lock()
	for e.handles > 0 {
		e.hzero.Wait()
	}
	e.hmu.Unlock()
	// Steps 4 to 6: join indexing workers, drop unpublished segments and
	// cached readers, drain metadata transactions and deferred deletes.
	if err := e.idx.CloseForDeletion(context.Background()); err != nil {
		log.Error(err, "Closing the index for deletion")
	}
	// Step 7: remove the directory. If this fails or the process dies, the
	// marker finishes it at the next startup (D03).
	if err := r.removeDir(e.dir); err != nil {
		log.Error(err, "Removing the index directory; the next start finishes it")
	}
	r.mu.Lock()
	if r.mu.entries[e.name] == e {
		delete(r.mu.entries, e.name)
	}
	r.mu.Unlock()
	close(e.deleted)
	e.releaseLease()
	log.Info("Index deleted")
}

// WaitDeleted waits until the named index's deletion finished (or ctx ends).
func (r *Registry) WaitDeleted(ctx context.Context, name string) error {
	r.mu.Lock()
	e := r.mu.entries[name]
	r.mu.Unlock()
	if e == nil {
		return nil
	}
	select {
	case <-e.deleted:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeMarker creates dir/.deleting durably. The marker holds the index
// name, so that the trash directory it ends up in (whose name no longer
// contains it) still says which index it was.
func writeMarker(fs vfs.FS, dir string) error {
	f, err := fs.Create(fs.PathJoin(dir, DeletingMarker), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(fs.PathBase(dir) + "\n")); err != nil {
		f.Close()
		return err
	}
	// Sync the marker and its directory entry: after a crash the deletion
	// must resume, not leave a half-deleted index that opens as live.
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return metadata.SyncDir(fs, dir)
}
