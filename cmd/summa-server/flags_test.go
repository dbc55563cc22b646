package main

import (
	"github.com/summadev/summa/engine/diskspace"
	"io"

	"github.com/summadev/summa/engine/s3backup"
	"strings"
	"testing"
	"time"
)

// TestFlagsFromEnv: every flag can come from SUMMA_<FLAG_IN_CAPS>, and the
// command line wins.
func TestFlagsFromEnv(t *testing.T) {
	env := map[string]string{
		"SUMMA_DATA_DIR":                         "/env/data",
		"SUMMA_LISTEN":                           "0.0.0.0:9000",
		"SUMMA_SHUTDOWN_DEADLINE":                "40s",
		"SUMMA_MAX_REQUEST_BYTES":                "8MiB",
		"SUMMA_MAX_DOCUMENT_BYTES":               "512KiB",
		"SUMMA_OPTIMIZER_THREADS":                "0",
		"SUMMA_OPTIMIZER_MAX_UNCONVERGED_PASSES": "5",
		"SUMMA_BP_TIME_BUDGET":                   "2m",
		"SUMMA_LOG_LEVEL":                        "debug",
		"SUMMA_ADMIN_TOKEN_FILE":                 "/secrets/admin-token",
		"SUMMA_WRITE_TOKEN_FILE":                 "/secrets/write-token",
		"SUMMA_READ_TOKEN_FILE":                  "/secrets/read-token",
		"SUMMA_TLS_CERT_FILE":                    "/tls/tls.crt",
		"SUMMA_TLS_KEY_FILE":                     "/tls/tls.key",
		"SUMMA_READ_TIMEOUT":                     "30s",
		"SUMMA_MAX_CONNECTIONS":                  "64",
		"SUMMA_PUBLICATION_RETRY_MAX":            "30s",
		"SUMMA_S3_ENDPOINT":                      "http://127.0.0.1:8333",
		"SUMMA_S3_BUCKET":                        "backups",
		"SUMMA_S3_CREDENTIALS_FILE":              "/secrets/s3",
		"SUMMA_FOLLOW":                           "https://leader:8082",
		"SUMMA_FOLLOW_TOKEN_FILE":                "/secrets/leader-read",
	}
	cfg, err := parseFlags([]string{"--listen", "127.0.0.1:1234"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{DataDir: "/env/data", Listen: "127.0.0.1:1234", ShutdownDeadline: 40 * time.Second,
		CommitFlushTimeout: 5 * time.Minute, IndexingBufferBytes: 64 << 20,
		PublicationRetryMin: time.Second, PublicationRetryMax: 30 * time.Second, PublicationRetryLimit: 120, MinFreeBytes: diskspace.AutoReserve, MaxRequestBytes: 8 << 20, MaxDocumentBytes: 512 << 10, LogVerbosity: 1,
		Maintenance: MaintenanceConfig{OptimizerThreads: 0, OptimizerScanInterval: 30 * time.Second,
			OptimizerBackoffMin: 30 * time.Second, OptimizerBackoffMax: 30 * time.Minute,
			OptimizerMaxUnconvergedPasses: 5, BPMemoryBudgetMB: 256, BPTimeBudget: 2 * time.Minute},
		Access: AccessConfig{AdminTokenFile: "/secrets/admin-token", WriteTokenFile: "/secrets/write-token",
			ReadTokenFile: "/secrets/read-token", TLSCertFile: "/tls/tls.crt", TLSKeyFile: "/tls/tls.key",
			ReloadInterval: time.Second, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: time.Minute, IdleTimeout: time.Minute, MaxConnections: 64},
		S3:     s3backup.Config{Endpoint: "http://127.0.0.1:8333", Bucket: "backups", CredentialsFile: "/secrets/s3", Region: "us-east-1"},
		Follow: FollowConfig{Leader: "https://leader:8082", TokenFile: "/secrets/leader-read", HoldTTL: time.Minute}}
	if cfg != want {
		t.Fatalf("got  %+v\nwant %+v", cfg, want)
	}
}

func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, "--data-dir"},
		{[]string{"--data-dir", "d", "--max-request-bytes", "lots"}, nil, "invalid size"},
		{[]string{"--data-dir", "d", "--tls-cert-file", "c"}, nil, "--tls-cert-file and --tls-key-file go together"},
		{[]string{"--data-dir", "d", "--s3-endpoint", "http://h:1"}, nil, "--s3-bucket is required"},
		{[]string{"--data-dir", "d", "--s3-bucket", "b"}, nil, "--s3-endpoint is required"},
		{[]string{"--data-dir", "d", "--s3-endpoint", "http://h:1", "--s3-bucket", "b"}, nil, "--s3-credentials-file is required"},
		{[]string{"--data-dir", "d", "--s3-endpoint", "ftp://h:1", "--s3-bucket", "b", "--s3-credentials-file", "f"}, nil, "--s3-endpoint"},
		{[]string{"--data-dir", "d", "--tls-key-file", "k"}, nil, "--tls-cert-file and --tls-key-file go together"},
		{[]string{"--data-dir", "d", "--max-connections", "-1"}, nil, "--max-connections"},
		{[]string{"--data-dir", "d", "--read-header-timeout", "0s"}, nil, "--read-header-timeout"},
		{[]string{"--data-dir", "d", "--idle-timeout", "0s"}, nil, "--idle-timeout"},
		{[]string{"--data-dir", "d"}, map[string]string{"SUMMA_SHUTDOWN_DEADLINE": "soon"}, "SUMMA_SHUTDOWN_DEADLINE"},
		{[]string{"--data-dir", "d", "--max-document-bytes", "2MiB", "--max-request-bytes", "1MiB"}, nil, "must not exceed"},
		{[]string{"--data-dir", "d", "--optimizer-backoff-min", "1h"}, nil, "backoff"},
		{[]string{"--data-dir", "d", "--publication-retry-min", "2m"}, nil, "--publication-retry-min"},
		{[]string{"--data-dir", "d", "--indexing-buffer-bytes", "0"}, nil, "invalid size"},
		{[]string{"--data-dir", "d", "--report-file", "r"}, nil, "only with --doctor"},
		{[]string{"--data-dir", "d", "--log-level", "loud"}, nil, "log level"},
		{[]string{"--data-dir", "d", "--follow", "leader:8082"}, nil, "--follow"},
		{[]string{"--data-dir", "d", "--follow", "ftp://leader:8082"}, nil, "--follow"},
		{[]string{"--data-dir", "d", "--follow-token-file", "t"}, nil, "only with --follow"},
		{[]string{"--data-dir", "d", "--doctor", "--follow", "http://l:1"}, nil, "--follow does not apply"},
		{[]string{"--data-dir", "d", "--replication-hold-ttl", "0s"}, nil, "--replication-hold-ttl"},
	} {
		_, err := parseFlags(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %v: error %v, want %q", tc.args, tc.env, err, tc.want)
		}
	}
}

func TestEnvName(t *testing.T) {
	if got := envName("optimizer-max-unconverged-passes"); got != "SUMMA_OPTIMIZER_MAX_UNCONVERGED_PASSES" {
		t.Fatal(got)
	}
}

// TestBackupFlags: `backup` takes --data-dir and --to in both forms, and
// from SUMMA_DATA_DIR / SUMMA_TO; the command line wins.
func TestBackupFlags(t *testing.T) {
	env := map[string]string{"SUMMA_DATA_DIR": "/env/data", "SUMMA_TO": "/env/to", "SUMMA_LISTEN": "ignored:1"}
	getenv := func(k string) string { return env[k] }
	cfg, err := parseBackupFlags([]string{"--to=/backup", "--report-file", "/dev/termination-log"}, getenv, io.Discard)
	if want := (backupConfig{DataDir: "/env/data", To: "/backup", ReportFile: "/dev/termination-log"}); err != nil || cfg != want {
		t.Fatalf("got %+v %v, want %+v", cfg, err, want)
	}
	cfg, err = parseBackupFlags([]string{"--data-dir=/d", "--to", "/b"}, func(string) string { return "" }, io.Discard)
	if want := (backupConfig{DataDir: "/d", To: "/b"}); err != nil || cfg != want {
		t.Fatalf("got %+v %v, want %+v", cfg, err, want)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", "/b"}, "--data-dir"},
		{[]string{"--data-dir", "/d"}, "--to"},
		{[]string{"--data-dir", "/d", "--to", "/b", "extra"}, "unexpected argument"},
		{[]string{"--data-dir", "/d", "--to", "/b", "--listen", "x"}, "not defined"},
	} {
		_, err := parseBackupFlags(tc.args, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestLoopbackOnly(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8082": true, "127.0.0.9:1": true, "[::1]:8082": true, "localhost:8082": true,
		"0.0.0.0:8082": false, ":8082": false, "[::]:8082": false, "10.0.0.1:8082": false, "192.168.1.2:80": false,
	} {
		got, err := loopbackOnly(addr)
		if err != nil || got != want {
			t.Errorf("%s: got %v, %v; want %v", addr, got, err, want)
		}
	}
	if _, err := loopbackOnly("no-port"); err == nil {
		t.Error("an address without a port was accepted")
	}
}

// TestRestoreFlags: restore needs a data directory, a valid index name,
// a well-formed backup ID if any, and the object store.
func TestRestoreFlags(t *testing.T) {
	s3 := []string{"--s3-endpoint", "http://127.0.0.1:1", "--s3-bucket", "b", "--s3-credentials-file", "f"}
	cfg, err := parseRestoreFlags(append([]string{"--data-dir", "d", "--index", "books"}, s3...), func(string) string { return "" }, io.Discard)
	if err != nil || cfg.Backup != "" || cfg.Index != "books" || cfg.S3.Bucket != "b" {
		t.Fatalf("%+v %v", cfg, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"--index", "books"}, s3...), "--data-dir"},
		{append([]string{"--data-dir", "d"}, s3...), "--index"},
		{append([]string{"--data-dir", "d", "--index", "Books!"}, s3...), "invalid index name"},
		{append([]string{"--data-dir", "d", "--index", "books", "--backup", "latest"}, s3...), "invalid backup ID"},
		{[]string{"--data-dir", "d", "--index", "books"}, "object store"},
	} {
		if _, err := parseRestoreFlags(tc.args, func(string) string { return "" }, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
