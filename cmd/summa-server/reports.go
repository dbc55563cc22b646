package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/summadev/summa/engine/backup"
	"github.com/summadev/summa/engine/registry"
)

// The JSON reports the offline commands print (docs/server.md). The
// engine's packages keep plain structs; these types give them their JSON
// names, and each entry converts from its engine struct (a conversion
// that stops compiling when the two drift apart). The doctor's report is
// served by the API too, so its JSON type is client.DoctorReport (see
// server.DoctorReport).

// maintainOutput is the JSON report of an offline maintenance command.
type maintainOutput struct {
	// Operation is "merge", "compact" or "reorder".
	Operation string `json:"operation"`
	// Indexes has one entry per index the operation ran on, in name order.
	Indexes []maintainIndexOutput `json:"indexes"`
	// Error is set when the command did not complete.
	Error string `json:"error,omitempty"`
}

// maintainIndexOutput is one index's part of a maintenance report.
type maintainIndexOutput struct {
	// Name is the index name.
	Name string `json:"name"`
	// Results are the published replacements (none when nothing was due).
	Results []maintainResult `json:"results"`
	// Error is set when the operation failed on this index.
	Error string `json:"error,omitempty"`
	// After is what the index still ran or held once the registry closed.
	After quiescence `json:"after"`
}

// maintainResult is one published replacement (registry.OfflineResult).
type maintainResult struct {
	// Generation is the published metadata generation.
	Generation uint64 `json:"generation"`
	// Sources are the replaced segments.
	Sources []string `json:"sources"`
	// Output is the new segment.
	Output string `json:"output"`
	// Documents is the output's physical row count.
	Documents uint32 `json:"documents"`
	// BPConverged reports whether a reorder pass converged.
	BPConverged bool `json:"bpConverged,omitempty"`
}

// quiescence is what an index still ran or held at exit
// (index.Quiescence).
type quiescence struct {
	// Closed is set once Close started.
	Closed bool `json:"closed"`
	// WorkersStopped is set once the indexing workers were joined.
	WorkersStopped bool `json:"workersStopped"`
	// OpenSnapshots counts snapshots not yet released.
	OpenSnapshots int `json:"openSnapshots"`
	// ActiveOperations counts active-operation claims.
	ActiveOperations int `json:"activeOperations"`
	// PendingDeletions counts retired IDs whose files are not deleted yet.
	PendingDeletions int `json:"pendingDeletions"`
}

// newMaintainOutput is the report of rep; errText is the command's error
// ("" when it completed).
func newMaintainOutput(rep registry.OfflineReport, errText string) maintainOutput {
	out := maintainOutput{Operation: rep.Operation, Indexes: make([]maintainIndexOutput, 0, len(rep.Indexes)), Error: errText}
	for _, ir := range rep.Indexes {
		entry := maintainIndexOutput{Name: ir.Name, Results: make([]maintainResult, 0, len(ir.Results)),
			Error: ir.Error, After: quiescence(ir.After)}
		for _, r := range ir.Results {
			entry.Results = append(entry.Results, maintainResult(r))
		}
		out.Indexes = append(out.Indexes, entry)
	}
	return out
}

// backupOutput is the backup's JSON report.
type backupOutput struct {
	// Indexes has one entry per copied index, sorted by name.
	Indexes []backupIndexOutput `json:"indexes"`
	// Bytes is the total size of the copied files.
	Bytes int64 `json:"bytes"`
	// Error is set when the backup did not complete.
	Error string `json:"error,omitempty"`
}

// backupIndexOutput is one copied index (backup.IndexReport).
type backupIndexOutput struct {
	// Name is the index name.
	Name string `json:"name"`
	// Files counts the copied files, metadata.json included.
	Files int `json:"files"`
	// Bytes is the size of the copied files.
	Bytes int64 `json:"bytes"`
	// Generation is the copied metadata generation.
	Generation uint64 `json:"generation"`
}

// newBackupOutput is the report of rep; errText is the backup's error
// ("" when it completed).
func newBackupOutput(rep backup.Report, errText string) backupOutput {
	out := backupOutput{Indexes: make([]backupIndexOutput, 0, len(rep.Indexes)), Bytes: rep.Bytes, Error: errText}
	for _, ir := range rep.Indexes {
		out.Indexes = append(out.Indexes, backupIndexOutput(ir))
	}
	return out
}

// writeReport prints out, a command's JSON report, on stdout and writes it
// to reportFile when set; it returns the exit code: code, or exitFailure
// when the report could not be written.
func writeReport(cmd string, out any, code int, reportFile string, stdout, stderr io.Writer) int {
	data, err := json.Marshal(out)
	if err != nil {
		fmt.Fprintf(stderr, "summa-server: %s: encode the report: %v\n", cmd, err)
		return exitFailure
	}
	data = append(data, '\n')
	if _, err := stdout.Write(data); err != nil {
		return exitFailure
	}
	if reportFile != "" {
		if err := os.WriteFile(reportFile, data, 0o644); err != nil {
			fmt.Fprintf(stderr, "summa-server: %s: write the report to %s: %v\n", cmd, reportFile, err)
			if code == exitOK {
				code = exitFailure
			}
		}
	}
	return code
}
