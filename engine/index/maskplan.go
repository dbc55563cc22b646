package index

import (
	"fmt"

	"github.com/summadev/summa/engine/lifecycle"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
)

// maskPlan is the new deletion masks of committed segments for a sealed
// generation, planned and written while its workers flush, so that the
// visibility scan, the mask files and their fsyncs are off the commit's
// critical path. Those masks depend only on the generation's operations
// (final once it is sealed) and on the snapshot scanned; publish uses the
// plan only if that snapshot is still the current one (no publication or
// quarantine came in between), and otherwise drops it and plans again
// under the metadata lock. Its mask files are claimed before they are
// written (L07) and are abandoned through tracked cleanup when dropped
// (L05).
type maskPlan struct {
	// cur is the snapshot scanned, referenced until the plan is used or
	// dropped.
	cur *Snapshot
	// masks are the written masks by committed segment ID.
	masks map[segid.ID]*maskWrite
	// claims own the mask files until publication.
	claims []*lifecycle.Claim
	// started are the masks' fsyncs.
	started []*metadata.FileSync
}

// planMasks plans and writes the committed segments' new masks for the
// sealed generation gen against the current snapshot. It returns nil when
// there is nothing to plan or planning failed: publish then plans as
// usual (and reports a failure itself).
func (idx *Index) planMasks(gen *generation) *maskPlan {
	if len(gen.pending) == 0 {
		return nil
	}
	idx.mu.Lock()
	cur := idx.mu.current
	if cur == nil {
		idx.mu.Unlock()
		return nil
	}
	cur.refs.Add(1)
	idx.mu.Unlock()
	// S04: this scan runs in the commit task, never on the BP pool.
	masks, err := planCommitted(cur, gen.pending)
	if err != nil {
		cur.Close()
		return nil
	}
	p := &maskPlan{cur: cur, masks: masks}
	if err := idx.writeMasks(masks, nil, &p.claims, &p.started); err != nil {
		p.drop()
		return nil
	}
	return p
}

// usable reports whether the plan was made against cur, the current
// snapshot under the metadata lock.
func (p *maskPlan) usable(cur *Snapshot) bool { return p != nil && p.cur == cur }

// release ends the plan's hold on its snapshot once publish took its
// masks over.
func (p *maskPlan) release() { p.cur.Close() }

// drop gives the plan up: its masks' fsyncs are released and their files
// abandoned through tracked cleanup (L05); the snapshot is released.
func (p *maskPlan) drop() {
	if p == nil {
		return
	}
	releaseMaskSyncs(p.masks, nil)
	lifecycle.AbandonAll(p.claims)
	p.cur.Close()
}

// committedMasks returns the committed segments' masks for publish, with
// their claims and started fsyncs: the plan's when it was made against
// cur, else (the plan dropped) planned and written now.
func (idx *Index) committedMasks(plan *maskPlan, cur *Snapshot, pending map[string]pendingOp,
	claims *[]*lifecycle.Claim, started *[]*metadata.FileSync) (map[segid.ID]*maskWrite, error) {
	if plan.usable(cur) {
		*claims = append(*claims, plan.claims...)
		*started = append(*started, plan.started...)
		plan.release()
		return plan.masks, nil
	}
	plan.drop()
	masks, err := planCommitted(cur, pending)
	if err != nil {
		return nil, fmt.Errorf("%w: visibility scan: %w", ErrPublication, err)
	}
	if err := idx.writeMasks(masks, nil, claims, started); err != nil {
		return masks, fmt.Errorf("%w: %w", ErrPublication, err)
	}
	return masks, nil
}
