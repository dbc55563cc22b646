package index

import (
	"context"
	"errors"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/summadev/summa/engine/internal/par"
	"github.com/summadev/summa/engine/lifecycle"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// ErrVisibilityChanged: deletes reached a rewrite source while it ran (a
// compaction source's mask changed, or a commit dropped a source whose rows
// were all deleted); publication is rejected so that none is lost (M03).
// Retry the rewrite.
var ErrVisibilityChanged = errors.New("index: source visibility changed during the rewrite; retry")

// ErrNothingToDo: the rewrite has no eligible source.
var ErrNothingToDo = errors.New("index: nothing to rewrite")

// ErrSourceQuarantined: a rewrite source failed preflight validation and
// was quarantined for the process lifetime (Q06).
var ErrSourceQuarantined = errors.New("index: rewrite source quarantined")

// RewriteResult describes a published replacement.
type RewriteResult struct {
	// Generation is the published generation.
	Generation uint64
	// Sources are the replaced segments.
	Sources []segid.ID
	// Output is the new segment.
	Output segid.ID
	// Documents is the output's physical row count.
	Documents uint32
	// DurabilityDegraded is set when the directory fsync after the rename
	// failed (C04).
	DurabilityDegraded bool
	// PostingsBytesBefore and PostingsBytesAfter measure a reorder's gain
	// on the whole postings file (positions included).
	PostingsBytesBefore, PostingsBytesAfter int64
	// DocPostingsBytesBefore and DocPostingsBytesAfter measure it on the
	// doc-id and frequency sections only, the part reordering compresses.
	DocPostingsBytesBefore, DocPostingsBytesAfter int64
	// DocIDBytesBefore and DocIDBytesAfter measure it on the doc-id part
	// of those sections only (frequencies excluded).
	DocIDBytesBefore, DocIDBytesAfter int64
	// BPConverged reports whether a reorder pass converged.
	BPConverged bool
}

// rewrite is one claimed replacement of source segments by one output:
// merge, compaction, and later reorder. It answers the maintainer
// checklist: sources and output are claimed before the first write (L07,
// L08), publication is one metadata transaction (L04), and abandoned
// output cleanup rechecks metadata (Q08).
type rewrite struct {
	idx *Index
	// kind names the operation (merge, compact).
	kind string
	// snap holds the sources' readers and masks as captured.
	snap *Snapshot
	// sources are the replaced segments, in output row order.
	sources []SnapshotSegment
	// srcClaims hold the sources (L08).
	srcClaims []*lifecycle.Claim
	// out owns the output (L07).
	out *lifecycle.Claim
	// decorate, when set, fills the output's metadata from the sources'
	// current entries (BP flags and counters).
	decorate func(out *metadata.Segment, cur []metadata.Segment)
	// freshIVF encodes binary IVF runs afresh (coalescing) instead of
	// concatenating the sources' runs (see ivf.go).
	freshIVF bool
	// seismicBudget bounds the postings the output may newly place in
	// Seismic blocks (segment.MergeSeismic): -1 for merges, compaction and
	// reorder, which copy the sources' encoded runs only; a Seismic pass
	// sets its budget (see seismic.go).
	seismicBudget int64
}

// pickSegment returns a pick for startRewrite that chooses segment id
// alone, if the snapshot still has it (single-source maintenance).
func pickSegment(id segid.ID) func(*Snapshot) []SnapshotSegment {
	return func(s *Snapshot) []SnapshotSegment {
		for _, seg := range s.Segments {
			if seg.Meta.ID == id {
				return []SnapshotSegment{seg}
			}
		}
		return nil
	}
}

// startRewrite captures a snapshot, lets pick choose sources and claims
// them and an output ID. The caller must call finish.
func (idx *Index) startRewrite(kind string, pick func(*Snapshot) []SnapshotSegment) (*rewrite, error) {
	snap, err := idx.Snapshot()
	if err != nil {
		return nil, err
	}
	rw := &rewrite{idx: idx, kind: kind, snap: snap, sources: pick(snap), seismicBudget: -1}
	if len(rw.sources) == 0 {
		snap.Close()
		return nil, ErrNothingToDo
	}
	ids := make([]segid.ID, len(rw.sources))
	for i, s := range rw.sources {
		ids[i] = s.Meta.ID
	}
	if rw.srcClaims, err = idx.mgr.ClaimExisting(kind, ids...); err != nil {
		snap.Close()
		return nil, fmt.Errorf("index: %s: %w", kind, err)
	}
	if rw.out, err = idx.mgr.Claim(kind); err != nil {
		lifecycle.ReleaseAll(rw.srcClaims)
		snap.Close()
		return nil, fmt.Errorf("index: %s: %w", kind, err)
	}
	return rw, nil
}

// claimedRewrite starts a claimed rewrite of the sources pick chooses,
// runs body on it and finishes it. body either publishes the output and
// returns no error, or returns an error having published nothing: finish
// then deletes the output (Q08).
func (idx *Index) claimedRewrite(kind string, pick func(*Snapshot) []SnapshotSegment,
	body func(rw *rewrite) (RewriteResult, error)) (RewriteResult, error) {
	rw, err := idx.startRewrite(kind, pick)
	if err != nil {
		return RewriteResult{}, err
	}
	published := false
	defer func() { rw.finish(published) }()
	res, err := body(rw)
	published = err == nil
	return res, err
}

// rebuild preflights, writes the output from the sources' rows keep
// keeps, in source order, and publishes it with the mask mask computes
// (see publish).
func (rw *rewrite) rebuild(ctx context.Context, keep func(i int, doc uint32) bool,
	mask func(cur []metadata.Segment) (*roaring.Bitmap, error)) (RewriteResult, error) {
	if err := rw.preflight(ctx); err != nil {
		return RewriteResult{}, err
	}
	info, r, err := rw.build(ctx, keep)
	if err != nil {
		return RewriteResult{}, err
	}
	return rw.publish(ctx, info, r, mask)
}

// finish releases what the rewrite still holds. An unpublished output is
// deleted only after rechecking under the metadata lock that it was not
// published (Q08).
func (rw *rewrite) finish(published bool) {
	if !published {
		rw.idx.metaMu.Lock()
		live := false
		for _, id := range rw.idx.Metadata().IDs() {
			live = live || id == rw.out.ID
		}
		rw.idx.metaMu.Unlock()
		if live {
			rw.out.Release()
		} else {
			rw.out.Abandon()
		}
	} else {
		rw.out.Release()
	}
	lifecycle.ReleaseAll(rw.srcClaims)
	rw.snap.Close()
}

// preflight fully validates every source before costly work (Q06); a
// deterministic failure quarantines the source for the process lifetime.
// Sources validate concurrently (GOMAXPROCS at most); the failure acted on
// is the first in source order, as if they validated one after the other:
// once a source fails, later ones are not started.
func (rw *rewrite) preflight(ctx context.Context) error {
	meta := rw.idx.Metadata()
	errs := make([]error, len(rw.sources))
	failed := par.NewMin(len(rw.sources))
	par.DoUntil(len(rw.sources), failed.Get, func(i int) {
		if errs[i] = validateSegment(ctx, rw.idx.fs, rw.idx.dir, meta, rw.sources[i].Meta); errs[i] != nil {
			failed.Lower(i)
		}
	})
	for i, s := range rw.sources {
		err := errs[i]
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if isDeterministic(err) {
			rw.idx.quarantine(s.Meta.ID, err.Error())
			return fmt.Errorf("%w: %s: %v", ErrSourceQuarantined, s.Meta.ID, err)
		}
		return fmt.Errorf("index: %s preflight of %s: %w", rw.kind, s.Meta.ID, err)
	}
	return nil
}

// build writes the output from the sources' rows that keep(i, doc)
// accepts, in source order: a merge, or a compaction. The sources'
// dictionaries, postings and columns are merged (segment.Merge); nothing
// is re-tokenized.
func (rw *rewrite) build(ctx context.Context, keep func(i int, doc uint32) bool) (segment.Info, *segment.Reader, error) {
	return rw.writeOutput(ctx, segment.Concat(rw.readers(), keep))
}

// buildOrdered writes the single source's rows in the given order.
func (rw *rewrite) buildOrdered(ctx context.Context, order []uint32) (segment.Info, *segment.Reader, error) {
	refs := make([]segment.DocRef, len(order))
	for n, doc := range order {
		refs[n] = segment.DocRef{Doc: doc}
	}
	return rw.writeOutput(ctx, refs)
}

// readers returns the sources' readers in output row order.
func (rw *rewrite) readers() []*segment.Reader {
	rs := make([]*segment.Reader, len(rw.sources))
	for i, s := range rw.sources {
		rs[i] = s.Reader
	}
	return rs
}

// writeOutput writes, validates and opens the output segment.
func (rw *rewrite) writeOutput(ctx context.Context, order []segment.DocRef) (segment.Info, *segment.Reader, error) {
	// Written without its fsync: OpenValidated syncs the output while it
	// validates it.
	info, err := segment.MergeWith(ctx, rw.idx.fs, rw.idx.dir, rw.out.ID, rw.idx.schema, rw.readers(), order,
		segment.MergeOptions{ReencodeIVF: rw.freshIVF, SeismicBudget: rw.seismicBudget, Unsynced: true})
	if err != nil {
		return segment.Info{}, nil, fmt.Errorf("index: %s: write %s: %w", rw.kind, rw.out.ID, err)
	}
	// Q12: the complete output is synced and validated, document count
	// included, before metadata can point at it.
	r, err := segment.OpenValidated(ctx, rw.idx.fs, rw.idx.dir, rw.idx.schema, info, rw.idx.readerOptions())
	if err != nil {
		return segment.Info{}, nil, fmt.Errorf("index: %s: validate output %s: %w", rw.kind, rw.out.ID, err)
	}
	return info, r, nil
}

// sourceEntry returns the claimed single source's current metadata entry
// (the claim keeps it from changing), or ErrNothingToDo when the source
// is no longer live.
func (rw *rewrite) sourceEntry() (metadata.Segment, error) {
	id := rw.sources[0].Meta.ID
	for _, s := range rw.idx.Metadata().Segments {
		if s.ID == id {
			return s, nil
		}
	}
	return metadata.Segment{}, fmt.Errorf("%w: %s is no longer live", ErrNothingToDo, id)
}

// rewriteInPlace runs a rewrite of segment id whose documents keep their
// numbers (the IVF coalesce, the Seismic pass): it claims the segment,
// checks on its current metadata entry that it is eligible, preflights,
// builds the output with build and publishes it with the source's BP
// flags and counters (M11) and its current mask.
func (idx *Index) rewriteInPlace(ctx context.Context, kind string, id segid.ID, eligible func(*rewrite) error,
	build func(*rewrite) (segment.Info, *segment.Reader, error)) (RewriteResult, error) {
	if idx.readOnly {
		return RewriteResult{}, ErrReadOnly
	}
	return idx.claimedRewrite(kind, pickSegment(id), func(rw *rewrite) (RewriteResult, error) {
		if err := eligible(rw); err != nil {
			return RewriteResult{}, err
		}
		if err := rw.preflight(ctx); err != nil {
			return RewriteResult{}, err
		}
		info, r, err := build(rw)
		if err != nil {
			return RewriteResult{}, err
		}
		rw.decorate = keepBPState
		order := identity(rw.sources[0].Reader.NumDocs())
		return rw.publish(ctx, info, r, func(cur []metadata.Segment) (*roaring.Bitmap, error) {
			return rw.permutedMask(cur[0], order), nil
		})
	})
}

// identity returns the document order that keeps n documents in place.
func identity(n uint32) []uint32 {
	order := make([]uint32, n)
	for i := range order {
		order[i] = uint32(i)
	}
	return order
}

// publish replaces the sources by the output in one metadata generation.
// mask computes the output's deletion mask from the sources' current
// metadata entries (under the metadata lock); it may reject publication.
func (rw *rewrite) publish(ctx context.Context, info segment.Info, r *segment.Reader,
	mask func(cur []metadata.Segment) (*roaring.Bitmap, error)) (RewriteResult, error) {
	idx := rw.idx
	if h := idx.opts.Hooks.BeforeRewritePublish; h != nil {
		h(rw.kind)
	}
	idx.metaMu.Lock()
	defer idx.metaMu.Unlock()
	// A cancelled rewrite (deletion, shutdown, drain) publishes nothing.
	if err := ctx.Err(); err != nil {
		r.Close()
		return RewriteResult{}, fmt.Errorf("index: %s: %w", rw.kind, err)
	}
	meta := idx.Metadata()
	cur, pos, present := rw.currentSources(meta)
	// A commit may have dropped a source whose every row it deleted. A
	// single-source rewrite then has nothing left to publish, and a merge
	// must hide the dropped source's rows, never bring them back.
	if present < len(rw.sources) && (len(rw.sources) == 1 || rw.kind != "merge" || present == 0) {
		r.Close()
		return RewriteResult{}, fmt.Errorf("index: %s: %w", rw.kind, ErrVisibilityChanged)
	}
	deleted, err := mask(cur)
	if err != nil {
		r.Close()
		return RewriteResult{}, err
	}
	out := metadata.Segment{Info: info}
	if rw.decorate != nil {
		rw.decorate(&out, cur)
	}
	// M09: publication reads the output's debt before committing.
	out.Seismic = rw.seismicDebt(cur, r.SeismicPendingTerms())
	maskClaim, masks, err := rw.writeOutputMask(&out, deleted, info.Documents)
	if err != nil {
		r.Close()
		return RewriteResult{}, err
	}
	next := replaceSources(meta, pos, out)
	next.NextID = idx.mgr.NextID()
	// L04: metadata(output) + tracker(retired sources), then release active.
	// Through the commit path's filesystem, as a flush's publication: the
	// rename over metadata.json finds the published file held open (the
	// inode is freed off the commit's path) and holds the new one for the
	// next commit.
	old, saveErr, err := idx.commit(idx.commitFS(), commitPoint{
		caller: commitByRewrite,
		next:   next,
		release: func() {
			if maskClaim != nil {
				maskClaim.Release()
			}
		},
		abandon: func() {
			if maskClaim != nil {
				maskClaim.Abandon()
			}
			r.Close()
		},
	}, func() (map[segid.ID]*segment.Reader, map[segid.ID]*roaring.Bitmap) {
		return map[segid.ID]*segment.Reader{info.ID: r}, masks
	})
	if err != nil {
		return RewriteResult{}, fmt.Errorf("index: %s: %w", rw.kind, err)
	}
	if old != nil {
		old.Close()
	}
	return rw.published(next, info, saveErr), nil
}

// currentSources returns the sources' entries in meta, in source order
// (the zero entry for a source meta no longer has), each source's
// position by ID, and how many of them meta still has.
func (rw *rewrite) currentSources(meta *metadata.Metadata) (cur []metadata.Segment, pos map[segid.ID]int, present int) {
	cur = make([]metadata.Segment, len(rw.sources))
	pos = map[segid.ID]int{}
	for i, s := range rw.sources {
		pos[s.Meta.ID] = i
	}
	for _, s := range meta.Segments {
		if i, ok := pos[s.ID]; ok {
			cur[i] = s
			present++
		}
	}
	return cur, pos, present
}

// writeOutputMask writes the output's deletion mask (of numDocs rows) when
// deleted has a row, under an ID claimed before the write (L07), and
// records it in out.
// It returns the mask's claim (nil for no mask), which the commit point
// releases or abandons, and the mask to cache by ID.
func (rw *rewrite) writeOutputMask(out *metadata.Segment, deleted *roaring.Bitmap, numDocs uint32) (*lifecycle.Claim, map[segid.ID]*roaring.Bitmap, error) {
	idx := rw.idx
	masks := map[segid.ID]*roaring.Bitmap{}
	if deleted == nil || deleted.IsEmpty() {
		return nil, masks, nil
	}
	maskClaim, err := idx.mgr.Claim(rw.kind + "-mask")
	if err != nil {
		return nil, nil, fmt.Errorf("index: %s: claim mask: %w", rw.kind, err)
	}
	fi, err := segment.WriteMask(idx.fs, idx.dir, maskClaim.ID, deleted, numDocs)
	if err != nil {
		maskClaim.Abandon()
		return nil, nil, fmt.Errorf("index: %s: write mask: %w", rw.kind, err)
	}
	out.Deletes = &metadata.Mask{ID: maskClaim.ID, Deleted: uint32(deleted.GetCardinality()), Size: fi.Size}
	masks[maskClaim.ID] = deleted
	return maskClaim, masks, nil
}

// replaceSources returns the generation after meta in which out takes the
// place of the first source of pos and the other sources are gone.
func replaceSources(meta *metadata.Metadata, pos map[segid.ID]int, out metadata.Segment) *metadata.Metadata {
	next := meta.Clone()
	next.Generation++
	next.Segments = next.Segments[:0]
	placed := false
	for _, s := range meta.Segments {
		if _, replaced := pos[s.ID]; replaced {
			if !placed {
				next.Segments = append(next.Segments, out)
				placed = true
			}
			continue
		}
		next.Segments = append(next.Segments, s)
	}
	return next
}

// published logs and returns the result of a rewrite whose generation
// next was published.
func (rw *rewrite) published(next *metadata.Metadata, info segment.Info, saveErr error) RewriteResult {
	res := RewriteResult{Generation: next.Generation, Output: info.ID, Documents: info.Documents,
		DurabilityDegraded: saveErr != nil}
	for _, s := range rw.sources {
		res.Sources = append(res.Sources, s.Meta.ID)
	}
	rw.idx.log.Info("Segments replaced", "kind", rw.kind, "sources", len(res.Sources), "output", info.ID.String(),
		"generation", next.Generation)
	return res
}

// quarantine excludes a metadata-live segment from search and selection
// for the process lifetime (Q06, Q10).
func (idx *Index) quarantine(id segid.ID, reason string) {
	idx.mu.Lock()
	idx.mu.quarantine[id] = reason
	// Once close began, current belongs to close (which releases it
	// once); replacing or releasing it here would drop its reference
	// twice and drive the refcount below zero.
	var old *Snapshot
	if !idx.mu.closed && idx.mu.current != nil {
		old = idx.mu.current
		idx.mu.current = idx.newSnapshotLocked(idx.mu.meta)
	}
	idx.mu.Unlock()
	if old != nil {
		old.Close()
	}
	idx.log.Error(errors.New(reason), "Segment quarantined", "segment", id.String())
}

// IsQuarantined reports whether a metadata-live segment is quarantined.
func (idx *Index) IsQuarantined(id segid.ID) bool {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	_, q := idx.mu.quarantine[id]
	return q
}

// QuarantinedCount is the number of quarantined metadata-live segments
// (the length of Status().Quarantined, without building the status).
func (idx *Index) QuarantinedCount() int {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	n := 0
	for _, s := range idx.mu.meta.Segments {
		if _, q := idx.mu.quarantine[s.ID]; q {
			n++
		}
	}
	return n
}

// Sweep deletes orphan segment files (Q01): the optimizer calls it between
// passes. A read-only index never sweeps (Q03).
func (idx *Index) Sweep() (int, error) {
	if idx.readOnly {
		return 0, ErrReadOnly
	}
	res, err := idx.mgr.Sweep()
	return len(res.Deleted), err
}
