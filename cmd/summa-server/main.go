// Command summa-server serves the engine's HTTP API over a data directory
// (see docs/server.md):
//
//	summa-server --data-dir DIR [--listen HOST:PORT] [flags]   serve
//	summa-server --data-dir DIR --doctor [--report-file PATH]  offline repair
//	summa-server backup --data-dir DIR --to DEST [--report-file PATH]
//	                                                           offline copy
//	summa-server restore --data-dir DIR --index NAME [--backup ID] --s3-...
//	                                                           restore a backup from object storage
//	summa-server backup prune --index NAME --keep N --s3-...   prune backups in object storage
//	summa-server prepare-volume --data-dir DIR --uid N --gid N chown a volume
//	summa-server merge|compact|reorder --data-dir DIR [--index NAME]
//	                                                           offline maintenance
//	summa-server version
//
// Every flag can also come from the environment as SUMMA_<FLAG_IN_CAPS>
// with dashes as underscores (SUMMA_SHUTDOWN_DEADLINE=30s); a flag given
// on the command line wins.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
)

// Exit codes.
const (
	// exitOK: served and shut down in order, or the doctor left the
	// directory consistent.
	exitOK = 0
	// exitFailure: a runtime failure (shutdown deadline passed, doctor
	// could not finish, listen failed).
	exitFailure = 1
	// exitUsage: bad flags, or the data directory is locked by another
	// process, or a backup's destination is not empty (nothing was
	// touched).
	exitUsage = 2
)

// Set at build time with -ldflags "-X main.version=v1.2.3 -X main.commit=<sha>".
var (
	// version is the release.
	version = "dev"
	// commit is the source revision, when stamped.
	commit = ""
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit code.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "version" {
		fmt.Fprintln(stdout, versionString())
		return exitOK
	}
	if len(args) > 0 && args[0] == "backup" {
		return runBackup(args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "restore" {
		return runRestore(args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "prepare-volume" {
		return runPrepareVolume(args[1:], stdout, stderr)
	}
	if len(args) > 0 && (args[0] == "merge" || args[0] == "compact" || args[0] == "reorder") {
		return runMaintain(args[0], args[1:], getenv, stdout, stderr)
	}
	cfg, err := parseFlags(args, getenv, stderr)
	if code, done := flagsDone(err, stderr); done {
		return code
	}
	log := newLogger(stderr, cfg.LogVerbosity)
	if cfg.Doctor {
		return runDoctor(cfg, log, stdout, stderr)
	}
	return serve(cfg, log, stderr)
}

// versionString names the build.
func versionString() string {
	v := version
	if v == "dev" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && len(s.Value) >= 12 {
					v = "dev-" + s.Value[:12]
				}
			}
		}
	}
	if commit != "" {
		v += " (commit " + commit + ")"
	}
	return fmt.Sprintf("summa-server %s %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
