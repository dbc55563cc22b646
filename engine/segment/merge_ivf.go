package segment

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// MergeOptions change how Merge writes some file kinds.
type MergeOptions struct {
	// ReencodeIVF encodes every binary field's vectors into one fresh run
	// (coalescing maintenance) instead of concatenating the sources' runs.
	ReencodeIVF bool
	// SeismicBudget is MergeSeismic's budget (-1: place nothing new; 0:
	// no bound).
	SeismicBudget int64
	// Unsynced writes the output without its fsync (WriteUnsynced): the
	// caller must sync its files before any metadata references them, as
	// OpenValidated does while it validates them.
	Unsynced bool
}

// MergeWith is Merge with options.
func MergeWith(ctx context.Context, fs vfs.FS, dir string, id segid.ID, s *schema.Schema, sources []*Reader, order []DocRef, opts MergeOptions) (Info, error) {
	m, err := newMerger(ctx, s, sources, order)
	if err != nil {
		return Info{}, err
	}
	m.opts = opts
	m.seismicBudget = opts.SeismicBudget
	return m.run(fs, dir, id)
}

// mergeIVF concatenates the sources' encoded runs with doc ids rebased
// through newID (M08: merges preserve encoded runs; nothing is
// re-encoded), unless the options ask for a fresh encoding, which Write
// then makes from the dense vectors mergeVectors copied.
func (m *merger) mergeIVF() error {
	if m.opts.ReencodeIVF || !hasIVFFields(m.s) {
		return nil
	}
	srcs := make([]IVFSource, len(m.srcs))
	for i, r := range m.srcs {
		ids := m.newID[i]
		srcs[i] = IVFSource{Reader: r, Remap: func(doc uint32) (uint32, bool) {
			if int(doc) >= len(ids) || ids[doc] == noDoc {
				return 0, false
			}
			return ids[doc], true
		}}
	}
	if err := m.ctx.Err(); err != nil {
		return fmt.Errorf("segment: merge ivf: %w", err)
	}
	m.b.ConcatIVFRuns(srcs)
	return nil
}
