package main

// abandonTail is the end of Claim.Abandon (L05), the snippet of both of
// its mutations: the aborted output is tracked, its claim dropped, and its
// files deleted unless another owner holds them.
const abandonTail = `
	c.m.mu.retired[c.ID] = struct{}{}
	delete(c.m.mu.active, c.ID)
	c.m.mu.Unlock()
	c.m.deleteIfUnowned(c.ID)`

// ownershipMutations break the rules Lxx (ownership).
var ownershipMutations = []Mutation{
	{
		Rule: "L01", Desc: "a live ID equal to nextID is not skipped: the next claim reuses a live segment's ID",
		Edits: []Edit{{File: "engine/lifecycle/manager.go",
			From: `if id >= m.mu.nextID {`,
			To:   `if id > m.mu.nextID {`}},
		Pkg: "./engine/lifecycle", Run: "^TestL01_",
	},
	{
		Rule: "L02", Desc: "ownership forgets the tracker: a retired segment is deleted while a reader holds it",
		Edits: []Edit{{File: "engine/lifecycle/manager.go",
			From: `func (o Owners) Owned() bool { return o.Live || o.Active != "" || o.Refs > 0 }`,
			To:   `func (o Owners) Owned() bool { return o.Live || o.Active != "" }`}},
		Pkg: "./engine/lifecycle", Run: "^TestL02_",
	},
	{
		Rule: "L02", Desc: "ownership forgets active operations: a rewrite source retired while still claimed is deleted under the rewrite",
		Edits: []Edit{{File: "engine/lifecycle/manager.go",
			From: `func (o Owners) Owned() bool { return o.Live || o.Active != "" || o.Refs > 0 }`,
			To:   `func (o Owners) Owned() bool { return o.Live || o.Refs > 0 }`}},
		Pkg: "./engine/lifecycle", Run: "^TestL02_",
	},
	{
		Rule: "L03", Desc: "the commit point releases the active claims before metadata takes ownership",
		Edits: []Edit{{File: "engine/index/commitpoint.go",
			From: `
				mgr.Publish(cp.next.IDs()) // the next owner before the release (L03)
				if cp.install != nil {
					cp.install(saveErr)
				}
				if cp.release != nil {
					cp.release()
				}`,
			To: `
				if cp.release != nil {
					cp.release()
				}
				mgr.Publish(cp.next.IDs())
				if cp.install != nil {
					cp.install(saveErr)
				}`}},
		Pkg: "./engine/index", Run: "^TestL03_",
	},
	{
		Rule: "L03", Desc: "after a post-rename directory-sync failure the commit point skips installing metadata as owner, but still releases the claims",
		Edits: []Edit{{File: "engine/index/commitpoint.go",
			From: `mgr.Publish(cp.next.IDs()) // the next owner before the release (L03)`,
			To: `
				if saveErr == nil {
					mgr.Publish(cp.next.IDs())
				}`}},
		Pkg: "./engine/index", Run: "^TestL03_",
	},
	{
		Rule: "L04", Desc: "the last Unref of a retired source does not delete it: rewrite sources outlive their last reader forever",
		Edits: []Edit{{File: "engine/lifecycle/manager.go",
			From: `m.deleteIfUnowned(zero...)`,
			To:   `_ = zero`}},
		Pkg: "./engine/lifecycle", Run: "^TestL04_",
	},
	{
		Rule: "L05", Desc: "Abandon only drops the active claim: the aborted output is neither tracked nor deleted",
		Edits: []Edit{{File: "engine/lifecycle/claim.go",
			From: abandonTail,
			To: `
				delete(c.m.mu.active, c.ID)
				c.m.mu.Unlock()`}},
		Pkg: "./engine/lifecycle", Run: "^TestL05_",
	},
	{
		Rule: "L05", Desc: "Abandon tracks the aborted output but leaves its deletion to the next sweep: its files stay until a restart",
		Edits: []Edit{{File: "engine/lifecycle/claim.go",
			From: abandonTail,
			To: `
				c.m.mu.retired[c.ID] = struct{}{}
				delete(c.m.mu.active, c.ID)
				c.m.mu.Unlock()`}},
		Pkg: "./engine/lifecycle", Run: "^TestL05_",
	},
	{
		Rule: "L06", Desc: "a rewrite's deferred handler re-raises a panic before its cleanup: claims and output leak",
		Edits: []Edit{{File: "engine/index/rewrite.go",
			From: `
				defer func() { rw.finish(published) }()
				res, err := body(rw)`,
			To: `
				defer func() {
					if r := recover(); r != nil {
						panic(r)
					}
					rw.finish(published)
				}()
				res, err := body(rw)`}},
		Pkg: "./engine/index", Run: "^TestL06_",
	},
	{
		Rule: "L07", Desc: "a deletion mask is written under the next ID and claimed only after the write",
		Edits: []Edit{{File: "engine/index/publish.go",
			From: `
				c, err := idx.mgr.Claim("deletion-mask")
				if err != nil {
					return fmt.Errorf("claim deletion mask: %w", err)
				}
				*claims = append(*claims, c)
				// Synced by the metadata save, with the metadata file (C02).
				fi, err := segment.WriteMaskUnsynced(idx.commitFS(), idx.dir, c.ID, m.deleted, m.numDocs)`,
			To: `
				fi, err := segment.WriteMaskUnsynced(idx.commitFS(), idx.dir, idx.mgr.NextID(), m.deleted, m.numDocs)
				c, cerr := idx.mgr.Claim("deletion-mask")
				if cerr != nil {
					return fmt.Errorf("claim deletion mask: %w", cerr)
				}
				*claims = append(*claims, c)`}},
		Pkg: "./engine/index", Run: "^TestL07_",
	},
	{
		Rule: "L07", Desc: "a rewrite writes its new deletion mask under the next free ID and claims that ID only after the write",
		Edits: []Edit{{File: "engine/index/rewrite.go",
			From: `
				maskClaim, err := idx.mgr.Claim(rw.kind + "-mask")
				if err != nil {
					return nil, nil, fmt.Errorf("index: %s: claim mask: %w", rw.kind, err)
				}
				fi, err := segment.WriteMask(idx.fs, idx.dir, maskClaim.ID, deleted, numDocs)`,
			To: `
				fi, err := segment.WriteMask(idx.fs, idx.dir, idx.mgr.NextID(), deleted, numDocs)
				maskClaim, cerr := idx.mgr.Claim(rw.kind + "-mask")
				if cerr != nil {
					return nil, nil, fmt.Errorf("index: %s: claim mask: %w", rw.kind, cerr)
				}`}},
		Pkg: "./engine/index", Run: "^TestL07_",
	},
	{
		Rule: "L08", Desc: "ClaimExisting checks only the first source for another holder",
		Edits: []Edit{{File: "engine/lifecycle/claim.go",
			From: `
				for _, id := range ids {
					if holder, held := m.mu.active[id]; held {`,
			To: `
				for _, id := range ids[:1] {
					if holder, held := m.mu.active[id]; held {`}},
		Pkg: "./engine/lifecycle", Run: "^TestL08_",
	},
	{
		Rule: "L08", Desc: "ClaimExisting claims each source as it checks it: a refused claim leaves the sources before the conflict claimed",
		Edits: []Edit{{File: "engine/lifecycle/claim.go",
			From: `
						return nil, fmt.Errorf("%w: %s held by %s", ErrAlreadyClaimed, id, holder)
					}
				}
				out := make([]*Claim, len(ids))`,
			To: `
						return nil, fmt.Errorf("%w: %s held by %s", ErrAlreadyClaimed, id, holder)
					}
					m.mu.active[id] = op
				}
				out := make([]*Claim, len(ids))`}},
		Pkg: "./engine/lifecycle", Run: "^TestL08_",
	},
	{
		Rule: "L09", Desc: "a snapshot references its segments but not their mask generations",
		Edits: []Edit{{File: "engine/index/snapshot.go",
			From: `s.ids = append(s.ids, m.Deletes.ID)`,
			To:   ``}},
		Pkg: "./engine/index", Run: "^TestL09_",
	},
	{
		Rule: "L09", Desc: "a snapshot reads its segment's mask from the current generation instead of the exact generation it captured",
		Edits: []Edit{{File: "engine/index/snapshot.go",
			From: `
				d := s.Segments[i].Deleted
				return d == nil || !d.Contains(doc)`,
			To: `
				d := s.Segments[i].Deleted
				s.idx.mu.Lock()
				for _, m := range s.idx.mu.meta.Segments {
					if m.ID == s.Segments[i].Meta.ID && m.Deletes != nil {
						d = s.idx.mu.masks[m.Deletes.ID]
					}
				}
				s.idx.mu.Unlock()
				return d == nil || !d.Contains(doc)`}},
		Pkg: "./engine/index", Run: "^TestL09_",
	},
	{
		Rule: "L10", Desc: "reorder permutes the mask it captured at start instead of the current one",
		Edits: []Edit{{File: "engine/index/reorder.go",
			From: `return rw.permutedMask(cur[0], newPos), nil`,
			To:   `return rw.permutedMask(src.Meta, newPos), nil`}},
		Pkg: "./engine/index", Run: "^TestL10_",
	},
	{
		Rule: "L11", Desc: "rowstats is written but left out of the segment's list of parts",
		Edits: []Edit{{File: "engine/segment/write.go",
			From: `info.Parts = append(info.Parts, fi)`,
			To: `
				if suffix != SuffixRowStats {
					info.Parts = append(info.Parts, fi)
				}`}},
		Pkg: "./engine/index", Run: "^TestL11_",
	},
}
