package registry

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/metadata"
)

// Doctor reports. A doctor run given a report ID keeps its whole JSON
// report in the data directory, at DIR/.summa-doctor/<id>.json, so that
// a report of any size survives the run (a Kubernetes termination message
// holds 4 KiB) and the server can hand it out later
// (GET /v1/admin/doctor-reports/{id}). The directory is not an index: its
// name is not a valid index name, so open, the doctor and backups leave it
// alone, and it is not trash. At most MaxDoctorReports reports are kept;
// saving one removes the oldest beyond that.

// DoctorReportsDir is the directory of the doctor's reports in a data
// directory.
const DoctorReportsDir = ".summa-doctor"

// MaxDoctorReports bounds the reports kept in DoctorReportsDir.
const MaxDoctorReports = 32

// doctorReportSuffix ends every report's file name.
const doctorReportSuffix = ".json"

// doctorReportTemp ends a report being written; one found later is the
// leftover of a crash and is removed.
const doctorReportTemp = ".tmp"

// ErrDoctorReportNotFound: no report of that ID is kept.
var ErrDoctorReportNotFound = errors.New("registry: doctor report not found")

// ErrInvalidReportID: a report ID is not a DNS-1123 label.
var ErrInvalidReportID = errors.New("registry: invalid doctor report id (lowercase letters, digits and '-', at most 63 characters)")

// ValidReportID reports whether id may name a doctor report: a DNS-1123
// label (as a SummaIndex's spec.doctor.requestId), so it is also a safe
// file name.
func ValidReportID(id string) bool {
	return len(id) <= 63 && dnsLabel.MatchString(id)
}

// SaveDoctorReport stores data as the report id of the data directory dir,
// atomically: a reader (or a crash) sees the whole report or none of it.
// Reports beyond the newest MaxDoctorReports are then removed.
func SaveDoctorReport(fs vfs.FS, dir, id string, data []byte) error {
	if !ValidReportID(id) {
		return fmt.Errorf("%w: %q", ErrInvalidReportID, id)
	}
	rdir := fs.PathJoin(dir, DoctorReportsDir)
	if err := fs.MkdirAll(rdir, 0o755); err != nil {
		return fmt.Errorf("registry: doctor report: create %s: %w", rdir, err)
	}
	// The new directory's entry is durable before a report is named in it.
	if err := metadata.SyncDir(fs, dir); err != nil {
		return fmt.Errorf("registry: doctor report: %w", err)
	}
	tmp := fs.PathJoin(rdir, id+doctorReportSuffix+doctorReportTemp)
	if err := writeFileSynced(fs, tmp, data); err != nil {
		_ = fs.Remove(tmp)
		return err
	}
	if err := fs.Rename(tmp, fs.PathJoin(rdir, id+doctorReportSuffix)); err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("registry: doctor report: rename %s: %w", tmp, err)
	}
	// Sync the directory so that a crash cannot undo the rename: the
	// operator reads the report after this process exited 0.
	if err := metadata.SyncDir(fs, rdir); err != nil {
		return fmt.Errorf("registry: doctor report: %w", err)
	}
	return pruneDoctorReports(fs, rdir, id)
}

// writeFileSynced writes data to a new file and fsyncs it.
func writeFileSynced(fs vfs.FS, path string, data []byte) error {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("registry: doctor report: create %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("registry: doctor report: write %s: %w", path, err)
	}
	// Sync before the rename: otherwise a crash after the rename could
	// leave the report's name on an empty or partial file.
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("registry: doctor report: fsync %s: %w", path, err)
	}
	return f.Close()
}

// pruneDoctorReports removes leftover temporary files and the oldest
// reports beyond MaxDoctorReports, never keep.
func pruneDoctorReports(fs vfs.FS, rdir, keep string) error {
	names, err := fs.List(rdir)
	if err != nil {
		return fmt.Errorf("registry: doctor report: list %s: %w", rdir, err)
	}
	type report struct {
		name string
		mod  int64
	}
	var reports []report
	removed := false
	for _, name := range names {
		path := fs.PathJoin(rdir, name)
		switch {
		case strings.HasSuffix(name, doctorReportTemp):
			if err := fs.Remove(path); err != nil {
				return fmt.Errorf("registry: doctor report: remove %s: %w", path, err)
			}
			removed = true
		case strings.HasSuffix(name, doctorReportSuffix) && name != keep+doctorReportSuffix:
			st, err := fs.Stat(path)
			if err != nil {
				return fmt.Errorf("registry: doctor report: %w", err)
			}
			reports = append(reports, report{name: name, mod: st.ModTime().UnixNano()})
		}
	}
	sort.Slice(reports, func(i, j int) bool { return reports[i].mod > reports[j].mod })
	for i := MaxDoctorReports - 1; i < len(reports); i++ {
		path := fs.PathJoin(rdir, reports[i].name)
		if err := fs.Remove(path); err != nil {
			return fmt.Errorf("registry: doctor report: remove %s: %w", path, err)
		}
		removed = true
	}
	if !removed {
		return nil
	}
	// Removals are housekeeping: a crash that brings one back is harmless,
	// but syncing keeps the count bounded across crashes too.
	return metadata.SyncDir(fs, rdir)
}

// LoadDoctorReport returns the report id of the data directory dir.
func LoadDoctorReport(fs vfs.FS, dir, id string) ([]byte, error) {
	if !ValidReportID(id) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidReportID, id)
	}
	path := fs.PathJoin(dir, DoctorReportsDir, id+doctorReportSuffix)
	f, err := fs.Open(path)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrDoctorReportNotFound, id)
		}
		return nil, fmt.Errorf("registry: doctor report: open %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("registry: doctor report: read %s: %w", path, err)
	}
	return data, nil
}

// DoctorReport returns the report id of the registry's data directory.
func (r *Registry) DoctorReport(id string) ([]byte, error) {
	return LoadDoctorReport(r.fs, r.dir, id)
}
