package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
)

// OfflineOp is an offline maintenance operation of the CLI (M07).
type OfflineOp struct {
	// Kind is "merge", "compact" or "reorder".
	Kind string
	// Index names the index; empty means every index.
	Index string
	// MaxSegments is the merge's target segment count (at least 1).
	MaxSegments int
}

// OfflineReport is the report of an offline maintenance run (summa-server
// merge|compact|reorder prints it as JSON).
type OfflineReport struct {
	// Operation is the op's kind.
	Operation string
	// Indexes has one entry per index the op ran on, in name order.
	Indexes []OfflineIndexReport
}

// OfflineIndexReport is one index's part of the report.
type OfflineIndexReport struct {
	// Name is the index name.
	Name string
	// Results are the published replacements (none when nothing was due).
	Results []OfflineResult
	// Error is set when the operation failed on this index.
	Error string
	// After is what the index still ran or held once the registry closed:
	// workers stopped, no snapshot, claim or deferred deletion left.
	After index.Quiescence
}

// OfflineResult is one published replacement.
type OfflineResult struct {
	// Generation is the published metadata generation.
	Generation uint64
	// Sources are the replaced segments.
	Sources []string
	// Output is the new segment.
	Output string
	// Documents is the output's physical row count.
	Documents uint32
	// BPConverged reports whether a reorder pass converged.
	BPConverged bool
}

func offlineResult(r index.RewriteResult) OfflineResult {
	out := OfflineResult{Generation: r.Generation, Output: r.Output.String(), Documents: r.Documents,
		BPConverged: r.BPConverged, Sources: []string{}}
	for _, s := range r.Sources {
		out.Sources = append(out.Sources, s.String())
	}
	return out
}

// ErrCleanupIncomplete: after the registry closed, an index still had
// running workers, open snapshots, claims or pending deletions.
var ErrCleanupIncomplete = errors.New("registry: offline maintenance: cleanup incomplete at exit")

// RunOffline runs one maintenance operation over an offline data directory
// (M07). It takes the data-directory lock like the doctor (ErrDataDirLocked
// beside a server), runs no background optimizer, and, on success and on
// failure alike, closes the registry before returning: accepted commits
// end, indexing workers are joined, every snapshot is released and
// deferred deletions of retired sources drain. The report's After fields
// are read from the engine after that close.
func RunOffline(ctx context.Context, fs vfs.FS, dir string, opts Options, op OfflineOp) (rep OfflineReport, err error) {
	rep = OfflineReport{Operation: op.Kind, Indexes: []OfflineIndexReport{}}
	if _, statErr := fs.Stat(dir); statErr != nil {
		return rep, fmt.Errorf("registry: offline %s: data directory: %w", op.Kind, statErr)
	}
	opts.Optimizer.Threads = 0
	r, err := Open(fs, dir, opts)
	if err != nil {
		return rep, err
	}
	var indexes []*index.Index
	defer func() {
		// Closed on success and failure: workers stop, snapshots are
		// released and cleanup is awaited before the command exits.
		closeErr := r.Close(context.WithoutCancel(ctx))
		quiet := true
		for i, idx := range indexes {
			rep.Indexes[i].After = idx.Quiescence()
			quiet = quiet && rep.Indexes[i].After.Quiet()
		}
		if !quiet {
			closeErr = errors.Join(closeErr, ErrCleanupIncomplete)
		}
		err = errors.Join(err, closeErr)
	}()
	names := r.Names()
	if op.Index != "" {
		names = []string{op.Index}
	}
	var failed int
	for _, name := range names {
		entry, idx, opErr := r.runOffline(ctx, name, op)
		if idx == nil {
			return rep, opErr
		}
		indexes = append(indexes, idx)
		if opErr != nil {
			entry.Error = opErr.Error()
			failed++
		}
		rep.Indexes = append(rep.Indexes, entry)
	}
	if failed > 0 {
		return rep, fmt.Errorf("registry: offline %s failed on %d index(es)", op.Kind, failed)
	}
	return rep, nil
}

// runOffline runs op on one index through its handle, as the API would.
// It returns a nil index when the index cannot be acquired.
func (r *Registry) runOffline(ctx context.Context, name string, op OfflineOp) (OfflineIndexReport, *index.Index, error) {
	entry := OfflineIndexReport{Name: name, Results: []OfflineResult{}}
	h, err := r.Acquire(name)
	if err != nil {
		return entry, nil, fmt.Errorf("registry: offline %s of %s: %w", op.Kind, name, err)
	}
	defer h.Release()
	idx, err := h.Index()
	if err != nil {
		return entry, nil, fmt.Errorf("registry: offline %s of %s: %w", op.Kind, name, err)
	}
	var res index.RewriteResult
	switch op.Kind {
	case "merge":
		res, err = h.Merge(ctx, max(op.MaxSegments, 1))
	case "compact":
		res, err = h.Compact(ctx)
	case "reorder":
		var all []index.RewriteResult
		all, err = h.Reorder(ctx)
		for _, res := range all {
			entry.Results = append(entry.Results, offlineResult(res))
		}
		if op.Index == "" && errors.Is(err, index.ErrNoReorderFields) {
			err = nil // every index: those without reorder fields have nothing to do
		}
	default:
		return entry, idx, fmt.Errorf("registry: unknown offline operation %q", op.Kind)
	}
	if errors.Is(err, index.ErrNothingToDo) {
		err = nil
	}
	if err == nil && res.Output != 0 {
		entry.Results = append(entry.Results, offlineResult(res))
	}
	return entry, idx, err
}
