package main

import "time"

// abandonTail is the end of Claim.Abandon (L05), the snippet of both of
// its mutations: the aborted output is tracked, its claim dropped, and its
// files deleted unless another owner holds them.
const abandonTail = `
	c.m.mu.retired[c.ID] = struct{}{}
	delete(c.m.mu.active, c.ID)
	c.m.mu.Unlock()
	c.m.deleteIfUnowned(c.ID)`

// giveUpAbandons is where a commit gives its generation up (C05), the
// snippet of two mutations: the commit flush's outputs and the
// generation's earlier buffer-full ones are both abandoned before the
// retry.
const giveUpAbandons = `
	abandonAll(job.takeResults())
	abandonAll(job.gen.takePrepared())
	w.retry(job.gen)`

// mutations lists, per rule of the rule table in docs/engine.md, one or
// more realistic ways a careless change would break it, and the tests that
// must catch it.
var mutations = []Mutation{
	// Ownership (L).
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

	// Commit point (C).
	{
		Rule: "C01", Desc: "a rewrite's publication reads the current generation under the metadata lock, then releases the lock before building and saving the next",
		Edits: []Edit{
			{File: "engine/index/rewrite.go",
				From: `
					idx.metaMu.Lock()
					defer idx.metaMu.Unlock()
					// A cancelled rewrite (deletion, shutdown, drain) publishes nothing.`,
				To: `
					idx.metaMu.Lock()
					meta := idx.Metadata() // the generation this publication builds on
					idx.metaMu.Unlock()
					// A cancelled rewrite (deletion, shutdown, drain) publishes nothing.`},
			{File: "engine/index/rewrite.go",
				From: `
					meta := idx.Metadata()
					cur, pos, present := rw.currentSources(meta)`,
				To: `cur, pos, present := rw.currentSources(meta)`},
		},
		Pkg: "./engine/index", Run: "^TestC01_",
	},
	{
		Rule: "C01", Desc: "a commit's publication holds the metadata lock only while it reads the current generation, not through its save",
		Edits: []Edit{{File: "engine/index/publish.go",
			From: `
				idx.metaMu.Lock() // C01
				defer idx.metaMu.Unlock()

				outputs := job.outputs()
				idx.mu.Lock()
				meta := idx.mu.meta`,
			To: `
				idx.metaMu.Lock()
				outputs := job.outputs()
				idx.mu.Lock()
				meta := idx.mu.meta
				idx.metaMu.Unlock()`}},
		Pkg: "./engine/index", Run: "^TestC01_",
	},
	{
		Rule: "C02", Desc: "metadata.json.tmp is renamed without its fsync",
		Edits: []Edit{{File: "engine/metadata/save.go",
			From: `
				if err := tmp.Sync(); err != nil {
					tmp.Close()
					return fmt.Errorf("metadata: fsync %s: %w", TempFileName, err)
				}`,
			To: ``}},
		Pkg: "./engine/index", Run: "^TestC02_",
	},
	{
		Rule: "C02", Desc: "the commit point leaves a worker's buffer-full outputs out of its sync round: the rename publishes unsynced segments",
		Edits: []Edit{{File: "engine/index/publish.go",
			From: `unsynced = append(unsynced, segid.FileName(p.info.ID, f.Suffix))`,
			To:   `_ = f`}},
		Pkg: "./engine/index", Run: "^TestC02_",
	},
	{
		Rule: "C02", Desc: "a new deletion mask's fsync is started but not waited for before the rename",
		Edits: []Edit{{File: "engine/index/publish.go",
			From: `*started = append(*started, m.sync)`,
			To:   ``}},
		Pkg: "./engine/index", Run: "^TestC02_",
	},
	{
		Rule: "C02", Desc: "a merge output is validated without its fsync before the rename that publishes it",
		Edits: []Edit{{File: "engine/segment/validate.go",
			From: `go func() { synced <- syncFiles(fs, dir, info) }()`,
			To:   `go func() { synced <- nil }()`}},
		Pkg: "./engine/index", Run: "^TestC02_",
	},
	{
		Rule: "C02", Desc: "the directory is not synced before the rename: the new files' entries may not survive a crash that keeps the commit",
		Edits: []Edit{{File: "engine/metadata/save.go",
			From: `
				if err := SyncDir(fs, dir); err != nil {
					return fmt.Errorf("metadata: before rename: %w", err)
				}`,
			To: ``}},
		Pkg: "./engine/index", Run: "^TestC02_",
	},
	{
		Rule: "C03", Desc: "the commit task reports on an unbuffered channel: once the caller gave up it never ends, and shutdown cannot drain it",
		Edits: []Edit{{File: "engine/index/commit.go",
			From: `done := make(chan outcome, 1)`,
			To:   `done := make(chan outcome)`}},
		Pkg: "./engine/index", Run: "^TestC03_", Timeout: 90 * time.Second,
	},
	{
		Rule: "C04", Desc: "a directory-fsync error after the rename is returned as a plain save error (rolled back)",
		Edits: []Edit{{File: "engine/metadata/save.go",
			From: `return &DurabilityError{Err: err}`,
			To:   `return fmt.Errorf("metadata: after rename: %w", err)`}},
		Pkg: "./engine/index", Run: "^TestC04_",
	},
	{
		Rule: "C04", Desc: "the commit installs its generation without recording the post-rename directory-sync failure: status never shows degraded durability",
		Edits: []Edit{{File: "engine/index/publish.go",
			From: `idx.mu.degraded = saveErr`,
			To:   `idx.mu.degraded = nil`}},
		Pkg: "./engine/index", Run: "^TestC04_",
	},
	{
		Rule: "C05", Desc: "a commit that gives its generation up (a failed build, a failed output fsync) abandons the generation's earlier flushes but not its sibling workers' outputs",
		Edits: []Edit{{File: "engine/index/commit.go",
			From: giveUpAbandons,
			To: `
				abandonAll(job.gen.takePrepared())
				w.retry(job.gen)`}},
		Pkg: "./engine/index", Run: "^TestC05_",
	},
	{
		Rule: "C05", Desc: "a failing generation keeps its buffer-full outputs owned until the next commit instead of abandoning them",
		Edits: []Edit{{File: "engine/index/generation.go",
			From: `
				g.mu.Unlock()
				abandonAll(out)
				g.mu.Lock()
				g.mu.err = err`,
			To: `
				g.mu.Unlock()
				g.mu.Lock()
				g.mu.prepared = append(g.mu.prepared, out...)
				g.mu.err = err`}},
		Pkg: "./engine/index", Run: "^TestC05_",
	},
	{
		Rule: "C05", Desc: "a commit that gives its generation up (a failed build, a failed output fsync) abandons the commit flush's outputs but not the generation's buffer-full ones",
		Edits: []Edit{{File: "engine/index/commit.go",
			From: giveUpAbandons,
			To: `
				abandonAll(job.takeResults())
				w.retry(job.gen)`}},
		Pkg: "./engine/index", Run: "^TestC05_",
	},
	{
		Rule: "C06", Desc: "a flush timeout drops the generation's job: ingestion resumes and the retry seals afresh",
		Edits: []Edit{{File: "engine/index/commit.go",
			From: `return CommitResult{}, ErrCommitFlushTimeout`,
			To: `
				w.mu.Lock()
				w.mu.job = nil
				w.mu.Unlock()
				return CommitResult{}, ErrCommitFlushTimeout`}},
		Pkg: "./engine/index", Run: "^TestC06_",
	},
	{
		Rule: "C07", Desc: "the server's commit task restarts a failed build, twice, a second apart, instead of ending",
		Edits: []Edit{{File: "engine/registry/commit.go",
			From: `
				for {
					res, err := idx.Commit(context.Background())
					if errors.Is(err, index.ErrCommitFlushTimeout) {`,
			To: `
				attempts := 0
				for {
					res, err := idx.Commit(context.Background())
					if errors.Is(err, index.ErrGenerationFailed) && attempts < 2 {
						attempts++
						time.Sleep(time.Second)
						continue
					}
					if errors.Is(err, index.ErrCommitFlushTimeout) {`}},
		Pkg: "./engine/registry", Run: "^TestC07_",
	},
	{
		Rule: "C08", Desc: "the writer guard is taken inside the commit task: a request cancelled before the lock still starts a commit",
		Edits: []Edit{
			{File: "engine/index/commit.go",
				From: `
					select {
					case w.guard <- struct{}{}:
					case <-ctx.Done():
						return CommitResult{}, fmt.Errorf("index: commit not started: %w", ctx.Err())
					}`,
				To: ``},
			{File: "engine/index/commit.go",
				From: `
					res, release, err := w.runCommit()
					<-w.guard`,
				To: `
					w.guard <- struct{}{}
					res, release, err := w.runCommit()
					<-w.guard`},
		},
		Pkg: "./engine/index", Run: "^TestC08_",
	},
	{
		Rule: "C09", Desc: "the finalizer resumes the workers before publishing metadata",
		Edits: []Edit{
			{File: "engine/index/commit.go",
				From: `
					w.resume()
					return res, nil`,
				To: `return res, nil`},
			{File: "engine/index/commit.go",
				From: `res, held, err := w.idx.publish(job, plan)`,
				To: `
					w.resume()
					res, held, err := w.idx.publish(job, plan)`},
		},
		Pkg: "./engine/index", Run: "^TestC09_",
	},
	{
		Rule: "C10", Desc: "Delete of a key added in the current generation takes a fast path before the admission check: during a finalizer it is recorded into the sealed generation",
		Edits: []Edit{
			{File: "engine/index/writer.go",
				From: `
					if err := w.admitLocked(); err != nil {
						w.mu.Unlock()
						return false, err
					}`,
				To: ``},
			{File: "engine/index/writer.go",
				From: `
					return !p.deleted, nil
				}`,
				To: `
					return !p.deleted, nil
				}
				if err := w.admitLocked(); err != nil {
					w.mu.Unlock()
					return false, err
				}`},
		},
		Pkg: "./engine/index", Run: "^TestC10_",
	},
	{
		Rule: "C10", Desc: "Delete rechecks only the generation after its lockless lookup, not admission: a lookup that ends during a finalizer records into the sealed generation",
		Edits: []Edit{{File: "engine/index/writer.go",
			From: `if w.mu.gen == gen && w.admitLocked() == nil {`,
			To:   `if w.mu.gen == gen {`}},
		Pkg: "./engine/index", Run: "^TestC10_",
	},
	{
		Rule: "C11", Desc: "a publication failure abandons the prepared segments before holding the generation",
		Edits: []Edit{{File: "engine/index/commit.go",
			From: `w.hold(err)`,
			To: `
				abandonAll(job.takeResults())
				abandonAll(job.gen.takePrepared())
				w.hold(err)`}},
		Pkg: "./engine/index", Run: "^TestC11_",
	},
	{
		Rule: "C11", Desc: "a commit after a held publication seals a new job instead of resuming the held one: the held outputs are orphaned",
		Edits: []Edit{{File: "engine/index/commit.go",
			From: `
				if w.mu.job != nil {
					job := w.mu.job`,
			To: `
				if w.mu.job != nil && w.mu.held == nil {
					job := w.mu.job`}},
		Pkg: "./engine/index", Run: "^TestC11_", Timeout: 90 * time.Second,
	},
	{
		Rule: "C12", Desc: "the commit point returns a post-rename directory-sync error as its error",
		Edits: []Edit{{File: "engine/index/commitpoint.go",
			From: `return saveErr, nil`,
			To:   `return nil, saveErr`}},
		Pkg: "./engine/index", Run: "^TestC12_",
	},
	{
		Rule: "C12", Desc: "the commit point takes any save error, a post-rename durability error included, for a failure before the rename: it abandons what it just committed",
		Edits: []Edit{{File: "engine/index/commitpoint.go",
			From: `if saveErr != nil && !metadata.IsDurabilityError(saveErr) {`,
			To:   `if saveErr != nil {`}},
		Pkg: "./engine/index", Run: "^TestC12_",
	},

	// Cancellation and shutdown (S).
	{
		Rule: "S01", Desc: "the drain counts only the optimizer's background tasks as running maintenance: it finishes while a manual merge still runs",
		Edits: []Edit{{File: "engine/registry/drain.go",
			From: `return r.permits.InUse()`,
			To:   `return r.opt.Running()`}},
		Pkg: "./engine/registry", Run: "^TestS01_",
	},
	{
		Rule: "S01", Desc: "shutdown gives each index a short grace period to close, then abandons the maintenance still running in it",
		Edits: []Edit{{File: "engine/registry/shutdown.go",
			From: `
				if err := e.idx.Close(ctx); err != nil {
					errs = append(errs, fmt.Errorf("registry: close %s: %w", e.name, err))
				}`,
			To: `
				grace, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
				err := e.idx.Close(grace)
				cancel()
				if err != nil {
					errs = append(errs, fmt.Errorf("registry: close %s: %w", e.name, err))
				}`}},
		Pkg: "./engine/registry", Run: "^TestS01_",
	},
	{
		Rule: "S02", Desc: "optimizer shutdown joins its tasks before cancelling them",
		Edits: []Edit{{File: "engine/optimizer/optimizer.go",
			From: `
				o.cancelTasks()
				o.wg.Wait()`,
			To: `
				o.wg.Wait()
				o.cancelTasks()`}},
		Pkg: "./engine/optimizer", Run: "^TestS02_", Timeout: 90 * time.Second,
	},
	{
		Rule: "S03", Desc: "graph building checks cancellation once, before its first document, instead of between bounded units",
		Edits: []Edit{{File: "engine/index/reorder.go",
			From: `if doc%1024 == 0 && ctx.Err() != nil {`,
			To:   `if doc == 0 && ctx.Err() != nil {`}},
		Pkg: "./engine/index", Run: "^TestS03_",
	},
	{
		Rule: "S03", Desc: "BP's cancellation error formats the context's error with %v: a cancelled pass no longer reads as context.Canceled (error class lost)",
		Edits: []Edit{{File: "engine/bp/stop.go",
			From: `return fmt.Errorf("%w: %w", ErrCancelled, ctx.Err())`,
			To:   `return fmt.Errorf("%w: %v", ErrCancelled, ctx.Err())`}},
		Pkg: "./engine/index", Run: "^TestS03_",
	},
	{
		Rule: "S04", Desc: "the commit task takes a maintenance permit for its publication scans",
		Edits: []Edit{{File: "engine/registry/commit.go",
			From: `res, err := idx.Commit(context.Background())`,
			To: `
				_ = r.permits.Acquire(context.Background())
				res, err := idx.Commit(context.Background())
				r.permits.Release()`}},
		Pkg: "./engine/registry", Run: "^TestS04_", Timeout: 90 * time.Second,
	},

	// Index deletion (D).
	{
		Rule: "D01", Desc: "deletion waits for issued handles before stopping claims and cancelling maintenance",
		Edits: []Edit{{File: "engine/registry/delete.go",
			From: `
				e.idx.Manager().Close()
				e.cancel()
				// Step 3: drain issued search and writer handles.
				e.hmu.Lock()
				for e.handles > 0 {
					e.hzero.Wait()
				}
				e.hmu.Unlock()`,
			To: `
				e.hmu.Lock()
				for e.handles > 0 {
					e.hzero.Wait()
				}
				e.hmu.Unlock()
				e.idx.Manager().Close()
				e.cancel()`}},
		Pkg: "./engine/registry", Run: "^TestD01_", Timeout: 90 * time.Second,
	},
	{
		Rule: "D01", Desc: "a manual maintenance task returns its own handle as it starts: deletion no longer waits for it",
		Edits: []Edit{{File: "engine/registry/maintenance.go",
			From: `
				defer own.Release()
				res, err := op(h.e.ctx, idx)`,
			To: `
				own.Release()
				res, err := op(h.e.ctx, idx)`}},
		Pkg: "./engine/registry", Run: "^TestD01_", Timeout: 90 * time.Second,
	},
	{
		Rule: "D01", Desc: "a background maintenance task releases its target (handle) as it starts, not when it ends",
		Edits: []Edit{{File: "engine/optimizer/optimizer.go",
			From: `
				defer t.Release()
				err := t.Run(ctx, task)`,
			To: `
				t.Release()
				err := t.Run(ctx, task)`}},
		Pkg: "./engine/registry", Run: "^TestD01_", Timeout: 90 * time.Second,
	},
	{
		Rule: "D02", Desc: "deletion runs inside the request instead of detached",
		Edits: []Edit{{File: "engine/registry/delete.go",
			From: `go r.finishDelete(e) // D02: detached; it releases the lease`,
			To:   `r.finishDelete(e)`}},
		Pkg: "./engine/registry", Run: "^TestD02_", Timeout: 90 * time.Second,
	},
	{
		Rule: "D03", Desc: "startup looks for the .deleting marker in the data directory instead of the index's: a marked index is opened again",
		Edits: []Edit{{File: "engine/registry/trash.go",
			From: `if _, err := r.fs.Stat(r.fs.PathJoin(dir, DeletingMarker)); errors.Is(err, iofs.ErrNotExist) {`,
			To:   `if _, err := r.fs.Stat(r.fs.PathJoin(r.dir, DeletingMarker)); errors.Is(err, iofs.ErrNotExist) {`}},
		Pkg: "./engine/registry", Run: "^TestD03_",
	},
	{
		Rule: "D03", Desc: "startup skips a marked index but leaves its directory: the interrupted deletion is never finished",
		Edits: []Edit{{File: "engine/registry/trash.go",
			From: `
				if err := r.removeDir(dir); err != nil {
					return true, err
				}
				return true, nil`,
			To: `return true, nil`}},
		Pkg: "./engine/registry", Run: "^TestD03_",
	},
	{
		Rule: "D04", Desc: "Delete no longer checks the marker again after acquiring the lease",
		Edits: []Edit{{File: "engine/registry/delete.go",
			From: `
				if e.deleting.Load() { // D04: after the lease
					e.releaseLease()
					return nil
				}`,
			To: ``}},
		Pkg: "./engine/registry", Run: "^TestD04_",
	},
	{
		Rule: "D05", Desc: "manual reorder commits the admitted generation inside its owned task, once it holds a maintenance permit, instead of before waiting for capacity",
		Edits: []Edit{{File: "engine/registry/maintenance.go",
			From: `
				if _, err := h.Commit(ctx); err != nil {
					return nil, err
				}
				return maintain(ctx, h, func(c context.Context, idx *index.Index) ([]index.RewriteResult, error) {
					return idx.Reorder(c, h.r.opts.Reorder)
				})`,
			To: `
				return maintain(ctx, h, func(c context.Context, idx *index.Index) ([]index.RewriteResult, error) {
					if _, err := h.Commit(c); err != nil {
						return nil, err
					}
					return idx.Reorder(c, h.r.opts.Reorder)
				})`}},
		Pkg: "./engine/registry", Run: "^TestD05_", Timeout: 90 * time.Second,
	},

	// Orphans, corruption, quarantine (Q).
	{
		Rule: "Q01", Desc: "the sweep treats every ID outside metadata as an orphan (claims and readers ignored)",
		Edits: []Edit{{File: "engine/lifecycle/sweep.go",
			From: `if !m.ownersLocked(id).Owned() {`,
			To:   `if !m.ownersLocked(id).Live {`}},
		Pkg: "./engine/lifecycle", Run: "^TestQ01_",
	},
	{
		Rule: "Q01", Desc: "metadata's owned IDs leave out the deletion-mask generations: the writer's open sweeps every committed mask",
		Edits: []Edit{{File: "engine/metadata/metadata.go",
			From: `
				out = append(out, s.ID)
				if s.Deletes != nil {
					out = append(out, s.Deletes.ID)
				}`,
			To: `out = append(out, s.ID)`}},
		Pkg: "./engine/index", Run: "^TestQ01_",
	},
	{
		Rule: "Q02", Desc: "file names are cut at the last dot: multi-dot suffixes (seg_1a.tmp.1) are never swept",
		Edits: []Edit{{File: "engine/segid/segid.go",
			From: `hex, suffix, found := strings.Cut(rest, ".")`,
			To: `
				i := strings.LastIndex(rest, ".")
				found = i >= 0
				hex, suffix := rest, ""
				if found {
					hex, suffix = rest[:i], rest[i+1:]
				}`}},
		Pkg: "./engine/lifecycle", Run: "^TestQ02_",
	},
	{
		Rule: "Q02", Desc: "segment IDs are parsed by strconv alone: a malformed name (seg_1A.post, upper-case hex) is taken for an orphan and swept",
		Edits: []Edit{{File: "engine/segid/segid.go",
			From: `
				for i := 0; i < len(s); i++ {
					c := s[i]
					if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
						return 0, false
					}
				}`,
			To: ``}},
		Pkg: "./engine/lifecycle", Run: "^TestQ02_",
	},
	{
		Rule: "Q03", Desc: "read-only open removes a crashed save's metadata.json.tmp, as the writer's open does",
		Edits: []Edit{{File: "engine/index/index.go",
			From: `
				idx := newIndex(fs, dir, meta, opts)
				idx.readOnly = true`,
			To: `
				idx := newIndex(fs, dir, meta, opts)
				// Crash leftovers, as at the writer's open.
				_ = fs.Remove(fs.PathJoin(dir, metadata.TempFileName))
				idx.readOnly = true`}},
		Pkg: "./engine/index", Run: "^TestQ03_",
	},
	{
		Rule: "Q04", Desc: "writer open reads metadata before taking the single-writer lock",
		Edits: []Edit{{File: "engine/index/index.go",
			From: `
				func Open(fs vfs.FS, dir string, opts Options) (*Index, error) {
					lock, err := lockDir(fs, dir)
					if err != nil {
						return nil, err
					}
					meta, err := metadata.Load(fs, dir)
					if err != nil {`,
			To: `
				func Open(fs vfs.FS, dir string, opts Options) (*Index, error) {
					meta, err := metadata.Load(fs, dir)
					lock, lerr := lockDir(fs, dir)
					if lerr != nil {
						return nil, lerr
					}
					if err != nil {`}},
		Pkg: "./engine/index", Run: "^TestQ04_",
	},
	{
		Rule: "Q05", Desc: "a live segment that fails to open is logged but not quarantined",
		Edits: []Edit{{File: "engine/index/index.go",
			From: `
				idx.mu.quarantine[s.ID] = o.err.Error()
				idx.log.Error(o.err, "Segment quarantined", "segment", s.ID.String())`,
			To: `idx.log.Error(o.err, "Segment failed to open", "segment", s.ID.String())`}},
		Pkg: "./engine/index", Run: "^TestQ05_",
	},
	{
		Rule: "Q06", Desc: "merge preflight treats a corrupt source as a transient failure (no quarantine)",
		Edits: []Edit{{File: "engine/index/rewrite.go",
			From: `
				rw.idx.quarantine(s.Meta.ID, err.Error())
				return fmt.Errorf("%w: %s: %v", ErrSourceQuarantined, s.Meta.ID, err)`,
			To: `return fmt.Errorf("index: %s preflight of %s: %w", rw.kind, s.Meta.ID, err)`}},
		Pkg: "./engine/index", Run: "^TestQ06_",
	},
	{
		Rule: "Q06", Desc: "preflight quarantines a source on any validation error, a transient storage error included",
		Edits: []Edit{{File: "engine/index/rewrite.go",
			From: `if isDeterministic(err) {`,
			To:   `if err != nil {`}},
		Pkg: "./engine/index", Run: "^TestQ06_",
	},
	{
		Rule: "Q06", Desc: "a failed read of a segment file is reported as corruption (error class swapped): one EIO quarantines a healthy source",
		Edits: []Edit{{File: "engine/segment/loadraw.go",
			From: `
				if err != nil && err != io.EOF {
					return loadedFile{}, fmt.Errorf("segment: read %s: %w", path, err)
				}`,
			To: `
				if err != nil && err != io.EOF {
					return loadedFile{}, corruptf(id, suffix, "read: %v", err)
				}`}},
		Pkg: "./engine/index", Run: "^TestQ06_",
	},
	{
		Rule: "Q07", Desc: "the backoff's 30 min clamp is dropped: the last doubling overshoots to 32 min",
		Edits: []Edit{{File: "engine/optimizer/backoff.go",
			From: `d = min(d, b.Max)`,
			To:   ``}},
		Pkg: "./engine/optimizer", Run: "^TestQ07_",
	},
	{
		Rule: "Q08", Desc: "finish abandons a failed rewrite's output without rechecking metadata",
		Edits: []Edit{{File: "engine/index/rewrite.go",
			From: `
				if live {
					rw.out.Release()
				} else {
					rw.out.Abandon()
				}`,
			To: `rw.out.Abandon()`}},
		Pkg: "./engine/index", Run: "^TestQ08_",
	},
	{
		Rule: "Q08", Desc: "finish rechecks the rewrite's start snapshot instead of the current metadata: an output published just before an error is deleted",
		Edits: []Edit{{File: "engine/index/rewrite.go",
			From: `
				for _, id := range rw.idx.Metadata().IDs() {
					live = live || id == rw.out.ID
				}`,
			To: `
				for _, s := range rw.snap.Segments {
					live = live || s.Meta.ID == rw.out.ID
				}`}},
		Pkg: "./engine/index", Run: "^TestQ08_",
	},
	{
		Rule: "Q09", Desc: "a failed pass backs off from its start, not from its completion",
		Edits: []Edit{
			{File: "engine/optimizer/optimizer.go",
				From: `err := t.Run(ctx, task)`,
				To: `
					started := time.Now()
					err := t.Run(ctx, task)`},
			{File: "engine/optimizer/optimizer.go",
				From: `o.finish(t.Name(), task, err)`,
				To:   `o.finish(t.Name(), task, err, started)`},
			{File: "engine/optimizer/optimizer.go",
				From: `func (o *Optimizer) finish(name string, task Task, err error) {`,
				To:   `func (o *Optimizer) finish(name string, task Task, err error, started time.Time) {`},
			{File: "engine/optimizer/optimizer.go",
				From: `delay := b.Failed(task.Sources, now)`,
				To:   `delay := b.Failed(task.Sources, started)`},
		},
		Pkg: "./engine/optimizer", Run: "^TestQ09_",
	},
	{
		Rule: "Q10", Desc: "reorder validates its source only after building the BP graph from it: corruption fails the costly work first, as a plain error, never quarantined",
		Edits: []Edit{
			{File: "engine/index/reorder.go",
				From: `
					if err := rw.preflight(ctx); err != nil {
						return RewriteResult{}, err
					}`,
				To: ``},
			{File: "engine/index/reorder.go",
				From: `
					g, err := idx.forwardGraph(ctx, src)
					if err != nil {
						return RewriteResult{}, err
					}`,
				To: `
					g, err := idx.forwardGraph(ctx, src)
					if err != nil {
						return RewriteResult{}, err
					}
					if err := rw.preflight(ctx); err != nil {
						return RewriteResult{}, err
					}`},
		},
		Pkg: "./engine/index", Run: "^TestQ10_",
	},
	{
		Rule: "Q10", Desc: "reorder wraps its preflight failure with %v: the quarantine's error class (ErrSourceQuarantined) is lost and callers take it for a transient failure",
		Edits: []Edit{{File: "engine/index/reorder.go",
			From: `
				if err := rw.preflight(ctx); err != nil {
					return RewriteResult{}, err
				}
				src := rw.sources[0]`,
			To: `
				if err := rw.preflight(ctx); err != nil {
					return RewriteResult{}, fmt.Errorf("index: reorder %s: %v", id, err)
				}
				src := rw.sources[0]`}},
		Pkg: "./engine/index", Run: "^TestQ10_",
	},
	{
		// The engine's reader refuses a file set missing a required file, so a writer
		// that skips a file is caught one layer down (Q12); breaking Q11
		// takes the careless "make the forward file optional" change whole.
		Rule: "Q11", Desc: "the forward part becomes optional: a reorder output whose fwd part cannot be written is published without it",
		Edits: []Edit{
			// The parts share buffered writes: the careless change writes
			// the forward part on its own and leaves it out when that
			// write fails.
			{File: "engine/segment/write.go",
				From: `w, err := c.part(suffix)`,
				To: `
					if suffix == SuffixForward {
						if err := c.flush(); err != nil {
							c.abort()
							return Info{}, err
						}
					}
					w, err := c.part(suffix)`},
			{File: "engine/segment/write.go",
				From: `
					c.sealed(w, fi)
					info.Parts = append(info.Parts, fi)`,
				To: `
					c.sealed(w, fi)
					if suffix == SuffixForward && c.flush() != nil {
						c.size -= fi.Size
						continue
					}
					info.Parts = append(info.Parts, fi)`},
			{File: "engine/segment/reader.go",
				From: `if !listed(suffix, parts) && suffix != SuffixSeismic && suffix != SuffixBlockMax {`,
				To:   `if !listed(suffix, parts) && suffix != SuffixSeismic && suffix != SuffixBlockMax && suffix != SuffixForward {`},
			{File: "engine/segment/rows.go",
				From: `payloads[i] = r.file(suffix).payload`,
				To: `
					if f := r.file(suffix); f != nil {
						payloads[i] = f.payload
					}`},
			{File: "engine/segment/columns.go",
				From: `want := func(i int) bool { return s.Fields[i].Reorder && s.Fields[i].IsIndexed() }`,
				To: `
					if payload == nil {
						return make([]fwdCol, len(s.Fields)), nil
					}
					want := func(i int) bool { return s.Fields[i].Reorder && s.Fields[i].IsIndexed() }`},
		},
		Pkg: "./engine/index", Run: "^TestQ11_",
	},
	{
		Rule: "Q12", Desc: "a rewrite output is synced and opened but its validation's failures are ignored",
		Edits: []Edit{
			{File: "engine/segment/validate.go",
				From: `
					if err := r.validate(ctx, true, false); err != nil {
						r.Close()
						return nil, err
					}`,
				To: `_ = r.validate(ctx, true, false)`},
			{File: "engine/segment/validate.go",
				From: `
					if structErr != nil {
						r.Close()
						return nil, structErr
					}`,
				To: `_ = structErr`},
		},
		Pkg: "./engine/index", Run: "^TestQ12_",
	},
	{
		Rule: "Q12", Desc: "a rewrite output is opened with the cheap check instead of the full validation before publication",
		Edits: []Edit{{File: "engine/index/rewrite.go",
			From: `r, err := segment.OpenValidated(ctx, rw.idx.fs, rw.idx.dir, rw.idx.schema, info, rw.idx.readerOptions())`,
			To:   `r, err := segment.Open(rw.idx.fs, rw.idx.dir, rw.idx.schema, info, rw.idx.readerOptions())`}},
		Pkg: "./engine/index", Run: "^TestQ12_",
	},
	{
		Rule: "Q13", Desc: "a budget-truncated BP pass does not count as unconverged",
		Edits: []Edit{{File: "engine/index/reorder.go",
			From: `
				if !res.Converged {
					out.BPUnconvergedPasses++
				}`,
			To: ``}},
		Pkg: "./engine/index", Run: "^TestQ13_",
	},

	// Doctor (R).
	{
		Rule: "R01", Desc: "the doctor saves repaired metadata only when it removed more than one segment",
		Edits: []Edit{{File: "engine/index/doctor.go",
			From: `if len(rep.RemovedSegments) > 0 {`,
			To:   `if len(rep.RemovedSegments) > 1 {`}},
		Pkg: "./engine/index", Run: "^TestR01_",
	},
	{
		Rule: "R02", Desc: "normal writer open runs the doctor first: a segment with a missing file is dropped from metadata at startup",
		Edits: []Edit{{File: "engine/index/index.go",
			From: `
				func Open(fs vfs.FS, dir string, opts Options) (*Index, error) {
					lock, err := lockDir(fs, dir)`,
			To: `
				func Open(fs vfs.FS, dir string, opts Options) (*Index, error) {
					if _, err := Doctor(context.Background(), fs, dir, opts); err != nil && !errors.Is(err, ErrNotFound) {
						return nil, err
					}
					lock, err := lockDir(fs, dir)`}},
		Pkg: "./engine/index", Run: "^TestR02_",
	},

	// Compaction and maintenance (M).
	{
		Rule: "M01", Desc: "merge concatenates the sources' masks without their row base",
		Edits: []Edit{{File: "engine/index/merge.go",
			From: `out.Add(base + it.Next())`,
			To:   `out.Add(it.Next())`}},
		Pkg: "./engine/index", Run: "^TestM01_",
	},
	{
		Rule: "M02", Desc: "a single-source rewrite releases its new mask's claim right after writing it, before metadata owns it",
		Edits: []Edit{{File: "engine/index/rewrite.go",
			From: `masks[maskClaim.ID] = deleted`,
			To: `
				masks[maskClaim.ID] = deleted
				maskClaim.Release()`}},
		Pkg: "./engine/index", Run: "^TestM02_",
	},
	{
		Rule: "M03", Desc: "compaction checks only that its source still has a mask, not that it is the captured generation",
		Edits: []Edit{{File: "engine/index/compact.go",
			From: `if maskID(cur[0]) != captured {`,
			To:   `if maskID(cur[0]) == 0 && captured != 0 {`}},
		Pkg: "./engine/index", Run: "^TestM03_",
	},
	{
		Rule: "M04", Desc: "a background task returns its maintenance permit when it starts, not when it drains",
		Edits: []Edit{{File: "engine/optimizer/optimizer.go",
			From: `defer o.permits.Release()`,
			To:   `o.permits.Release()`}},
		Pkg: "./engine/optimizer", Run: "^TestM04_",
	},
	{
		Rule: "M04", Desc: "a manual maintenance task returns its permit as it starts, not when its blocking work drains",
		Edits: []Edit{{File: "engine/registry/maintenance.go",
			From: `
				defer h.r.permits.Release()
				defer own.Release()`,
			To: `
				h.r.permits.Release()
				defer own.Release()`}},
		Pkg: "./engine/registry", Run: "^TestM06_", Timeout: 90 * time.Second,
	},
	{
		Rule: "M05", Desc: "the completion cooldown is consumed by the first scan that meets it: the next scan, still within the cooldown, starts a task",
		Edits: []Edit{{File: "engine/optimizer/optimizer.go",
			From: `
				if until, ok := o.cooldown[t.Name()]; ok {
					if now.Before(until) {
						o.mu.Unlock()
						return Task{}, false // M05: completion cooldown
					}
					delete(o.cooldown, t.Name())
				}`,
			To: `
				if until, ok := o.cooldown[t.Name()]; ok {
					delete(o.cooldown, t.Name())
					if now.Before(until) {
						o.mu.Unlock()
						return Task{}, false // M05: completion cooldown
					}
				}`}},
		Pkg: "./engine/optimizer", Run: "^TestM05_",
	},
	{
		Rule: "M06", Desc: "the owned maintenance task runs with the client's context: a cancelled client aborts the merge",
		Edits: []Edit{{File: "engine/registry/maintenance.go",
			From: `res, err := op(h.e.ctx, idx)`,
			To:   `res, err := op(ctx, idx)`}},
		Pkg: "./engine/registry", Run: "^TestM06_",
	},
	{
		Rule: "M07", Desc: "offline maintenance closes the registry only when the operation succeeded",
		Edits: []Edit{{File: "engine/registry/offline.go",
			From: `closeErr := r.Close(context.WithoutCancel(ctx))`,
			To: `
				var closeErr error
				if err == nil {
					closeErr = r.Close(context.WithoutCancel(ctx))
				}`}},
		Pkg: "./cmd/summa-server", Run: "^TestM07_",
	},
	{
		Rule: "M08", Desc: "a merge re-encodes its sources' binary IVF runs (coalescing while it merges): runs are not preserved",
		Edits: []Edit{{File: "engine/index/rewrite.go",
			From: `segment.MergeOptions{ReencodeIVF: rw.freshIVF, SeismicBudget: rw.seismicBudget, Unsynced: true})`,
			To:   `segment.MergeOptions{ReencodeIVF: rw.freshIVF || rw.kind == "merge", SeismicBudget: rw.seismicBudget, Unsynced: true})`}},
		Pkg: "./engine/index", Run: "^TestM08_",
	},
	{
		Rule: "M09", Desc: "publication carries the source's persisted Seismic debt instead of reading the output's: a productive pass counts as a stall",
		Edits: []Edit{{File: "engine/index/rewrite.go",
			From: `out.Seismic = rw.seismicDebt(cur, r.SeismicPendingTerms())`,
			To:   `out.Seismic = rw.seismicDebt(cur, cur[0].SeismicPending())`}},
		Pkg: "./engine/index", Run: "^TestM09_",
	},
	{
		Rule: "M10", Desc: "coalescing selection infers the debt from the run count instead of the persisted fragmentation bit",
		Edits: []Edit{{File: "engine/optimizer/policy_ivf.go",
			From: `if s.IVFFragmented() {`,
			To:   `if len(s.IVF) > 0 && s.IVF[0].Runs > 1 {`}},
		Pkg: "./engine/optimizer", Run: "^TestM10_",
	},
	{
		Rule: "M10", Desc: "coalescing selection takes any segment with a binary vector field, not only one whose metadata records fragmentation",
		Edits: []Edit{{File: "engine/optimizer/policy_ivf.go",
			From: `if s.IVFFragmented() {`,
			To:   `if len(s.IVF) > 0 {`}},
		Pkg: "./engine/optimizer", Run: "^TestM10_",
	},
	{
		Rule: "M11", Desc: "compaction no longer carries the source's BP flags and counters",
		Edits: []Edit{{File: "engine/index/compact.go",
			From: `rw.decorate = keepBPState`,
			To:   ``}},
		Pkg: "./engine/index", Run: "^TestM11_",
	},
	// Read followers (F).
	{
		Rule: "F01", Desc: "a hold's time to live never ends it: a follower that died keeps retired files on the leader forever",
		Edits: []Edit{{File: "engine/replication/hold.go",
			From: `h.timer = time.AfterFunc(hs.ttl, func() { hs.end(id) })`,
			To:   `h.timer = time.AfterFunc(hs.ttl, func() {})`}},
		Pkg: "./engine/replication", Run: "^TestF01_",
	},
	{
		Rule: "F02", Desc: "a follower downloads into IDs it has not claimed: the orphan sweep may take a partial copy",
		Edits: []Edit{{File: "engine/index/replica.go",
			From: `claims, err := idx.mgr.ClaimIncoming("replica", ids...)`,
			To:   `claims, err := idx.mgr.ClaimIncoming("replica")`}},
		Pkg: "./engine/index", Run: "^TestF02_",
	},
	{
		Rule: "F03", Desc: "a new segment's files are published after the cheap open only, without the full validation",
		Edits: []Edit{{File: "engine/index/replica.go",
			From: `if err := segment.Validate(ctx, idx.fs, idx.dir, in.next.Schema, s.Info); err != nil {`,
			To:   `if err := ctx.Err(); err != nil {`}},
		Pkg: "./engine/index", Run: "^TestF03_",
	},
	{
		Rule: "F03", Desc: "the downloaded files are not synced with the metadata save: a crash image names empty files",
		Edits: []Edit{{File: "engine/index/replica.go",
			From: `unsynced: unsynced,`,
			To:   `unsynced: nil,`}, {File: "engine/index/replica.go",
			From: `started:  started,`,
			To:   `started:  nil,`}},
		Pkg: "./engine/index", Run: "^TestF03_",
	},
	{
		Rule: "F04", Desc: "the follower numbers the copied generation itself instead of keeping the leader's",
		Edits: []Edit{{File: "engine/index/replica.go",
			From: `next := in.next.Clone()`,
			To: `next := in.next.Clone()
				next.Generation = idx.Metadata().Generation + 1`}},
		Pkg: "./engine/index", Run: "^TestF04_",
	},
	{
		Rule: "F05", Desc: "the read-only guard is dropped from the write routes of a follower",
		Edits: []Edit{{File: "engine/server/replication.go",
			From: `if s.follower != nil {`,
			To:   `if false && s.follower != nil {`}},
		Pkg: "./engine/server", Run: "^TestF05_",
	},
}
