// Package segid names segment files: a segment (or deletion-mask
// generation) ID is a uint64 written in lowercase hex, and each of its files
// is seg_<ID>.<suffix>.
package segid

import (
	"fmt"
	"strconv"
	"strings"
)

// ID identifies one segment or one deletion-mask generation within an
// index. IDs are never reused within an index.
type ID uint64

// String returns the lowercase hex form used in file names and metadata.
func (id ID) String() string { return strconv.FormatUint(uint64(id), 16) }

// MarshalText writes the hex form.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads the hex form.
func (id *ID) UnmarshalText(b []byte) error {
	v, ok := parseHex(string(b))
	if !ok {
		return fmt.Errorf("segid: invalid segment id %q", b)
	}
	*id = v
	return nil
}

// Prefix starts every segment file name.
const Prefix = "seg_"

// FileName returns seg_<id>.<suffix>.
func FileName(id ID, suffix string) string { return Prefix + id.String() + "." + suffix }

// ParseFileName splits seg_<id>.<suffix>. Names that do not have exactly
// that shape (uppercase or non-hex digits, an empty ID or suffix, an ID
// longer than 16 digits) return ok=false and must be left alone.
func ParseFileName(name string) (id ID, suffix string, ok bool) {
	rest, found := strings.CutPrefix(name, Prefix)
	if !found {
		return 0, "", false
	}
	hex, suffix, found := strings.Cut(rest, ".")
	if !found || suffix == "" {
		return 0, "", false
	}
	id, ok = parseHex(hex)
	return id, suffix, ok
}

func parseHex(s string) (ID, bool) {
	if len(s) == 0 || len(s) > 16 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 16, 64)
	return ID(v), err == nil
}
