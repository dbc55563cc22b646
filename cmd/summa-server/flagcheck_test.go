package main

import (
	"io"
	"testing"
)

// TestFlagRuleMessages pins the whole message of each kind of flag rule
// (required, positive, not negative, the compound ones) of the server and
// of the offline commands, and that the first broken rule is the one
// reported.
func TestFlagRuleMessages(t *testing.T) {
	none := func(string) string { return "" }
	server := func(args ...string) error {
		_, err := parseFlags(args, none, io.Discard)
		return err
	}
	backup := func(args ...string) error {
		_, err := parseBackupFlags(args, none, io.Discard)
		return err
	}
	restore := func(args ...string) error {
		_, err := parseRestoreFlags(args, none, io.Discard)
		return err
	}
	maintain := func(kind string) func(args ...string) error {
		return func(args ...string) error {
			_, err := parseMaintainFlags(kind, args, none, io.Discard)
			return err
		}
	}
	for _, tc := range []struct {
		parse func(args ...string) error
		args  []string
		want  string
	}{
		{server, nil, "--data-dir (or SUMMA_DATA_DIR) is required"},
		{server, []string{"--data-dir", "d", "--autocommit-interval", "-1s"}, "--autocommit-interval must not be negative"},
		{server, []string{"--data-dir", "d", "--bp-time-budget", "0s"}, "--bp-time-budget must be positive"},
		{server, []string{"--data-dir", "d", "--publication-retry-limit", "0"}, "--publication-retry-limit must be positive"},
		{server, []string{"--data-dir", "d", "--shutdown-delay", "1h"}, "--shutdown-delay must be at least 0 and shorter than --shutdown-deadline"},
		{server, []string{"--data-dir", "d", "--shutdown-deadline", "0s", "--autocommit-interval", "-1s"}, "--shutdown-deadline must be positive"},
		{server, []string{"--data-dir", "d", "--access-reload-interval", "0s"}, "--access-reload-interval must be positive"},
		{server, []string{"--data-dir", "d", "--write-timeout", "-1s", "--max-connections", "-1"}, "--write-timeout must not be negative"},
		{server, []string{"--data-dir", "d", "--max-connections", "-1"}, "--max-connections must not be negative"},
		{backup, nil, "backup: --data-dir (or SUMMA_DATA_DIR) is required"},
		{backup, []string{"--data-dir", "d"}, "backup: --to (or SUMMA_TO) is required"},
		{restore, []string{"--data-dir", "d"}, "restore: --index (or SUMMA_INDEX) is required"},
		{restore, []string{"--data-dir", "d", "--index", "books"}, "restore: the object store flags are required (--s3-endpoint, --s3-bucket, --s3-credentials-file)"},
		{maintain("compact"), nil, "compact: --data-dir (or SUMMA_DATA_DIR) is required"},
		{maintain("merge"), []string{"--data-dir", "d", "--max-segments", "0"}, "merge: --max-segments must be at least 1"},
		{maintain("reorder"), []string{"--data-dir", "d", "--indexing-workers", "0"}, "reorder: --indexing-workers must be at least 1"},
		{maintain("compact"), []string{"--data-dir", "d", "--index", "Books!"}, `compact: --index "Books!" is not a valid index name`},
	} {
		err := tc.parse(tc.args...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
