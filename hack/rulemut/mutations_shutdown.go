package main

import "time"

// shutdownMutations break the rules Sxx (cancellation and shutdown).
var shutdownMutations = []Mutation{
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
}
