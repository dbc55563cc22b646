package main

import (
	"io"
	"testing"

	"github.com/go-logr/logr"

	"github.com/summadev/summa/engine/diskspace"
)

// TestMinFreeBytesFlag: --min-free-bytes defaults to the automatic
// reserve and takes "auto", 0 or a size, on the command line or from
// SUMMA_MIN_FREE_BYTES; anything else is refused.
func TestMinFreeBytesFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  string
		want int64
	}{
		{nil, "", diskspace.AutoReserve},
		{[]string{"--min-free-bytes", "auto"}, "", diskspace.AutoReserve},
		{[]string{"--min-free-bytes", "0"}, "", 0},
		{[]string{"--min-free-bytes", "512MiB"}, "", 512 << 20},
		{[]string{"--min-free-bytes", "512Mi"}, "", 512 << 20},
		{[]string{"--min-free-bytes", "2TiB"}, "", 2 << 40},
		{[]string{"--min-free-bytes", "1Ti"}, "", 1 << 40},
		{[]string{"--min-free-bytes", "1048576"}, "", 1 << 20},
		{nil, "1GiB", 1 << 30},
		{[]string{"--min-free-bytes", "16MiB"}, "1GiB", 16 << 20},
	} {
		env := map[string]string{"SUMMA_DATA_DIR": "/data", "SUMMA_MIN_FREE_BYTES": c.env}
		cfg, err := parseFlags(c.args, func(k string) string { return env[k] }, io.Discard)
		if err != nil {
			t.Fatalf("%v (env %q): %v", c.args, c.env, err)
		}
		if cfg.MinFreeBytes != c.want {
			t.Errorf("%v (env %q): MinFreeBytes %d, want %d", c.args, c.env, cfg.MinFreeBytes, c.want)
		}
		if got := registryOptions(cfg, logr.Discard()).MinFreeBytes; got != c.want {
			t.Errorf("%v: the registry gets %d, want %d", c.args, got, c.want)
		}
	}
	for _, bad := range []string{"-1", "lots", "5%"} {
		if _, err := parseFlags([]string{"--data-dir", "/d", "--min-free-bytes", bad}, func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("--min-free-bytes %q accepted", bad)
		}
	}
}
