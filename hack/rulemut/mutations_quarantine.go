package main

// quarantineMutations break the rules Qxx (orphans, corruption, quarantine).
var quarantineMutations = []Mutation{
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
}
