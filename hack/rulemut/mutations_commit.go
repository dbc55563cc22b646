package main

import "time"

// giveUpAbandons is where a commit gives its generation up (C05), the
// snippet of two mutations: the commit flush's outputs and the
// generation's earlier buffer-full ones are both abandoned before the
// retry.
const giveUpAbandons = `
	abandonAll(job.takeResults())
	abandonAll(job.gen.takePrepared())
	w.retry(job.gen)`

// commitMutations break the rules Cxx (commit point).
var commitMutations = []Mutation{
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
}
