package registry

import (
	"context"
	"fmt"
	"sort"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/index"
)

// DoctorReport is the report of a doctor run over a data directory (its
// JSON form is client.DoctorReport, written by summa-server --doctor).
type DoctorReport struct {
	// Indexes has one entry per index, sorted by name.
	Indexes []IndexDoctorReport
}

// IndexDoctorReport is one index's part of the report.
type IndexDoctorReport struct {
	// Name is the index name.
	Name string
	index.DoctorReport
	// Error is set when the index could not be repaired.
	Error string
}

// Doctor repairs every index of a data directory offline (R01). It takes
// the data-directory lock, so it fails fast beside a running server, and
// finishes interrupted deletions as startup does. A per-index failure is
// reported in the index's entry and in the returned error.
func Doctor(ctx context.Context, fs vfs.FS, dir string, opts Options) (DoctorReport, error) {
	rep := DoctorReport{Indexes: []IndexDoctorReport{}}
	lock, err := LockDataDir(fs, dir)
	if err != nil {
		return rep, err
	}
	defer lock.Close()
	names, err := fs.List(dir)
	if err != nil {
		return rep, fmt.Errorf("registry: doctor: list %s: %w", dir, err)
	}
	sort.Strings(names)
	r := &Registry{fs: fs, dir: dir, log: opts.Logger}
	if r.log.GetSink() == nil {
		r.log = logr.Discard()
	}
	if err := r.removeTrash(names); err != nil {
		return rep, err
	}
	var failed int
	for _, name := range names {
		if !ValidIndexName(name) {
			continue
		}
		idir := fs.PathJoin(dir, name)
		if st, err := fs.Stat(idir); err != nil || !st.IsDir() {
			continue
		}
		// D03: finish a deletion that a crash interrupted, as startup does.
		if marked, err := r.finishMarkedRemoval(idir); err != nil {
			return rep, fmt.Errorf("registry: doctor: finish the interrupted deletion of index %s: %w", name, err)
		} else if marked {
			continue
		}
		ir, err := index.Doctor(ctx, fs, idir, opts.Index)
		if err == index.ErrNotFound {
			continue
		}
		entry := IndexDoctorReport{Name: name, DoctorReport: ir}
		if err != nil {
			entry.Error = err.Error()
			failed++
		}
		rep.Indexes = append(rep.Indexes, entry)
	}
	if failed > 0 {
		return rep, fmt.Errorf("registry: doctor could not repair %d index(es)", failed)
	}
	return rep, nil
}
