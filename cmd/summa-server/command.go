package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/go-logr/logr"
)

// envNote ends the usage text of every command whose flags can come from
// the environment.
const envNote = "Every flag can also be set as SUMMA_<FLAG_IN_CAPS> (dashes as underscores); the command line wins.\n\nFlags:\n"

// commandFlags is the flag set of the summa-server command name: errors and
// --help go to stderr, and the help is usage (the text above the flag
// list, ending in "Flags:\n") and then the flags.
func commandFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// reportFlags defines --report-file and --log-level, the flags of every
// offline command that prints a JSON report.
func reportFlags(fs *flag.FlagSet, reportFile *string, logVerbosity *int) {
	fs.StringVar(reportFile, "report-file", "", "also write the JSON report to this file (e.g. /dev/termination-log)")
	logLevelFlag(fs, logVerbosity)
}

// logLevelFlag defines --log-level.
func logLevelFlag(fs *flag.FlagSet, logVerbosity *int) {
	fs.Var((*logLevel)(logVerbosity), "log-level", "log level: info, debug, trace or a verbosity")
}

// offlineCommand runs an offline command (backup, restore, maintenance)
// once its flags are parsed: a parse error err ends it as flagsDone says
// (--help, or a usage error); otherwise body runs with a JSON logger of
// the given verbosity on stderr and a context that SIGTERM or SIGINT
// cancels, and returns the exit code.
func offlineCommand(err error, verbosity int, stderr io.Writer, body func(ctx context.Context, log logr.Logger) int) int {
	if code, done := flagsDone(err, stderr); done {
		return code
	}
	log := newLogger(stderr, verbosity)
	ctx, stop := interruptible()
	defer stop()
	return body(ctx, log)
}
