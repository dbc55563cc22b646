package index

import (
	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/lifecycle"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// The callers of the commit point, as the CommitPoint hook names them.
const (
	commitByFlush   = "flush"
	commitByRewrite = "rewrite"
	commitByDoctor  = "doctor"
)

// commitPoint is the one sequence by which a generation becomes an index's,
// shared by flush publication, rewrite publication and the doctor:
//
//  1. save metadata: write, fsync it with the unsynced files it
//     references and the directory, rename (the commit point, C02);
//  2. publish ownership: the metadata owner of next's IDs is installed, the
//     IDs it leaves out retire (L03, L04);
//  3. install the readers, masks and snapshot of next;
//  4. release the active claims next made redundant (L03).
//
// A failure before the rename commits nothing: abandon runs, steps 2 to 4
// do not, and the error is returned (C11). After the rename nothing can
// fail (C04, C12): a directory-sync error is returned as degraded, never
// as err.
type commitPoint struct {
	// caller names the caller for the CommitPoint hook (commitBy...).
	caller string
	// next is the generation to commit.
	next *metadata.Metadata
	// unsynced names the files of the directory that next references and
	// that were written without an fsync: the save syncs them with the
	// metadata file, before the rename.
	unsynced []string
	// started are fsyncs of such files that their writers started; the
	// save waits for them before the rename. They stay the caller's.
	started []*metadata.FileSync
	// install makes next current (step 3), given the degraded-durability
	// error or nil; nil where no index is open (the doctor).
	install func(degraded error)
	// release releases the claims next no longer needs (step 4); nil for
	// none.
	release func()
	// abandon undoes what the caller prepared for next when nothing was
	// committed; nil for nothing.
	abandon func()
}

// run commits cp.next in dir. REQUIRES: the caller serializes metadata
// mutations (Index.metaMu, or the doctor's exclusive lock; C01).
func (cp commitPoint) run(fs vfs.FS, dir string, mgr *lifecycle.Manager, hooks Hooks) (degraded, err error) {
	if h := hooks.CommitPoint; h != nil {
		h(cp.caller)
	}
	saveErr := metadata.SaveSyncing(fs, dir, cp.next, cp.unsynced, cp.started)
	if saveErr != nil && !metadata.IsDurabilityError(saveErr) {
		if cp.abandon != nil {
			cp.abandon()
		}
		return nil, saveErr
	}
	mgr.Publish(cp.next.IDs()) // the next owner before the release (L03)
	if cp.install != nil {
		cp.install(saveErr)
	}
	if cp.release != nil {
		cp.release()
	}
	return saveErr, nil
}

// commit runs cp in the index's directory through fs, its install step
// making cp.next the index's with the readers and masks caches returns
// (called only once the generation is committed). It returns the snapshot
// the install replaced, nil when nothing was committed, for the caller to
// close, and what run returns. REQUIRES: idx.metaMu held (C01).
func (idx *Index) commit(fs vfs.FS, cp commitPoint,
	caches func() (map[segid.ID]*segment.Reader, map[segid.ID]*roaring.Bitmap)) (old *Snapshot, degraded, err error) {
	cp.install = func(degraded error) {
		readers, masks := caches()
		old = idx.install(cp.next, readers, masks, degraded)
	}
	degraded, err = cp.run(fs, idx.dir, idx.mgr, idx.opts.Hooks)
	return old, degraded, err
}
