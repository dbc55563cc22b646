package main

import (
	"flag"
	"strconv"
	"strings"

	"github.com/summadev/summa/engine/diskspace"
)

// minFreeBytes is the --min-free-bytes flag: "auto" (diskspace.AutoReserve:
// 3% of the volume, at least 64 MiB, at most half of it), 0 (no reserve)
// or a size such as 512MiB.
type minFreeBytes int64

// String formats the reserve.
func (m *minFreeBytes) String() string {
	if int64(*m) == diskspace.AutoReserve {
		return "auto"
	}
	return strconv.FormatInt(int64(*m), 10)
}

// Set parses "auto", 0 or a size: bytes, or with a KiB, MiB, GiB or TiB
// suffix (also Ki, Mi, Gi, Ti as Kubernetes writes them).
func (m *minFreeBytes) Set(s string) error {
	s = strings.TrimSpace(s)
	switch s {
	case "auto":
		*m = diskspace.AutoReserve
		return nil
	case "0":
		*m = 0
		return nil
	}
	if strings.HasSuffix(s, "i") {
		s += "B" // Mi -> MiB
	}
	mult := int64(1)
	for _, t := range []string{"TiB", "TB", "T"} {
		if num, ok := strings.CutSuffix(s, t); ok {
			s, mult = num+"GiB", 1024
			break
		}
	}
	var b byteSize
	if err := b.Set(s); err != nil {
		return err
	}
	*m = minFreeBytes(int64(b) * mult)
	return nil
}

// registerStorageFlags adds --min-free-bytes to fs.
func registerStorageFlags(fs *flag.FlagSet, cfg *Config) {
	cfg.MinFreeBytes = diskspace.AutoReserve
	fs.Var((*minFreeBytes)(&cfg.MinFreeBytes), "min-free-bytes",
		"free space of the data volume below which ingestion, commits and maintenance answer 507 StorageFull: "+
			"auto (3% of the volume, at least 64MiB, at most half the volume), 0 (none) or a size such as 512MiB")
}
