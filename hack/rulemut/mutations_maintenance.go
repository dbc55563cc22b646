package main

import "time"

// maintenanceMutations break the rules Mxx (compaction and maintenance).
var maintenanceMutations = []Mutation{
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
}
