package main

import "time"

// deletionMutations break the rules Dxx (index deletion).
var deletionMutations = []Mutation{
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
}
