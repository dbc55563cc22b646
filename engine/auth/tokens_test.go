package auth

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// writeFile writes data to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// bearer is the header values of a bearer token.
func bearer(tok string) []string { return []string{"Bearer " + tok} }

func TestTokensScopesNest(t *testing.T) {
	dir := t.TempDir()
	tk, err := LoadTokens(TokenFiles{
		Admin: writeFile(t, dir, "admin", "adm-1\n"),
		Write: writeFile(t, dir, "write", "  wr-1  \r\n\n# a comment\nwr-2\n"),
		Read:  writeFile(t, dir, "read", "rd-1"),
	}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]Scope{"adm-1": ScopeAdmin, "wr-1": ScopeWrite, "wr-2": ScopeWrite, "rd-1": ScopeRead} {
		got, err := tk.Authenticate(bearer(tok))
		if err != nil || got != want {
			t.Errorf("%s: got %v, %v; want %v", tok, got, err, want)
		}
	}
	for _, need := range []Scope{ScopeRead, ScopeWrite, ScopeAdmin} {
		if !ScopeAdmin.Allows(need) {
			t.Errorf("admin must allow %v", need)
		}
	}
	if ScopeRead.Allows(ScopeWrite) || ScopeWrite.Allows(ScopeAdmin) || ScopeNone.Allows(ScopeRead) {
		t.Error("a lower scope allows a higher one")
	}
	if c := tk.Counts(); c[ScopeAdmin] != 1 || c[ScopeWrite] != 2 || c[ScopeRead] != 1 {
		t.Errorf("counts %v", c)
	}
}

func TestTokensSameTokenInTwoFilesHasTheHigherScope(t *testing.T) {
	dir := t.TempDir()
	tk, err := LoadTokens(TokenFiles{Read: writeFile(t, dir, "r", "shared"), Admin: writeFile(t, dir, "a", "shared")}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := tk.Authenticate(bearer("shared")); got != ScopeAdmin {
		t.Fatalf("got %v, want admin", got)
	}
}

func TestTokensRefuseEveryOtherAuthorizationForm(t *testing.T) {
	dir := t.TempDir()
	tk, err := LoadTokens(TokenFiles{Admin: writeFile(t, dir, "a", "secret-token")}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		h    []string
		want error
	}{
		"none":              {nil, ErrNoCredentials},
		"basic":             {[]string{"Basic c2VjcmV0LXRva2Vu"}, ErrMalformedCredentials},
		"bare token":        {[]string{"secret-token"}, ErrMalformedCredentials},
		"empty bearer":      {[]string{"Bearer "}, ErrMalformedCredentials},
		"bearer only":       {[]string{"Bearer"}, ErrMalformedCredentials},
		"two spaces":        {[]string{"Bearer  secret-token"}, ErrMalformedCredentials},
		"trailing space":    {[]string{"Bearer secret-token "}, ErrMalformedCredentials},
		"two headers":       {[]string{"Bearer secret-token", "Bearer secret-token"}, ErrMalformedCredentials},
		"unknown":           {bearer("secret-tokeN"), ErrUnknownToken},
		"prefix":            {bearer("secret"), ErrUnknownToken},
		"longer":            {bearer("secret-token-and-more"), ErrUnknownToken},
		"only padding":      {bearer("==="), ErrMalformedCredentials},
		"control character": {[]string{"Bearer secret\x00token"}, ErrMalformedCredentials},
	}
	for name, c := range cases {
		got, err := tk.Authenticate(c.h)
		if !errors.Is(err, c.want) || got != ScopeNone {
			t.Errorf("%s: got %v, %v; want %v", name, got, err, c.want)
		}
	}
	if got, err := tk.Authenticate([]string{"bEaReR secret-token"}); err != nil || got != ScopeAdmin {
		t.Errorf("the scheme is case-insensitive: got %v, %v", got, err)
	}
}

func TestLoadTokensRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	for name, files := range map[string]TokenFiles{
		"missing":      {Admin: filepath.Join(dir, "nope")},
		"empty":        {Admin: writeFile(t, dir, "empty", "\n# only a comment\n")},
		"invalid line": {Write: writeFile(t, dir, "bad", "good\nnot a token\n")},
	} {
		if _, err := LoadTokens(files, testLogger(t)); err == nil {
			t.Errorf("%s: loaded", name)
		} else if name == "invalid line" && !contains(err.Error(), "line 2") {
			t.Errorf("%s: error does not name the line: %v", name, err)
		}
	}
}

func TestTokensReloadRotates(t *testing.T) {
	dir := t.TempDir()
	admin := writeFile(t, dir, "admin", "old-token\n")
	tk, err := LoadTokens(TokenFiles{Admin: admin}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	// Both during the overlap.
	writeFile(t, dir, "admin", "old-token\nnew-token\n")
	if changed, err := tk.Reload(); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	for _, tok := range []string{"old-token", "new-token"} {
		if s, _ := tk.Authenticate(bearer(tok)); s != ScopeAdmin {
			t.Errorf("%s during overlap: %v", tok, s)
		}
	}
	// The old one removed: it stops working at once.
	writeFile(t, dir, "admin", "new-token\n")
	if changed, _ := tk.Reload(); !changed {
		t.Fatal("not reloaded")
	}
	if _, err := tk.Authenticate(bearer("old-token")); !errors.Is(err, ErrUnknownToken) {
		t.Errorf("removed token still works: %v", err)
	}
	// Unchanged file: nothing to do.
	if changed, err := tk.Reload(); changed || err != nil {
		t.Errorf("unchanged reload: %v %v", changed, err)
	}
	// An invalid line keeps the previous tokens.
	writeFile(t, dir, "admin", "new-token\nbad token\n")
	if _, err := tk.Reload(); err == nil {
		t.Error("invalid file reloaded without error")
	}
	if s, _ := tk.Authenticate(bearer("new-token")); s != ScopeAdmin {
		t.Error("an invalid file dropped the previous tokens")
	}
	// A file replaced by rename (the kubelet's way) is followed.
	tmp := writeFile(t, dir, "admin.tmp", "renamed-token\n")
	if err := os.Rename(tmp, admin); err != nil {
		t.Fatal(err)
	}
	if changed, _ := tk.Reload(); !changed {
		t.Fatal("rename not followed")
	}
	if s, _ := tk.Authenticate(bearer("renamed-token")); s != ScopeAdmin {
		t.Error("renamed file's token does not work")
	}
	// A missing file grants nothing until it comes back.
	if err := os.Remove(admin); err != nil {
		t.Fatal(err)
	}
	if changed, _ := tk.Reload(); !changed {
		t.Fatal("removal not noticed")
	}
	if _, err := tk.Authenticate(bearer("renamed-token")); err == nil {
		t.Error("a removed file's token still works")
	}
	writeFile(t, dir, "admin", "back-token\n")
	if changed, _ := tk.Reload(); !changed {
		t.Fatal("return not noticed")
	}
	if s, _ := tk.Authenticate(bearer("back-token")); s != ScopeAdmin {
		t.Error("returned file's token does not work")
	}
}

func TestTokensWithoutFilesAreDisabled(t *testing.T) {
	var nilTokens *Tokens
	if nilTokens.Enabled() {
		t.Error("nil tokens enabled")
	}
	tk, err := LoadTokens(TokenFiles{}, testLogger(t))
	if err != nil || tk.Enabled() {
		t.Fatalf("no files: %v, enabled %v", err, tk.Enabled())
	}
}

// contains is strings.Contains without the import in every test file.
func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
