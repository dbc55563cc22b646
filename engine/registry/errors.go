// Package registry runs every index of one data directory: it opens them
// through the engine's locked writer opener, serializes open, create and
// delete per index with a lease, deletes indexes in the spec's seven steps,
// drains ingestion and shuts down in order.
package registry

import (
	"errors"
	"regexp"
)

// Sentinel errors of the registry.
var (
	// ErrDataDirLocked: another process serves (or repairs) this data directory.
	ErrDataDirLocked = errors.New("registry: data directory is in use by another summa-server or doctor")
	// ErrIndexNotFound: no such index.
	ErrIndexNotFound = errors.New("registry: index not found")
	// ErrIndexExists: an index of that name exists with another schema.
	ErrIndexExists = errors.New("registry: index exists with another schema")
	// ErrIndexDeleting: the index is being deleted.
	ErrIndexDeleting = errors.New("registry: index is being deleted")
	// ErrInvalidIndexName: the name is not a DNS-1123 subdomain.
	ErrInvalidIndexName = errors.New("registry: invalid index name")
	// ErrDraining: writes are refused while the server drains.
	ErrDraining = errors.New("registry: draining; writes are refused")
	// ErrShuttingDown: the registry stopped accepting requests.
	ErrShuttingDown = errors.New("registry: shutting down")
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidIndexName reports whether name is a DNS-1123 subdomain: lowercase
// letters, digits, '-' and '.', at most 253 characters, each dot-separated
// part non-empty and starting and ending with a letter or digit.
func ValidIndexName(name string) bool {
	if len(name) == 0 || len(name) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' {
			if !dnsLabel.MatchString(name[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	return true
}
