package index

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/lifecycle"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// commitByReplica names a follower's publication for the CommitPoint hook.
const commitByReplica = "replica"

// ErrNotNewer: an incoming generation is not newer than the published one.
var ErrNotNewer = errors.New("index: incoming generation is not newer than the published one")

// ErrIncomparable: an incoming generation cannot follow the published one
// (another schema, or an ID the directory already used for other files):
// the leader's index was recreated, and the follower must start over.
var ErrIncomparable = errors.New("index: incoming generation does not follow the published one")

// Incoming is a leader's committed generation being installed on a
// follower (rules F02, F03): the IDs it adds are claimed before their
// first byte, the caller downloads their files with Create, and Publish
// validates them in full and commits the generation through the one
// commit point. Abandon (idempotent) gives it up and deletes what was
// written.
type Incoming struct {
	idx *Index
	// next is the leader's generation, verbatim (F04).
	next *metadata.Metadata
	// claims own the new IDs until publication (F02).
	claims []*lifecycle.Claim
	// files are the files to download, by name.
	files map[string]SnapshotFile
	// newSegs and newMasks are the IDs whose files are new.
	newSegs, newMasks map[segid.ID]bool
	// mu guards created, started and the checks: the files of a copy are
	// downloaded, closed and checked by several goroutines at once.
	mu sync.Mutex
	// created names the files Create made; closed ones have their fsync
	// started (Closed), the save waits for those and syncs the rest (C02).
	created []string
	// started are the fsyncs Closed started, by file name.
	started map[string]*metadata.FileSync
	// checks are the early checks of Check (replica_check.go).
	checks
	// dropBehind says that the copy is large enough to drop its pages
	// behind it (dropbehind.go).
	dropBehind bool
}

// PrepareIncoming compares next (a leader's committed generation) with the
// published one and claims every ID next adds (F02). Files of IDs the
// index already publishes are kept: only the rest is downloaded.
func (idx *Index) PrepareIncoming(next *metadata.Metadata) (*Incoming, error) {
	if err := next.Validate(); err != nil {
		return nil, fmt.Errorf("index: incoming generation %d: %w", next.Generation, err)
	}
	if idx.readOnly {
		return nil, ErrReadOnly
	}
	cur := idx.Metadata()
	if !cur.Schema.Equal(next.Schema) {
		return nil, fmt.Errorf("%w: the schema changed", ErrIncomparable)
	}
	if next.Generation <= cur.Generation {
		return nil, fmt.Errorf("%w: %d, published %d", ErrNotNewer, next.Generation, cur.Generation)
	}
	live := make(map[segid.ID]bool)
	for _, id := range cur.IDs() {
		live[id] = true
	}
	in := &Incoming{idx: idx, next: next.Clone(), files: make(map[string]SnapshotFile),
		newSegs: make(map[segid.ID]bool), newMasks: make(map[segid.ID]bool), checks: newChecks()}
	var ids []segid.ID
	for _, s := range next.Segments {
		if !live[s.ID] {
			in.newSegs[s.ID] = true
			ids = append(ids, s.ID)
			for _, f := range s.Files {
				n := segid.FileName(s.ID, f.Suffix)
				in.files[n] = SnapshotFile{Name: n, Size: f.Size}
			}
		}
		if s.Deletes != nil && !live[s.Deletes.ID] {
			in.newMasks[s.Deletes.ID] = true
			ids = append(ids, s.Deletes.ID)
			n := segid.FileName(s.Deletes.ID, segment.MaskSuffix)
			in.files[n] = SnapshotFile{Name: n, Size: s.Deletes.Size}
		}
	}
	var size int64
	for _, f := range in.files {
		size += f.Size
	}
	in.dropBehind = size >= dropBehindBytes
	// F02: every new ID is owned before the first byte of its files.
	claims, err := idx.mgr.ClaimIncoming("replica", ids...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIncomparable, err)
	}
	in.claims = claims
	return in, nil
}

// Generation is the incoming generation's number.
func (in *Incoming) Generation() uint64 { return in.next.Generation }

// Files lists the files to download, each once.
func (in *Incoming) Files() []SnapshotFile {
	out := make([]SnapshotFile, 0, len(in.files))
	for _, f := range CommittedFiles(in.next) {
		if _, ok := in.files[f.Name]; ok {
			out = append(out, f)
		}
	}
	return out
}

// Create creates (or truncates) the file name of the incoming generation
// for its download; the name must be one of Files. The caller writes and
// closes it; the metadata save syncs it before the rename (C02).
func (in *Incoming) Create(name string) (vfs.File, error) {
	if _, ok := in.files[name]; !ok {
		return nil, fmt.Errorf("index: %s is not a file of incoming generation %d", name, in.next.Generation)
	}
	path := in.idx.fs.PathJoin(in.idx.dir, name)
	// A file left by a copy given up (its deletion failed) is replaced by
	// a new one, never written over in place.
	if err := in.idx.fs.Remove(path); err != nil && !oserror.IsNotExist(err) {
		return nil, fmt.Errorf("index: remove the previous %s: %w", name, err)
	}
	in.forget(name) // a check of its former bytes no longer holds
	f, err := in.idx.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("index: create %s: %w", name, err)
	}
	in.mu.Lock()
	in.created = append(in.created, name)
	in.mu.Unlock()
	return f, nil
}

// Closed tells that file name, created by Create, is written and closed:
// its fsync starts now, in the background, so that the disk writes it
// back while the next files download (the save waits for it).
func (in *Incoming) Closed(name string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, ok := in.files[name]; !ok || in.started[name] != nil {
		return
	}
	if in.started == nil {
		in.started = make(map[string]*metadata.FileSync)
	}
	in.started[name] = metadata.StartFileSync(in.idx.fs, in.idx.dir, name)
}

// Abandon gives the incoming generation up: its started fsyncs are given
// up and its claims abandoned, so the files written so far are deleted
// through the tracker (L05).
func (in *Incoming) Abandon() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, s := range in.started {
		s.Release()
	}
	in.started = nil
	for i := range in.readers {
		in.closeReader(i)
	}
	lifecycle.AbandonAll(in.claims)
}

// Publish checks every file of the incoming generation in full (the
// doctor's validation; F03), unless Check did since the file's Create,
// opens the new segments and commits the
// generation through the commit point: metadata saved with the downloaded
// files synced first, ownership published, readers installed, claims
// released. On error nothing is published and the caller abandons.
func (in *Incoming) Publish(ctx context.Context) (degraded bool, err error) {
	idx := in.idx
	readers := make(map[segid.ID]*segment.Reader)
	masks := make(map[segid.ID]*roaring.Bitmap)
	closeReaders := func() {
		for _, r := range readers {
			_ = r.Close()
		}
	}
	for i, s := range in.next.Segments {
		bm, early := in.checked(i)
		var err error
		if !early {
			bm, err = in.validate(ctx, s)
		}
		if err != nil {
			closeReaders()
			return false, fmt.Errorf("index: incoming generation %d, segment %s: %w", in.next.Generation, s.ID, err)
		}
		if bm != nil {
			masks[s.Deletes.ID] = bm
		}
		if !in.newSegs[s.ID] {
			continue // the cached reader is kept
		}
		if r := in.takeReader(i); r != nil && early {
			readers[s.ID] = r
			continue
		} else if r != nil {
			_ = r.Close()
		}
		r, err := segment.Open(idx.fs, idx.dir, idx.schema, s.Info, idx.readerOptions())
		if err != nil {
			closeReaders()
			return false, fmt.Errorf("index: incoming generation %d: open segment %s: %w", in.next.Generation, s.ID, err)
		}
		readers[s.ID] = r
	}
	idx.metaMu.Lock() // C01
	defer idx.metaMu.Unlock()
	if cur := idx.Metadata(); in.next.Generation <= cur.Generation {
		closeReaders()
		return false, fmt.Errorf("%w: %d, published %d", ErrNotNewer, in.next.Generation, cur.Generation)
	}
	next := in.next.Clone()
	if n := idx.mgr.NextID(); n > next.NextID {
		next.NextID = n
	}
	var unsynced []string
	var started []*metadata.FileSync
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, name := range in.created {
		if s := in.started[name]; s != nil {
			started = append(started, s)
		} else {
			unsynced = append(unsynced, name)
		}
	}
	old, saveErr, err := idx.commit(idx.fs, commitPoint{
		caller:   commitByReplica,
		next:     next,
		unsynced: unsynced,
		started:  started,
		release:  func() { lifecycle.ReleaseAll(in.claims) },
		abandon:  closeReaders,
	}, func() (map[segid.ID]*segment.Reader, map[segid.ID]*roaring.Bitmap) { return readers, masks })
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrPublication, err)
	}
	in.started = nil // waited for by the save
	if old != nil {
		old.Close()
	}
	return saveErr != nil, nil
}

// validate fully checks the new files of segment s (F03): a new segment's
// files with every checksum, a new mask's bitmap against its row count.
// Files the index already publishes were checked when they arrived. It
// returns the new mask, if any.
func (in *Incoming) validate(ctx context.Context, s metadata.Segment) (*roaring.Bitmap, error) {
	idx := in.idx
	for _, f := range s.Files {
		if !in.newSegs[s.ID] {
			break
		}
		fi, err := idx.fs.Stat(idx.fs.PathJoin(idx.dir, segid.FileName(s.ID, f.Suffix)))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", segment.ErrMissingFile, err)
		}
		if fi.Size() != f.Size {
			return nil, &segment.CorruptionError{Segment: s.ID, File: segid.FileName(s.ID, f.Suffix),
				Reason: fmt.Sprintf("%d bytes, metadata says %d", fi.Size(), f.Size)}
		}
	}
	if in.newSegs[s.ID] {
		if err := segment.Validate(ctx, idx.fs, idx.dir, in.next.Schema, s.Info); err != nil {
			return nil, err
		}
	}
	if s.Deletes == nil || !in.newMasks[s.Deletes.ID] {
		return nil, nil
	}
	bm, err := segment.ReadMask(idx.fs, idx.dir, s.Deletes.ID, s.Documents)
	if err != nil {
		return nil, fmt.Errorf("deletion mask %s: %w", s.Deletes.ID, err)
	}
	if uint32(bm.GetCardinality()) != s.Deletes.Deleted {
		return nil, &segment.CorruptionError{Segment: s.Deletes.ID, File: segid.FileName(s.Deletes.ID, segment.MaskSuffix),
			Reason: fmt.Sprintf("holds %d rows, metadata says %d", bm.GetCardinality(), s.Deletes.Deleted)}
	}
	return bm, nil
}

// Generation returns the published generation's number (cheap: no copy of
// the metadata).
func (idx *Index) Generation() uint64 {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	return idx.mu.meta.Generation
}

// UID returns the index's UID (metadata.Metadata.UID; empty in an index
// created before UIDs).
func (idx *Index) UID() string {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	return idx.mu.meta.UID
}
