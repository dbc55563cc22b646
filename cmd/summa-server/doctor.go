package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/server"
)

// runDoctor repairs the data directory offline and prints one JSON report
// on stdout (and to --report-file). With --report-id the report is also
// kept in the data directory (see registry.SaveDoctorReport), and with
// --summary-file a compact form of it is written there. It exits 0 when
// the directory is consistent afterwards, 2 when another process holds
// it, 1 otherwise.
func runDoctor(cfg Config, log logr.Logger, stdout, stderr io.Writer) int {
	ctx, stop := interruptible()
	defer stop()
	var rep registry.DoctorReport
	var errText string
	code := exitOK
	ran := false
	if _, err := os.Stat(cfg.DataDir); errors.Is(err, os.ErrNotExist) {
		log.Info("Data directory does not exist; nothing to repair", "dataDir", cfg.DataDir)
	} else if err := probeLock(cfg.DataDir); err != nil {
		errText = err.Error()
		fmt.Fprintf(stderr, "summa-server: doctor: %v; stop the server first (nothing was touched)\n", err)
		if errors.Is(err, registry.ErrDataDirLocked) {
			code = exitUsage
		} else {
			code = exitFailure
		}
	} else {
		var err error
		rep, err = registry.Doctor(ctx, vfs.Default, cfg.DataDir, registry.Options{
			Logger: log.WithName("doctor"), Index: index.Options{Logger: log.WithName("doctor")},
		})
		switch {
		case errors.Is(err, registry.ErrDataDirLocked):
			errText = err.Error()
			fmt.Fprintf(stderr, "summa-server: doctor: %v; stop the server first (nothing was touched)\n", err)
			code = exitUsage
		case err != nil:
			errText = err.Error()
			fmt.Fprintf(stderr, "summa-server: doctor: %v\n", err)
			code = exitFailure
			ran = true
		default:
			ran = true
		}
	}
	out := server.DoctorReport(rep, errText)
	data, err := json.Marshal(out)
	if err != nil {
		fmt.Fprintf(stderr, "summa-server: doctor: encode the report: %v\n", err)
		return exitFailure
	}
	data = append(data, '\n')
	if _, err := stdout.Write(data); err != nil {
		return exitFailure
	}
	code = writeDoctorReports(cfg, out, data, ran, code, stderr)
	for _, ir := range out.Indexes {
		kv := []any{"index", ir.Name, "checkedSegments", ir.CheckedSegments,
			"removedSegments", len(ir.RemovedSegments), "removedDocuments", ir.RemovedDocuments}
		if ir.Error != "" {
			kv = append(kv, "error", ir.Error)
		}
		log.Info("Doctor checked index", kv...)
	}
	return code
}

// writeDoctorReports writes the report data to --report-file, keeps it
// under --report-id (only when the doctor ran: a refused doctor touches
// nothing) and writes the summary to --summary-file. A write that fails
// turns a success into exit 1.
func writeDoctorReports(cfg Config, out client.DoctorReport, data []byte, ran bool, code int, stderr io.Writer) int {
	fail := func(what string, err error) {
		fmt.Fprintf(stderr, "summa-server: doctor: %s: %v\n", what, err)
		if code == exitOK {
			code = exitFailure
		}
	}
	// A summary file that is also the report file gets the summary: an
	// operator passes --report-file /dev/termination-log (understood by
	// every version) and SUMMA_SUMMARY_FILE=/dev/termination-log (by this
	// one), so that the message fits the kubelet's 4 KiB.
	if cfg.ReportFile != "" && cfg.ReportFile != cfg.SummaryFile {
		if err := os.WriteFile(cfg.ReportFile, data, 0o644); err != nil {
			fail("write the report to "+cfg.ReportFile, err)
		}
	}
	saved := false
	if cfg.ReportID != "" && ran {
		if err := registry.SaveDoctorReport(vfs.Default, cfg.DataDir, cfg.ReportID, data); err != nil {
			fail("keep the report in the data directory", err)
		} else {
			saved = true
		}
	}
	if cfg.SummaryFile != "" {
		sum := summarize(out, cfg.ReportID, saved)
		if err := os.WriteFile(cfg.SummaryFile, sum, 0o644); err != nil {
			fail("write the summary to "+cfg.SummaryFile, err)
		}
	}
	return code
}
