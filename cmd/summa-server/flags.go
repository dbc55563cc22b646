package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/s3backup"
)

// Config is the whole command line.
type Config struct {
	// DataDir is the data directory (required).
	DataDir string
	// Listen is the HTTP address.
	Listen string
	// Doctor runs the offline repair instead of serving.
	Doctor bool
	// ReportFile also receives the doctor's JSON report.
	ReportFile string
	// ReportID, with --doctor, keeps the whole report in the data
	// directory under this ID, served by GET /v1/admin/doctor-reports/{id}.
	ReportID string
	// SummaryFile, with --doctor, receives a compact report that fits a
	// Kubernetes termination message (at most maxSummaryBytes).
	SummaryFile string
	// ShutdownDeadline bounds drain and ordered shutdown after a signal.
	ShutdownDeadline time.Duration
	// ShutdownDelay is how long the server keeps answering after a signal,
	// unready and closing each connection after its response, before it
	// stops serving HTTP (at least as long as the drain takes): the time a
	// load balancer or kube-proxy needs to stop sending it requests.
	ShutdownDelay time.Duration
	// AutocommitInterval commits every index with uncommitted documents at
	// this interval; 0 turns autocommit off.
	AutocommitInterval time.Duration
	// IndexingWorkers is the number of indexing workers per index (0: the
	// engine's default).
	IndexingWorkers int
	// CommitFlushTimeout bounds one wait for the workers' flush.
	CommitFlushTimeout time.Duration
	// IndexingBufferBytes is the in-memory size at which an indexing
	// worker writes its documents as a prepared segment before the commit.
	IndexingBufferBytes int64
	// PublicationRetryMin and PublicationRetryMax bound the exponential
	// backoff of the background retry of a publication that failed before
	// its commit point.
	PublicationRetryMin, PublicationRetryMax time.Duration
	// PublicationRetryLimit bounds the background retries of one held
	// publication.
	PublicationRetryLimit int
	// MinFreeBytes is the data volume's reserve (--min-free-bytes):
	// diskspace.AutoReserve, 0 (none) or bytes.
	MinFreeBytes int64
	// MaxRequestBytes bounds a request body.
	MaxRequestBytes int64
	// MaxDocumentBytes bounds one NDJSON document.
	MaxDocumentBytes int64
	// LogVerbosity is the logr verbosity (0 info, 1 debug, 2 trace).
	LogVerbosity int
	// Maintenance configures background maintenance.
	Maintenance MaintenanceConfig
	// Access configures tokens, TLS and connection limits.
	Access AccessConfig
	// S3 is the object store of online backups (none when not configured).
	S3 s3backup.Config
	// Follow makes the server a read follower of a leader.
	Follow FollowConfig
}

// FollowConfig is the read-follower mode (engine contract, "Replication:
// read followers").
type FollowConfig struct {
	// Leader is the leader's URL; empty for a leader.
	Leader string
	// TokenFile holds a read-scope token of the leader.
	TokenFile string
	// CAFile verifies the leader's certificate.
	CAFile string
	// ServerName is the name verified in the leader's certificate.
	ServerName string
	// HoldTTL is the time to live of the replication holds this server
	// gives its own followers.
	HoldTTL time.Duration
}

// AccessConfig is access control and the limits on connections (engine
// contract, "Access control").
type AccessConfig struct {
	// AdminTokenFile, WriteTokenFile and ReadTokenFile hold the bearer
	// tokens of each scope, one per line.
	AdminTokenFile, WriteTokenFile, ReadTokenFile string
	// InsecureNoAuth allows serving beyond loopback without tokens.
	InsecureNoAuth bool
	// TLSCertFile and TLSKeyFile make the server speak HTTPS only.
	TLSCertFile, TLSKeyFile string
	// ReloadInterval is how often token and certificate files are
	// re-read.
	ReloadInterval time.Duration
	// ReadHeaderTimeout bounds the arrival of a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the arrival of a request's body.
	ReadTimeout time.Duration
	// WriteTimeout bounds the sending of an answer, from its first byte.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection idle this long.
	IdleTimeout time.Duration
	// MaxConnections caps open connections (0: no cap); further ones wait
	// in the listen backlog.
	MaxConnections int
}

// MaintenanceConfig holds the tunables of background maintenance (the
// optimizer and BP reordering). The maintenance component reads it; see
// the engine docs for their meaning.
type MaintenanceConfig struct {
	// OptimizerThreads is the width of background maintenance; 0 turns off
	// automatic merges and BP (explicit endpoints still work).
	OptimizerThreads int
	// OptimizerScanInterval is the time between optimizer scans.
	OptimizerScanInterval time.Duration
	// OptimizerBackoffMin and OptimizerBackoffMax bound the exponential
	// backoff after a failed maintenance task.
	OptimizerBackoffMin, OptimizerBackoffMax time.Duration
	// OptimizerMaxUnconvergedPasses bounds successive budget-truncated BP
	// passes of one segment lineage.
	OptimizerMaxUnconvergedPasses int
	// BPMemoryBudgetMB bounds the memory of one BP pass.
	BPMemoryBudgetMB int
	// BPTimeBudget bounds the time of one BP pass.
	BPTimeBudget time.Duration
}

// envName is the environment variable of a flag: SUMMA_<FLAG_IN_CAPS>.
func envName(flagName string) string {
	return "SUMMA_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// byteSize is a flag of a byte count: 1048576, 64MiB, 512KiB, 1GiB (also
// KB/MB/GB as powers of 1024).
type byteSize int64

// String formats the size.
func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

// Set parses a size.
func (b *byteSize) Set(s string) error {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
		{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return fmt.Errorf("invalid size %q: a positive number of bytes, optionally with KiB, MiB or GiB", s)
	}
	*b = byteSize(n * mult)
	return nil
}

// logLevel is the --log-level flag: info, debug, trace or a verbosity.
type logLevel int

// String formats the level.
func (l *logLevel) String() string {
	switch *l {
	case 0:
		return "info"
	case 1:
		return "debug"
	case 2:
		return "trace"
	}
	return strconv.Itoa(int(*l))
}

// Set parses a level.
func (l *logLevel) Set(s string) error {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "info", "":
		*l = 0
	case "debug":
		*l = 1
	case "trace":
		*l = 2
	default:
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return fmt.Errorf("invalid log level %q: info, debug, trace or a verbosity >= 0", s)
		}
		*l = logLevel(n)
	}
	return nil
}

// errHelp is returned for --help, after the usage was printed.
var errHelp = errors.New("help requested")

// maintenanceHelp marks the flags that background maintenance reads.
const maintenanceHelp = " (see docs/engine.md, maintenance)"

// parseFlags reads the command line, then fills every flag not given there
// from its environment variable.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	cfg := Config{MaxRequestBytes: 64 << 20, MaxDocumentBytes: 1 << 20, IndexingBufferBytes: 64 << 20}
	fs := commandFlags("summa-server", "Usage:\n  summa-server --data-dir DIR [--listen HOST:PORT] [flags]\n"+
		"  summa-server --data-dir DIR --doctor [--report-file PATH] [--report-id ID] [--summary-file PATH]\n  "+backupUsage+" (see backup --help)\n"+
		"  "+restoreUsage+" (see restore --help)\n"+
		"  summa-server version\n\n"+envNote, stderr)
	m := &cfg.Maintenance
	fs.StringVar(&cfg.DataDir, "data-dir", "", "data directory (required)")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8082", "HTTP listen address HOST:PORT")
	fs.BoolVar(&cfg.Doctor, "doctor", false, "repair the data directory offline, print a JSON report and exit")
	fs.StringVar(&cfg.ReportFile, "report-file", "", "with --doctor: also write the report to this file")
	fs.StringVar(&cfg.ReportID, "report-id", "", "with --doctor: keep the whole report in the data directory under this ID (a DNS label), served by GET /v1/admin/doctor-reports/ID")
	fs.StringVar(&cfg.SummaryFile, "summary-file", "", "with --doctor: write a compact report of at most 4000 bytes to this file (e.g. /dev/termination-log)")
	fs.DurationVar(&cfg.ShutdownDeadline, "shutdown-deadline", 25*time.Second, "bound of drain and ordered shutdown after SIGTERM/SIGINT")
	fs.DurationVar(&cfg.ShutdownDelay, "shutdown-delay", 0, "after SIGTERM/SIGINT, keep serving (unready, closing each connection after its response) this long before HTTP stops, for load balancers to drop the endpoint; within --shutdown-deadline")
	fs.DurationVar(&cfg.AutocommitInterval, "autocommit-interval", 0, "commit every index with uncommitted documents at this interval (0: off)")
	fs.IntVar(&cfg.IndexingWorkers, "indexing-workers", 0, "indexing workers per index (0: GOMAXPROCS, at most 8)")
	fs.DurationVar(&cfg.CommitFlushTimeout, "commit-flush-timeout", 5*time.Minute, "wait for the indexing workers' flush before a commit answers CommitFlushTimeout")
	fs.Var((*byteSize)(&cfg.IndexingBufferBytes), "indexing-buffer-bytes", "in-memory size at which an indexing worker writes a segment before the commit (e.g. 64MiB)")
	fs.DurationVar(&cfg.PublicationRetryMin, "publication-retry-min", index.DefaultPublicationRetryMin,
		"first background retry of a publication that failed before its commit point (doubles up to --publication-retry-max)")
	fs.DurationVar(&cfg.PublicationRetryMax, "publication-retry-max", index.DefaultPublicationRetryMax,
		"largest delay between background retries of a failed publication")
	fs.IntVar(&cfg.PublicationRetryLimit, "publication-retry-limit", index.DefaultPublicationRetryLimit,
		"background retries of one held publication; past them only a commit or a drain retries it")
	registerStorageFlags(fs, &cfg)
	fs.Var((*byteSize)(&cfg.MaxRequestBytes), "max-request-bytes", "largest request body; larger bodies get 413 (e.g. 64MiB)")
	fs.Var((*byteSize)(&cfg.MaxDocumentBytes), "max-document-bytes", "largest NDJSON document; larger ones get 413 (e.g. 1MiB)")
	logLevelFlag(fs, &cfg.LogVerbosity)
	a := &cfg.Access
	fs.StringVar(&a.AdminTokenFile, "admin-token-file", "", "file of admin-scope bearer tokens, one per line (re-read on change)")
	fs.StringVar(&a.WriteTokenFile, "write-token-file", "", "file of write-scope bearer tokens, one per line (re-read on change)")
	fs.StringVar(&a.ReadTokenFile, "read-token-file", "", "file of read-scope bearer tokens, one per line (re-read on change)")
	fs.BoolVar(&a.InsecureNoAuth, "insecure-no-auth", false, "serve without tokens on a non-loopback address (anyone who reaches the port may do anything)")
	fs.StringVar(&a.TLSCertFile, "tls-cert-file", "", "PEM certificate chain: serve HTTPS only (re-read on change; needs --tls-key-file)")
	fs.StringVar(&a.TLSKeyFile, "tls-key-file", "", "PEM private key of --tls-cert-file (re-read on change)")
	fs.DurationVar(&a.ReloadInterval, "access-reload-interval", time.Second, "how often token and certificate files are re-read")
	fs.DurationVar(&a.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "time allowed for a request's headers")
	fs.DurationVar(&a.ReadTimeout, "read-timeout", time.Minute, "time allowed for a whole request, body included (408 past it)")
	fs.DurationVar(&a.WriteTimeout, "write-timeout", time.Minute, "time allowed to send an answer once it starts (a client that does not read it is cut off)")
	fs.DurationVar(&a.IdleTimeout, "idle-timeout", time.Minute, "close kept-alive connections idle this long")
	fs.IntVar(&a.MaxConnections, "max-connections", 1024, "most connections open at once; further ones wait (0: no cap)")
	addS3Flags(fs, &cfg.S3)
	fl := &cfg.Follow
	fs.StringVar(&fl.Leader, "follow", "", "run as a read follower of the leader at this URL (http:// or https://HOST:PORT): copy its committed generations, refuse writes")
	fs.StringVar(&fl.TokenFile, "follow-token-file", "", "with --follow: file of a read-scope token of the leader (re-read before each request)")
	fs.StringVar(&fl.CAFile, "follow-ca-file", "", "with --follow: PEM bundle that verifies the leader's certificate (default: the system's roots)")
	fs.StringVar(&fl.ServerName, "follow-server-name", "", "with --follow: name verified in the leader's certificate (default: the URL's host)")
	fs.DurationVar(&fl.HoldTTL, "replication-hold-ttl", 60*time.Second, "how long a follower's hold keeps a generation's files after its last download")
	fs.IntVar(&m.OptimizerThreads, "optimizer-threads", 1, "width of background maintenance; 0 turns it off"+maintenanceHelp)
	fs.DurationVar(&m.OptimizerScanInterval, "optimizer-scan-interval", 30*time.Second, "time between optimizer scans"+maintenanceHelp)
	fs.DurationVar(&m.OptimizerBackoffMin, "optimizer-backoff-min", 30*time.Second, "first backoff after a failed maintenance task"+maintenanceHelp)
	fs.DurationVar(&m.OptimizerBackoffMax, "optimizer-backoff-max", 30*time.Minute, "largest backoff after failed maintenance tasks"+maintenanceHelp)
	fs.IntVar(&m.OptimizerMaxUnconvergedPasses, "optimizer-max-unconverged-passes", 3, "budget-truncated BP passes allowed per segment lineage"+maintenanceHelp)
	fs.IntVar(&m.BPMemoryBudgetMB, "bp-memory-budget-mb", 256, "memory budget of one BP pass in MiB"+maintenanceHelp)
	fs.DurationVar(&m.BPTimeBudget, "bp-time-budget", 60*time.Second, "time budget of one BP pass"+maintenanceHelp)
	if err := parseCommandLine(fs, args, getenv, ""); err != nil {
		return cfg, err
	}
	return cfg, cfg.validate()
}

// parseCommandLine parses args into fs (errHelp for --help), refuses
// positional arguments, and sets every flag not given from its
// environment variable. cmd names the subcommand in messages ("" for the
// server itself).
func parseCommandLine(fs *flag.FlagSet, args []string, getenv func(string) string, cmd string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return err
	}
	if fs.NArg() > 0 {
		if cmd == "" {
			return fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
		}
		return fmt.Errorf("%s: unexpected argument %q (see %s --help)", cmd, fs.Arg(0), cmd)
	}
	return applyEnv(fs, getenv)
}

// applyEnv sets every flag not given on the command line from its
// environment variable, if set.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] {
			return
		}
		v := getenv(envName(f.Name))
		if v == "" {
			return
		}
		if err := f.Value.Set(v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", envName(f.Name), v, err))
		}
	})
	return errors.Join(errs...)
}

// validate checks the values together.
func (c *Config) validate() error {
	m := c.Maintenance
	err := firstBroken(
		required("", "data-dir", c.DataDir),
		rule(c.Listen == "" && !c.Doctor, "--listen must not be empty"),
		rule(c.ReportFile != "" && !c.Doctor, "--report-file applies only with --doctor"),
		rule((c.ReportID != "" || c.SummaryFile != "") && !c.Doctor, "--report-id and --summary-file apply only with --doctor"),
		flagCheck{c.ReportID != "" && !registry.ValidReportID(c.ReportID), fmt.Errorf("--report-id %q: %w", c.ReportID, registry.ErrInvalidReportID)},
		positive("shutdown-deadline", c.ShutdownDeadline),
		rule(c.ShutdownDelay < 0 || c.ShutdownDelay >= c.ShutdownDeadline, "--shutdown-delay must be at least 0 and shorter than --shutdown-deadline"),
		notNegative("autocommit-interval", c.AutocommitInterval),
		notNegative("indexing-workers", c.IndexingWorkers),
		positive("commit-flush-timeout", c.CommitFlushTimeout),
		positive("publication-retry-limit", c.PublicationRetryLimit),
		rule(c.PublicationRetryMin <= 0 || c.PublicationRetryMax < c.PublicationRetryMin, "--publication-retry-min must be positive and at most --publication-retry-max"),
		rule(c.MaxDocumentBytes > c.MaxRequestBytes, "--max-document-bytes must not exceed --max-request-bytes"),
		notNegative("optimizer-threads", m.OptimizerThreads),
		positive("optimizer-scan-interval", m.OptimizerScanInterval),
		rule(m.OptimizerBackoffMin <= 0 || m.OptimizerBackoffMax < m.OptimizerBackoffMin, "--optimizer-backoff-min must be positive and at most --optimizer-backoff-max"),
		notNegative("optimizer-max-unconverged-passes", m.OptimizerMaxUnconvergedPasses),
		positive("bp-memory-budget-mb", m.BPMemoryBudgetMB),
		positive("bp-time-budget", m.BPTimeBudget),
	)
	if err != nil {
		return err
	}
	if err := c.Follow.validate(c.Doctor); err != nil {
		return err
	}
	if c.S3.Configured() {
		if err := c.S3.Validate(); err != nil {
			return err
		}
	}
	return c.Access.validate()
}

// addS3Flags declares the object-store flags (engine contract, "Backups
// to object storage") into c.
func addS3Flags(fs *flag.FlagSet, c *s3backup.Config) {
	fs.StringVar(&c.Endpoint, "s3-endpoint", "", "object store of backups: S3-compatible endpoint URL, http://HOST:PORT or https://HOST:PORT (path-style addressing)")
	fs.StringVar(&c.Bucket, "s3-bucket", "", "bucket of backups (created if missing)")
	fs.StringVar(&c.Prefix, "s3-prefix", "", "key prefix of backups in the bucket (may be empty)")
	fs.StringVar(&c.Region, "s3-region", s3backup.DefaultRegion, "region of the bucket")
	fs.StringVar(&c.CredentialsFile, "s3-credentials-file", "", "file of the object store's key: two lines (access key ID, secret access key) or AWS_ACCESS_KEY_ID= and AWS_SECRET_ACCESS_KEY= lines; read again by every backup")
	fs.StringVar(&c.CAFile, "s3-ca-file", "", "PEM bundle that verifies the object store's certificate (default: the system's roots)")
	fs.Var((*byteSize)(&c.UploadBytesPerSecond), "s3-upload-bytes-per-second", "bound of one backup's upload rate, e.g. 50MiB (default: none)")
}

// validate checks the access flags.
func (a *AccessConfig) validate() error {
	return firstBroken(
		rule((a.TLSCertFile == "") != (a.TLSKeyFile == ""), "--tls-cert-file and --tls-key-file go together"),
		positive("access-reload-interval", a.ReloadInterval),
		positive("read-header-timeout", a.ReadHeaderTimeout),
		notNegative("read-timeout", a.ReadTimeout),
		notNegative("write-timeout", a.WriteTimeout),
		positive("idle-timeout", a.IdleTimeout),
		notNegative("max-connections", a.MaxConnections),
	)
}

// validate checks the follower flags.
func (f FollowConfig) validate(doctor bool) error {
	switch {
	case f.HoldTTL <= 0:
		return errors.New("--replication-hold-ttl must be positive")
	case f.Leader == "":
		if f.TokenFile != "" || f.CAFile != "" || f.ServerName != "" {
			return errors.New("--follow-token-file, --follow-ca-file and --follow-server-name apply only with --follow")
		}
		return nil
	case doctor:
		return errors.New("--follow does not apply with --doctor")
	}
	u, err := url.Parse(f.Leader)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("--follow %q: want http://HOST:PORT or https://HOST:PORT", f.Leader)
	}
	return nil
}

// flagsDone reports whether a command ends once its flags are parsed, and
// with which exit code: --help (0), or a usage error, printed (2).
func flagsDone(err error, stderr io.Writer) (int, bool) {
	if errors.Is(err, errHelp) {
		return exitOK, true
	}
	if err != nil {
		fmt.Fprintf(stderr, "summa-server: %v\n", err)
		return exitUsage, true
	}
	return 0, false
}

// interruptible is a context that SIGTERM or SIGINT cancels, for the
// commands that run to completion (doctor, backup, restore, maintenance).
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}
