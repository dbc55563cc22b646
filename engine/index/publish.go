package index

import (
	"errors"
	"fmt"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/summadev/summa/engine/lifecycle"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// maskWrite is one new deletion-mask generation to publish.
type maskWrite struct {
	// deleted is the full mask (previous generation plus new rows).
	deleted *roaring.Bitmap
	// numDocs is the data segment's row count.
	numDocs uint32
	// claim owns the mask file until publication (L07, L09).
	claim *lifecycle.Claim
	// mask is the written mask's metadata entry.
	mask *metadata.Mask
	// sync is the mask file's fsync, started as it was written; the save
	// waits for it (C02).
	sync *metadata.FileSync
}

// commitMasks are the deletion-mask generations a commit's publication
// writes besides its outputs: the committed segments' (old, by segment ID)
// and the new outputs' (new, by output position), the claims that own
// their files until publication (L07) and their started fsyncs, which the
// save waits for (C02).
type commitMasks struct {
	old     map[segid.ID]*maskWrite
	new     map[int]*maskWrite
	claims  []*lifecycle.Claim
	started []*metadata.FileSync
}

// abandon drops the masks before the rename, when nothing is committed:
// their fsyncs are given up first, then their files abandoned (C11).
func (m *commitMasks) abandon() {
	releaseMaskSyncs(m.old, m.new)
	lifecycle.AbandonAll(m.claims)
}

// publish is the commit finalizer (C09): it computes upsert and delete
// visibility, writes new mask generations (taking over plan's, made while
// the workers flushed, when it still applies), saves metadata (the commit
// point), installs the metadata owner and the new snapshot, and only then
// releases the active claims (L03). It runs in the owned commit task, so a
// cancelled request does not interrupt it (C03). plan (nil for none) is
// publish's to use or drop. On success it returns held, the snapshot it
// read, still referenced: the caller closes it.
func (idx *Index) publish(job *flushJob, plan *maskPlan) (res CommitResult, held *Snapshot, err error) {
	idx.metaMu.Lock() // C01
	defer idx.metaMu.Unlock()

	outputs := job.outputs()
	idx.mu.Lock()
	meta := idx.mu.meta
	cur := idx.mu.current
	cur.refs.Add(1)
	idx.mu.Unlock()
	defer func() {
		if held == nil {
			cur.Close()
		}
	}()

	// Before the rename nothing is committed: the masks are dropped (their
	// fsyncs given up first), the prepared segments kept owned for a
	// lossless retry (C11).
	masks := &commitMasks{}
	if err := idx.writeCommitMasks(masks, plan, cur, job.gen.pending, outputs); err != nil {
		masks.abandon()
		return CommitResult{}, nil, err
	}
	next, published := buildNext(meta, masks.old, masks.new, outputs)
	unsynced, syncs := outputSyncs(outputs, published)
	started := append(masks.started, syncs...)
	next.NextID = idx.mgr.NextID()
	if h := idx.opts.Hooks.BeforePublish; h != nil {
		if err := h(); err != nil {
			masks.abandon()
			return CommitResult{}, nil, fmt.Errorf("%w: %w", ErrPublication, err)
		}
	}
	old, saveErr, err := idx.commit(idx.commitFS(), commitPoint{
		caller:   commitByFlush,
		next:     next,
		unsynced: unsynced,
		started:  started,
		release: func() {
			lifecycle.ReleaseAll(masks.claims)
			releaseOutputs(outputs, published)
		},
		abandon: masks.abandon,
	}, func() (map[segid.ID]*segment.Reader, map[segid.ID]*roaring.Bitmap) {
		return commitCaches(outputs, published, masks.old, masks.new)
	})
	if err != nil {
		return CommitResult{}, nil, publicationError(err)
	}
	res = idx.afterRename(job, outputs, next, saveErr, old)
	// The caller drops cur once it answered (runCommit): that may delete
	// the files this generation retired.
	return res, cur, nil
}

// writeCommitMasks fills masks with the generation's new mask generations,
// written and claimed: the committed segments' rows that the generation's
// upserts and deletes hide, then the outputs' rows that a later operation
// superseded. S04: the primary-key and visibility scans run here (or in
// planMasks), in the commit task, never on the BP pool. On error the
// caller abandons masks.
func (idx *Index) writeCommitMasks(masks *commitMasks, plan *maskPlan, cur *Snapshot,
	pending map[string]pendingOp, outputs []*prepared) error {
	var err error
	if masks.old, err = idx.committedMasks(plan, cur, pending, &masks.claims, &masks.started); err != nil {
		return err
	}
	masks.new = planOutputs(pending, outputs)
	if err := idx.writeMasks(nil, masks.new, &masks.claims, &masks.started); err != nil {
		return fmt.Errorf("%w: %w", ErrPublication, err)
	}
	return nil
}

// outputSyncs lists what the commit point must sync before the rename for
// the published outputs a worker wrote unsynced (C02): the fsyncs already
// started for them, and the names of the files of those with none.
func outputSyncs(outputs []*prepared, published map[segid.ID]bool) (unsynced []string, started []*metadata.FileSync) {
	for _, p := range outputs {
		switch {
		case !p.unsynced || !published[p.info.ID]:
		case p.syncs != nil:
			started = append(started, p.syncs...)
		default:
			for _, f := range p.info.Files {
				unsynced = append(unsynced, segid.FileName(p.info.ID, f.Suffix))
			}
		}
	}
	return unsynced, started
}

// releaseOutputs hands the outputs over once metadata owns them (L03): a
// published output's claim is released, an unpublished one (every row
// superseded within the generation) abandoned.
func releaseOutputs(outputs []*prepared, published map[segid.ID]bool) {
	for _, p := range outputs {
		if published[p.info.ID] {
			p.claim.Release()
		} else {
			p.abandon() // every row superseded within the generation
		}
	}
}

// publicationError wraps a failed commit point's error: errOutputSync when
// an output's fsync failed, ErrPublication otherwise.
func publicationError(err error) error {
	if outputSyncFailed(err) {
		// An output's fsync failed: its data may be lost whatever a
		// later fsync says, so it is never published; the generation
		// is rebuilt from its operations (C05, runCommit).
		return fmt.Errorf("%w: %w", errOutputSync, err)
	}
	return fmt.Errorf("%w: %w", ErrPublication, err)
}

// afterRename finishes a commit whose rename happened: from here on
// nothing may turn the commit into an apparent abort (C04, C12). It takes
// the job's results and prepared segments, closes old (the snapshot the
// install replaced, nil for none) and returns the commit's result.
func (idx *Index) afterRename(job *flushJob, outputs []*prepared, next *metadata.Metadata,
	saveErr error, old *Snapshot) CommitResult {
	for _, p := range outputs {
		p.unsynced, p.syncs = false, nil
	}
	job.takeResults()
	job.gen.takePrepared()
	job.published = true
	if old != nil {
		old.Close()
	}
	res := CommitResult{Generation: next.Generation, DurabilityDegraded: saveErr != nil}
	for _, s := range next.Segments {
		res.Documents += uint64(s.LiveDocuments())
	}
	if saveErr != nil {
		idx.log.Error(saveErr, "Commit durable only after the next directory sync", "generation", next.Generation)
	}
	return res
}

// outputSyncFailed reports whether err (a tree of joined and wrapped
// errors) holds a *metadata.SyncError of a file that is not a mask: a
// flushed segment's file.
func outputSyncFailed(err error) bool {
	var se *metadata.SyncError
	if errors.As(err, &se) && !strings.HasSuffix(se.Name, "."+segment.MaskSuffix) {
		return true
	}
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if outputSyncFailed(inner) {
				return true
			}
		}
	case interface{ Unwrap() error }:
		return outputSyncFailed(e.Unwrap())
	}
	return false
}

// install makes a published generation current: cached readers and masks,
// the degraded flag and a new snapshot. It returns the previous snapshot,
// which the caller closes outside idx.mu.
func (idx *Index) install(next *metadata.Metadata, readers map[segid.ID]*segment.Reader,
	masks map[segid.ID]*roaring.Bitmap, saveErr error) *Snapshot {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	for id, r := range readers {
		idx.mu.readers[id] = r
	}
	for id, m := range masks {
		idx.mu.masks[id] = m
	}
	idx.mu.degraded = saveErr
	idx.mu.meta = next
	old := idx.mu.current
	if idx.mu.closed {
		idx.mu.current = nil
	} else {
		idx.mu.current = idx.newSnapshotLocked(next)
	}
	return old
}

// commitCaches collects the readers and masks a commit publishes.
func commitCaches(outputs []*prepared, published map[segid.ID]bool, oldMasks map[segid.ID]*maskWrite,
	newMasks map[int]*maskWrite) (map[segid.ID]*segment.Reader, map[segid.ID]*roaring.Bitmap) {
	readers := make(map[segid.ID]*segment.Reader)
	for _, p := range outputs {
		if published[p.info.ID] {
			readers[p.info.ID] = p.reader
			p.reader = nil
		}
	}
	masks := make(map[segid.ID]*roaring.Bitmap)
	for _, m := range oldMasks {
		if m.claim != nil {
			masks[m.mask.ID] = m.deleted
		}
	}
	for _, m := range newMasks {
		if m.claim != nil {
			masks[m.mask.ID] = m.deleted
		}
	}
	return readers, masks
}

// planCommitted computes the rows of committed segments that the
// generation's upserts and deletes hide: every live row whose primary key
// the generation touched. Masks are keyed by segment ID.
func planCommitted(cur *Snapshot, pending map[string]pendingOp) (map[segid.ID]*maskWrite, error) {
	oldMasks := make(map[segid.ID]*maskWrite)
	for pk := range pending {
		for i, seg := range cur.Segments {
			docs, err := seg.Reader.PrimaryKeyDocs(pk)
			if err != nil {
				return nil, err
			}
			for _, d := range docs {
				if !cur.isLive(i, d) {
					continue
				}
				m := oldMasks[seg.Meta.ID]
				if m == nil {
					m = &maskWrite{numDocs: seg.Meta.Documents, deleted: roaring.New()}
					if seg.Deleted != nil {
						m.deleted = seg.Deleted.Clone()
					}
					oldMasks[seg.Meta.ID] = m
				}
				m.deleted.Add(d)
			}
		}
	}
	return oldMasks, nil
}

// planOutputs computes the rows of the new outputs that a later operation
// on their key superseded. Masks are keyed by output position.
func planOutputs(pending map[string]pendingOp, outputs []*prepared) map[int]*maskWrite {
	newMasks := make(map[int]*maskWrite)
	for i, p := range outputs {
		for doc, pk := range p.pks {
			if pk == "" || pending[pk].opstamp == p.opstamps[doc] {
				continue
			}
			m := newMasks[i]
			if m == nil {
				m = &maskWrite{numDocs: p.info.Documents, deleted: roaring.New()}
				newMasks[i] = m
			}
			m.deleted.Add(uint32(doc))
		}
	}
	return newMasks
}

// writeMasks claims an ID for each new mask generation before writing its
// file (L07) and records the claims for the caller to release or abandon.
// Masks are written unsynced, and each one's fsync starts as it is
// written; the syncs go to started, for the metadata save to wait for
// before the rename.
func (idx *Index) writeMasks(oldMasks map[segid.ID]*maskWrite, newMasks map[int]*maskWrite, claims *[]*lifecycle.Claim, started *[]*metadata.FileSync) error {
	write := func(m *maskWrite) error {
		if m.deleted.GetCardinality() == uint64(m.numDocs) {
			// Every row is gone: the segment is dropped, no mask needed.
			m.mask = &metadata.Mask{Deleted: m.numDocs}
			return nil
		}
		c, err := idx.mgr.Claim("deletion-mask")
		if err != nil {
			return fmt.Errorf("claim deletion mask: %w", err)
		}
		*claims = append(*claims, c)
		// Synced by the metadata save, with the metadata file (C02).
		fi, err := segment.WriteMaskUnsynced(idx.commitFS(), idx.dir, c.ID, m.deleted, m.numDocs)
		if err != nil {
			return fmt.Errorf("write deletion mask %s: %w", c.ID, err)
		}
		m.sync = metadata.StartFileSync(idx.commitFS(), idx.dir, segid.FileName(c.ID, segment.MaskSuffix))
		*started = append(*started, m.sync)
		m.claim = c
		m.mask = &metadata.Mask{ID: c.ID, Deleted: uint32(m.deleted.GetCardinality()), Size: fi.Size}
		return nil
	}
	for _, m := range oldMasks {
		if err := write(m); err != nil {
			return err
		}
	}
	for _, m := range newMasks {
		if err := write(m); err != nil {
			return err
		}
	}
	return nil
}

// buildNext returns the next generation: committed segments with their new
// masks, then the new outputs; segments with no live row are left out (and
// so retired). published lists the outputs that made it in.
func buildNext(meta *metadata.Metadata, oldMasks map[segid.ID]*maskWrite, newMasks map[int]*maskWrite,
	outputs []*prepared) (*metadata.Metadata, map[segid.ID]bool) {
	next := meta.Clone()
	next.Generation++
	// In place: each cloned entry is read before its slot is rewritten.
	segs := next.Segments
	next.Segments = segs[:0]
	for _, s := range segs {
		if m, ok := oldMasks[s.ID]; ok {
			if m.mask.Deleted == s.Documents {
				continue
			}
			s.Deletes = m.mask
		}
		next.Segments = append(next.Segments, s)
	}
	published := make(map[segid.ID]bool)
	for i, p := range outputs {
		s := metadata.Segment{Info: p.info}
		// M09: a new segment's Seismic debt, read from the output.
		s.Seismic = metadata.NextSeismicDebt(metadata.SeismicFresh, nil, p.reader.SeismicPendingTerms())
		if m, ok := newMasks[i]; ok {
			if m.mask.Deleted == s.Documents {
				continue
			}
			s.Deletes = m.mask
		}
		next.Segments = append(next.Segments, s)
		published[p.info.ID] = true
	}
	return next, published
}

// releaseMaskSyncs gives up the started fsyncs of masks that will not be
// published (their files are abandoned next).
func releaseMaskSyncs(oldMasks map[segid.ID]*maskWrite, newMasks map[int]*maskWrite) {
	for _, m := range oldMasks {
		if m.sync != nil {
			m.sync.Release()
		}
	}
	for _, m := range newMasks {
		if m.sync != nil {
			m.sync.Release()
		}
	}
}
