package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/backup"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
)

// backupConfig is the command line of `summa-server backup`.
type backupConfig struct {
	// DataDir is the data directory to copy (required).
	DataDir string
	// To is the new backup directory: absent or empty (required).
	To string
	// ReportFile also receives the JSON report.
	ReportFile string
	// LogVerbosity is the logr verbosity.
	LogVerbosity int
}

// backupUsage is the first line of the backup command's usage.
const backupUsage = "summa-server backup --data-dir DIR --to DEST [--report-file PATH]"

// parseBackupFlags reads the command line after "backup", then fills every
// flag not given there from SUMMA_<FLAG_IN_CAPS>, as the server's flags.
func parseBackupFlags(args []string, getenv func(string) string, stderr io.Writer) (backupConfig, error) {
	var cfg backupConfig
	fs := commandFlags("summa-server backup", "Usage:\n  "+backupUsage+"\n\n"+
		"Copies the committed state of every index of an offline data directory into DEST, which\n"+
		"must not exist or be empty, and prints a JSON report. Fails with exit 2, touching nothing,\n"+
		"while a server or doctor uses the data directory or when DEST is not empty.\n"+envNote, stderr)
	fs.StringVar(&cfg.DataDir, "data-dir", "", "data directory to copy (required; the server must be stopped)")
	fs.StringVar(&cfg.To, "to", "", "backup directory to create; must not exist or be empty (required)")
	reportFlags(fs, &cfg.ReportFile, &cfg.LogVerbosity)
	if err := parseCommandLine(fs, args, getenv, "backup"); err != nil {
		return cfg, err
	}
	return cfg, firstBroken(required("backup", "data-dir", cfg.DataDir), required("backup", "to", cfg.To))
}

// runBackup copies the data directory offline and prints one JSON report
// on stdout (and to --report-file). It exits 0 when the copy is complete;
// 2, touching nothing, when another process holds the data directory, the
// data directory does not exist or the destination is not empty; 1 when
// the copy failed (what it had written is removed).
func runBackup(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "prune" {
		return runBackupPrune(args[1:], getenv, stdout, stderr)
	}
	cfg, err := parseBackupFlags(args, getenv, stderr)
	return offlineCommand(err, cfg.LogVerbosity, stderr, func(ctx context.Context, log logr.Logger) int {
		return backupDataDir(ctx, cfg, log, stdout, stderr)
	})
}

// backupDataDir is the backup command once its flags are parsed.
func backupDataDir(ctx context.Context, cfg backupConfig, log logr.Logger, stdout, stderr io.Writer) int {
	var rep backup.Report
	var errText string
	code := exitOK
	fail := func(c int, err error, hint string) {
		code, errText = c, err.Error()
		fmt.Fprintf(stderr, "summa-server: %v%s\n", err, hint)
	}
	const untouched = " (nothing was touched)"
	// Refusals first, before anything is created, locked or truncated.
	if err := backup.CheckDestination(vfs.Default, cfg.To); err != nil {
		fail(backupExitCode(err), err, untouched)
	} else if st, err := os.Stat(cfg.DataDir); err != nil || !st.IsDir() {
		if err == nil {
			err = fmt.Errorf("%s is not a directory", cfg.DataDir)
		}
		fail(exitUsage, fmt.Errorf("backup: data directory: %w", err), untouched)
	} else if err := probeLock(cfg.DataDir); err != nil {
		fail(backupExitCode(err), fmt.Errorf("backup: %w", err), "; stop the server first"+untouched)
	} else {
		var err error
		rep, err = backup.Run(ctx, vfs.Default, cfg.DataDir, cfg.To, backup.Options{Logger: log.WithName("backup")})
		if err != nil {
			hint := ""
			if backupExitCode(err) == exitUsage {
				hint = " (nothing was copied)"
			}
			fail(backupExitCode(err), err, hint)
		}
	}
	return writeBackupReport(newBackupOutput(rep, errText), code, cfg.ReportFile, log, stdout, stderr)
}

// backupExitCode is 2 for the refusals that touch nothing, 1 otherwise.
func backupExitCode(err error) int {
	if errors.Is(err, registry.ErrDataDirLocked) || errors.Is(err, index.ErrLocked) ||
		errors.Is(err, backup.ErrDestinationNotEmpty) {
		return exitUsage
	}
	return exitFailure
}

// writeBackupReport prints the report and writes it to reportFile; it
// returns the exit code.
func writeBackupReport(out backupOutput, code int, reportFile string, log logr.Logger, stdout, stderr io.Writer) int {
	code = writeReport("backup", out, code, reportFile, stdout, stderr)
	if code == exitOK {
		log.Info("Backup complete", "indexes", len(out.Indexes), "bytes", out.Bytes)
	}
	return code
}
