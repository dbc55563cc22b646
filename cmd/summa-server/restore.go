package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/s3backup"
)

// restoreUsage is the first line of the restore command's usage.
const restoreUsage = "summa-server restore --data-dir DIR --index NAME [--from-index SOURCE] [--backup ID] --s3-endpoint URL --s3-bucket B --s3-credentials-file F [--s3-*]"

// restoreConfig is the command line of `summa-server restore`.
type restoreConfig struct {
	// DataDir is the data directory to fill: absent or empty (required).
	DataDir string
	// Index is the restored index's name (required).
	Index string
	// FromIndex is the backed-up index's name; empty means Index.
	FromIndex string
	// Backup is the backup ID; empty means the newest.
	Backup string
	// ReportFile also receives the JSON report.
	ReportFile string
	// S3 is the object store.
	S3 s3backup.Config
	// LogVerbosity is the logr verbosity.
	LogVerbosity int
}

// parseRestoreFlags reads the command line after "restore", then the
// environment (SUMMA_<FLAG_IN_CAPS>) for every flag not given.
func parseRestoreFlags(args []string, getenv func(string) string, stderr io.Writer) (restoreConfig, error) {
	var cfg restoreConfig
	fs := commandFlags("summa-server restore", "Usage:\n  "+restoreUsage+"\n\n"+
		"Restores one backup of an index from object storage (the newest unless --backup) into DIR,\n"+
		"which must not exist or be empty (a lost+found directory aside: DIR may be the root of a new\n"+
		"volume). The index is restored as --index; --from-index names the backed-up index when it\n"+
		"had another name. Every file is checked against the backup's manifest\n"+
		"(size, SHA-256) and fully validated against the format before metadata.json is written,\n"+
		"last. Prints a JSON report; exit 0 on success, 1 when an object is missing or damaged or\n"+
		"the store fails (the index directory is removed: nothing is left behind), 2 on bad flags,\n"+
		"a non-empty or locked data directory (nothing was touched).\n"+
		envNote, stderr)
	fs.StringVar(&cfg.DataDir, "data-dir", "", "data directory to fill; must not exist or be empty (required)")
	fs.StringVar(&cfg.Index, "index", "", "name of the restored index (required); also the backed-up index's unless --from-index")
	fs.StringVar(&cfg.FromIndex, "from-index", "", "name of the backed-up index whose backups are read (default: --index)")
	fs.StringVar(&cfg.Backup, "backup", "", "backup ID to restore (default: the newest backup of the index)")
	addS3Flags(fs, &cfg.S3)
	reportFlags(fs, &cfg.ReportFile, &cfg.LogVerbosity)
	if err := parseCommandLine(fs, args, getenv, "restore"); err != nil {
		return cfg, err
	}
	if err := firstBroken(
		required("restore", "data-dir", cfg.DataDir),
		required("restore", "index", cfg.Index),
		flagCheck{!registry.ValidIndexName(cfg.Index), fmt.Errorf("restore: --index %q: %w", cfg.Index, registry.ErrInvalidIndexName)},
		flagCheck{cfg.FromIndex != "" && !registry.ValidIndexName(cfg.FromIndex), fmt.Errorf("restore: --from-index %q: %w", cfg.FromIndex, registry.ErrInvalidIndexName)},
		flagCheck{cfg.Backup != "" && !s3backup.ValidID(cfg.Backup), fmt.Errorf("restore: --backup %q: %w", cfg.Backup, s3backup.ErrInvalidID)},
		rule(!cfg.S3.Configured(), "restore: the object store flags are required (--s3-endpoint, --s3-bucket, --s3-credentials-file)"),
	); err != nil {
		return cfg, err
	}
	if err := cfg.S3.Validate(); err != nil {
		return cfg, fmt.Errorf("restore: %w", err)
	}
	return cfg, nil
}

// restoreOutput is the restore's JSON report.
type restoreOutput struct {
	// Index is the restored index; FromIndex the backed-up one, when
	// another; Backup the restored backup's ID.
	Index     string `json:"index"`
	FromIndex string `json:"fromIndex,omitempty"`
	Backup    string `json:"backup,omitempty"`
	// Generation and Documents are the restored generation's.
	Generation uint64 `json:"generation,omitempty"`
	Documents  uint64 `json:"documents,omitempty"`
	// Files and Bytes count the downloaded and checked files.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Error is set when the restore failed.
	Error string `json:"error,omitempty"`
}

// runRestore restores a backup into an empty data directory.
func runRestore(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseRestoreFlags(args, getenv, stderr)
	return offlineCommand(err, cfg.LogVerbosity, stderr, func(ctx context.Context, log logr.Logger) int {
		return restoreIndex(ctx, cfg, log, stdout, stderr)
	})
}

// restoreIndex is the restore command once its flags are parsed.
func restoreIndex(ctx context.Context, cfg restoreConfig, log logr.Logger, stdout, stderr io.Writer) int {
	out := restoreOutput{Index: cfg.Index, FromIndex: cfg.FromIndex}
	code := exitOK
	store, err := s3backup.New(cfg.S3)
	if err == nil {
		var m *s3backup.Manifest
		m, err = store.Restore(ctx, s3backup.RestoreRequest{FS: vfs.Default, DataDir: cfg.DataDir, Index: cfg.Index,
			SourceIndex: cfg.FromIndex, ID: cfg.Backup, Logger: log.WithName("restore")})
		if m != nil {
			out.Backup, out.Generation, out.Documents, out.Files, out.Bytes = m.ID, m.Generation, m.Documents, len(m.Files), m.TotalBytes()
		}
	}
	if err != nil {
		code = exitFailure
		hint := "; nothing was restored"
		if errors.Is(err, s3backup.ErrDataDirNotEmpty) || errors.Is(err, registry.ErrDataDirLocked) {
			code, hint = exitUsage, ""
		}
		out.Error = err.Error()
		fmt.Fprintf(stderr, "summa-server: %v%s\n", err, hint)
	}
	return writeReport("restore", out, code, cfg.ReportFile, stdout, stderr)
}

// pruneUsage is the first line of the prune command's usage.
const pruneUsage = "summa-server backup prune --index NAME --keep N --s3-endpoint URL --s3-bucket B --s3-credentials-file F [--s3-*]"

// runBackupPrune keeps the newest --keep backups of an index in the
// bucket: older manifests go first, then the file objects no remaining
// manifest names (left for a later prune while a backup of the index
// runs). It prints a JSON report; exit 0, 1 on a store error, 2 on bad
// flags.
func runBackupPrune(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	var (
		idx  string
		keep int
		s3   s3backup.Config
		verb int
	)
	fs := commandFlags("summa-server backup prune", "Usage:\n  "+pruneUsage+"\n\nRemoves all but the newest N backups of an index from object storage: the older\n"+
		"manifests first, then the objects no remaining manifest names. Safe beside a running backup.\n\nFlags:\n", stderr)
	fs.StringVar(&idx, "index", "", "name of the backed-up index (required)")
	fs.IntVar(&keep, "keep", 0, "number of newest backups to keep, at least 1 (required)")
	addS3Flags(fs, &s3)
	logLevelFlag(fs, &verb)
	err := parseCommandLine(fs, args, getenv, "backup prune")
	if errors.Is(err, errHelp) {
		return exitOK
	}
	switch {
	case err != nil:
	case !registry.ValidIndexName(idx):
		err = fmt.Errorf("--index %q: %w", idx, registry.ErrInvalidIndexName)
	case keep < 1:
		err = errors.New("--keep must be at least 1")
	case !s3.Configured():
		err = errors.New("the object store flags are required (--s3-endpoint, --s3-bucket, --s3-credentials-file)")
	}
	var store *s3backup.Store
	if err == nil {
		store, err = s3backup.New(s3)
	}
	if err != nil {
		fmt.Fprintf(stderr, "summa-server: backup prune: %v\n", err)
		return exitUsage
	}
	ctx, stop := interruptible()
	defer stop()
	rep, err := store.Prune(ctx, idx, keep)
	out := struct {
		Index string `json:"index"`
		s3backup.PruneReport
		Error string `json:"error,omitempty"`
	}{Index: idx, PruneReport: rep}
	code := exitOK
	if err != nil {
		out.Error, code = err.Error(), exitFailure
		fmt.Fprintf(stderr, "summa-server: backup prune: %v\n", err)
	}
	data, _ := json.Marshal(out)
	_, _ = stdout.Write(append(data, '\n'))
	return code
}
