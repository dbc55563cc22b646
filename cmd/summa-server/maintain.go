package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
)

// maintainConfig is the command line of `summa-server merge|compact|reorder`.
type maintainConfig struct {
	// Op is the operation.
	Op registry.OfflineOp
	// DataDir is the offline data directory (required).
	DataDir string
	// ReportFile also receives the JSON report.
	ReportFile string
	// LogVerbosity is the logr verbosity.
	LogVerbosity int
	// IndexingWorkers is the number of indexing workers each opened index
	// starts (they only flush what a crash left uncommitted: nothing).
	IndexingWorkers int
	// BPTimeBudget and BPMemoryBudgetMB budget every reorder pass.
	BPTimeBudget     time.Duration
	BPMemoryBudgetMB int
}

// maintainHelp describes each offline maintenance command.
var maintainHelp = map[string]string{
	"merge":   "Force-merges each index (or --index) down to --max-segments segments.",
	"compact": "Rewrites the segment with the most deleted rows of each index (or --index) without them.",
	"reorder": "Runs one BP reorder pass over every segment of each index (or --index) that has reorder fields.",
}

// parseMaintainFlags reads the command line after the command name, then
// fills every flag not given there from SUMMA_<FLAG_IN_CAPS>.
func parseMaintainFlags(kind string, args []string, getenv func(string) string, stderr io.Writer) (maintainConfig, error) {
	cfg := maintainConfig{Op: registry.OfflineOp{Kind: kind}}
	fs := commandFlags("summa-server "+kind, fmt.Sprintf("Usage:\n  summa-server %s --data-dir DIR [--index NAME] [--report-file PATH]\n\n%s\n"+
		"Offline, like --doctor: fails with exit 2, touching nothing, while a server or another command\n"+
		"holds the data directory. Before it exits, on success and on failure, it stops the indexing\n"+
		"workers, releases every snapshot and waits for the deletion of replaced segments; the JSON\n"+
		"report on stdout shows that state per index (\"after\").\n", kind, maintainHelp[kind])+envNote, stderr)
	fs.StringVar(&cfg.DataDir, "data-dir", "", "data directory (required; the server must be stopped)")
	fs.StringVar(&cfg.Op.Index, "index", "", "the index to maintain (default: every index)")
	reportFlags(fs, &cfg.ReportFile, &cfg.LogVerbosity)
	fs.IntVar(&cfg.IndexingWorkers, "indexing-workers", 1, "indexing workers per opened index")
	if kind == "merge" {
		fs.IntVar(&cfg.Op.MaxSegments, "max-segments", 1, "merge down to at most this many segments")
	}
	if kind == "reorder" {
		fs.DurationVar(&cfg.BPTimeBudget, "bp-time-budget", 60*time.Second, "wall-clock budget of each BP pass")
		fs.IntVar(&cfg.BPMemoryBudgetMB, "bp-memory-budget-mb", 256, "memory budget of each BP pass's graph, in MiB")
	}
	if err := parseCommandLine(fs, args, getenv, kind); err != nil {
		return cfg, err
	}
	return cfg, firstBroken(
		required(kind, "data-dir", cfg.DataDir),
		flagCheck{cfg.Op.Index != "" && !registry.ValidIndexName(cfg.Op.Index), fmt.Errorf("%s: --index %q is not a valid index name", kind, cfg.Op.Index)},
		rule(kind == "merge" && cfg.Op.MaxSegments < 1, "merge: --max-segments must be at least 1"),
		rule(cfg.IndexingWorkers < 1, kind+": --indexing-workers must be at least 1"),
	)
}

// runMaintain runs `summa-server merge|compact|reorder`: offline
// maintenance for a Job in a maintenance window (M07). It exits 0 when the
// operation completed and every index was closed cleanly; 2, touching
// nothing, when another process holds the data directory or the flags are
// wrong; 1 when the operation or its cleanup failed. Either way the
// registry was closed first (workers stopped, snapshots released, cleanup
// awaited).
func runMaintain(kind string, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseMaintainFlags(kind, args, getenv, stderr)
	return offlineCommand(err, cfg.LogVerbosity, stderr, func(ctx context.Context, log logr.Logger) int {
		return maintainDataDir(ctx, kind, cfg, log, stdout, stderr)
	})
}

// maintainDataDir is the maintenance command kind once its flags are
// parsed.
func maintainDataDir(ctx context.Context, kind string, cfg maintainConfig, log logr.Logger, stdout, stderr io.Writer) int {
	rep := registry.OfflineReport{Operation: kind}
	var errText string
	code := exitOK
	if st, err := os.Stat(cfg.DataDir); err != nil || !st.IsDir() {
		if err == nil {
			err = fmt.Errorf("%s is not a directory", cfg.DataDir)
		}
		code, errText = exitUsage, fmt.Sprintf("%s: data directory: %v", kind, err)
	} else if err := probeLock(cfg.DataDir); err != nil {
		code, errText = maintainExitCode(err), fmt.Sprintf("%s: %v", kind, err)
		fmt.Fprintf(stderr, "summa-server: %s; stop the server first (nothing was touched)\n", errText)
	} else {
		var err error
		rep, err = registry.RunOffline(ctx, vfs.Default, cfg.DataDir, registry.Options{
			Logger: log.WithName(kind),
			Index:  index.Options{Logger: log.WithName(kind), IndexingWorkers: cfg.IndexingWorkers},
			Reorder: index.ReorderOptions{TimeBudget: cfg.BPTimeBudget,
				MemoryBudgetBytes: int64(cfg.BPMemoryBudgetMB) << 20},
		}, cfg.Op)
		if err != nil {
			code, errText = maintainExitCode(err), err.Error()
			fmt.Fprintf(stderr, "summa-server: %s: %v\n", kind, err)
		}
	}
	return writeMaintainReport(newMaintainOutput(rep, errText), code, cfg.ReportFile, stdout, stderr)
}

// maintainExitCode is 2 for a locked data directory, 1 otherwise.
func maintainExitCode(err error) int {
	if errors.Is(err, registry.ErrDataDirLocked) || errors.Is(err, index.ErrLocked) {
		return exitUsage
	}
	return exitFailure
}

// writeMaintainReport prints the report and writes it to reportFile; it
// returns the exit code.
func writeMaintainReport(out maintainOutput, code int, reportFile string, stdout, stderr io.Writer) int {
	return writeReport(out.Operation, out, code, reportFile, stdout, stderr)
}
