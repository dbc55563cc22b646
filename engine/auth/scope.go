// Package auth is the engine's access control (the engine contract's
// "Access control"): bearer tokens read from files, one file per scope,
// re-read when they change and compared in constant time; and TLS
// certificates re-read the same way. It knows nothing of HTTP routes: the
// server maps each route to the Scope it needs.
package auth

import "fmt"

// Scope is what a token may do. Scopes nest: Admin ⊇ Write ⊇ Read.
type Scope int

const (
	// ScopeNone is no access: an unknown or missing token.
	ScopeNone Scope = iota
	// ScopeRead may list and read indexes and search.
	ScopeRead
	// ScopeWrite may also upsert and delete documents and commit.
	ScopeWrite
	// ScopeAdmin may also create and delete indexes, run maintenance and
	// use every /v1/admin/ endpoint.
	ScopeAdmin
)

// String names the scope as the contract does.
func (s Scope) String() string {
	switch s {
	case ScopeNone:
		return "none"
	case ScopeRead:
		return "read"
	case ScopeWrite:
		return "write"
	case ScopeAdmin:
		return "admin"
	}
	return fmt.Sprintf("Scope(%d)", int(s))
}

// Allows reports whether a token of scope s may do what needs scope need.
func (s Scope) Allows(need Scope) bool { return s >= need }
