package auth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
)

// TokenFiles names the token file of each scope; an empty path means no
// token of that scope.
type TokenFiles struct {
	// Admin is the file of admin tokens.
	Admin string
	// Write is the file of write tokens.
	Write string
	// Read is the file of read tokens.
	Read string
}

// Any reports whether at least one file is named.
func (f TokenFiles) Any() bool { return f.Admin != "" || f.Write != "" || f.Read != "" }

// scoped lists the named files with their scopes, highest first.
func (f TokenFiles) scoped() []scopedFile {
	var out []scopedFile
	for _, sf := range []scopedFile{{ScopeAdmin, f.Admin}, {ScopeWrite, f.Write}, {ScopeRead, f.Read}} {
		if sf.path != "" {
			out = append(out, sf)
		}
	}
	return out
}

// scopedFile is one token file and the scope its tokens grant.
type scopedFile struct {
	scope Scope
	path  string
}

// Errors of Authenticate. Each one is answered 401 Unauthorized; they
// differ only in the message.
var (
	// ErrNoCredentials: the request has no Authorization header.
	ErrNoCredentials = errors.New("no credentials: send Authorization: Bearer TOKEN")
	// ErrMalformedCredentials: the Authorization header is not one
	// "Bearer TOKEN" with a non-empty token of the RFC 6750 alphabet.
	ErrMalformedCredentials = errors.New(`malformed credentials: the Authorization header must be "Bearer TOKEN"`)
	// ErrUnknownToken: the bearer token is not in any token file.
	ErrUnknownToken = errors.New("unknown bearer token")
)

// entry is one known token: the SHA-256 of its bytes and its scope. Only
// digests are kept, so that comparisons take the same time whatever the
// lengths, and no token is held in memory longer than a load.
type entry struct {
	digest [sha256.Size]byte
	scope  Scope
}

// Tokens holds the bearer tokens of the token files and re-reads the files
// when Reload is called (see Watch). It is safe for concurrent use.
type Tokens struct {
	// files are the named files, highest scope first.
	files []scopedFile
	// log receives reload outcomes; never a token.
	log logr.Logger
	// set is the current table of known tokens.
	set atomic.Pointer[[]entry]
	// mu serializes reloads.
	mu sync.Mutex
	// contents are the last bytes read of each file, by index in files;
	// nil when the file was missing.
	contents [][]byte
	// perFile are the entries parsed from each file, by index in files.
	perFile [][]entry
}

// LoadTokens reads every named file. Each must exist and hold at least one
// token: a server started with a token file that grants nothing is a
// mistake worth stopping for. The error names the file and line, never a
// token.
func LoadTokens(files TokenFiles, log logr.Logger) (*Tokens, error) {
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	t := &Tokens{files: files.scoped(), log: log}
	t.contents = make([][]byte, len(t.files))
	t.perFile = make([][]entry, len(t.files))
	for i, f := range t.files {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return nil, fmt.Errorf("read %s token file: %w", f.scope, err)
		}
		entries, err := parseTokenFile(data, f.scope)
		if err != nil {
			return nil, fmt.Errorf("%s token file %s: %w", f.scope, f.path, err)
		}
		if len(entries) == 0 {
			return nil, fmt.Errorf("%s token file %s holds no token (one token per line)", f.scope, f.path)
		}
		t.contents[i], t.perFile[i] = data, entries
	}
	t.install()
	return t, nil
}

// Enabled reports whether any token file is in use. A server without one
// serves without authentication (only on loopback, see the command line).
func (t *Tokens) Enabled() bool { return t != nil && len(t.files) > 0 }

// Counts returns how many tokens each scope has now.
func (t *Tokens) Counts() map[Scope]int {
	out := map[Scope]int{ScopeAdmin: 0, ScopeWrite: 0, ScopeRead: 0}
	if t == nil {
		return out
	}
	for _, e := range *t.set.Load() {
		out[e.scope]++
	}
	return out
}

// Authenticate returns the scope of the bearer token in the Authorization
// header values of a request (all of them: more than one is malformed).
// Every known token is compared, in constant time, whatever matches.
func (t *Tokens) Authenticate(authorization []string) (Scope, error) {
	if len(authorization) == 0 {
		return ScopeNone, ErrNoCredentials
	}
	if len(authorization) > 1 {
		return ScopeNone, ErrMalformedCredentials
	}
	token, ok := bearerToken(authorization[0])
	if !ok {
		return ScopeNone, ErrMalformedCredentials
	}
	digest := sha256.Sum256([]byte(token))
	best := ScopeNone
	for _, e := range *t.set.Load() {
		// Every entry is compared; the scope is picked without a branch
		// on the outcome so that the time does not tell which matched.
		match := subtle.ConstantTimeCompare(digest[:], e.digest[:])
		best = Scope(subtle.ConstantTimeSelect(match&boolInt(e.scope > best), int(e.scope), int(best)))
	}
	if best == ScopeNone {
		return ScopeNone, ErrUnknownToken
	}
	return best, nil
}

// boolInt is 1 for true and 0 for false.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// bearerToken parses "Bearer TOKEN" (the scheme case-insensitive, one
// space, a token of RFC 6750's b64token alphabet).
func bearerToken(h string) (string, bool) {
	const scheme = "bearer "
	if len(h) <= len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	tok := h[len(scheme):]
	return tok, validToken(tok)
}

// validToken reports whether tok is a non-empty b64token: letters, digits,
// "-._~+/" and trailing "=".
func validToken(tok string) bool {
	if tok == "" {
		return false
	}
	body := strings.TrimRight(tok, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}

// parseTokenFile reads one token per line. Blank lines and lines starting
// with '#' are skipped; surrounding spaces and a trailing CR are trimmed.
func parseTokenFile(data []byte, scope Scope) ([]entry, error) {
	var out []entry
	for n, line := range strings.Split(string(data), "\n") {
		tok := strings.TrimSpace(line)
		if tok == "" || strings.HasPrefix(tok, "#") {
			continue
		}
		if !validToken(tok) {
			return nil, fmt.Errorf("line %d is not a bearer token (letters, digits and -._~+/ with optional trailing =)", n+1)
		}
		out = append(out, entry{digest: sha256.Sum256([]byte(tok)), scope: scope})
	}
	return out, nil
}

// install publishes the union of every file's entries.
func (t *Tokens) install() {
	var all []entry
	for _, es := range t.perFile {
		all = append(all, es...)
	}
	t.set.Store(&all)
}

// Reload re-reads every file and installs the new tokens of those that
// changed: a new token works and a removed one stops working from the
// moment Reload returns. A missing file grants nothing until it comes
// back; a file that cannot be read, or holds an invalid line, keeps its
// previous tokens, and the error is returned (and logged once per
// content). changed tells whether the table changed.
func (t *Tokens) Reload() (changed bool, err error) {
	if !t.Enabled() {
		return false, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for i, f := range t.files {
		data, rerr := os.ReadFile(f.path)
		switch {
		case errors.Is(rerr, fs.ErrNotExist):
			if t.contents[i] == nil && t.perFile[i] == nil {
				continue
			}
			t.log.Error(rerr, "Token file is gone: its tokens no longer work", "scope", f.scope.String(), "file", f.path)
			t.contents[i], t.perFile[i], changed = nil, nil, true
			continue
		case rerr != nil:
			errs = append(errs, fmt.Errorf("re-read %s token file: %w", f.scope, rerr))
			continue
		}
		if t.contents[i] != nil && bytes.Equal(data, t.contents[i]) {
			continue
		}
		t.contents[i] = data
		entries, perr := parseTokenFile(data, f.scope)
		if perr != nil {
			err := fmt.Errorf("%s token file %s: %w; keeping its previous tokens", f.scope, f.path, perr)
			t.log.Error(err, "Token file not reloaded")
			errs = append(errs, err)
			continue
		}
		t.perFile[i], changed = entries, true
		t.log.Info("Token file reloaded", "scope", f.scope.String(), "file", f.path, "tokens", len(entries))
	}
	if changed {
		t.install()
	}
	return changed, errors.Join(errs...)
}
