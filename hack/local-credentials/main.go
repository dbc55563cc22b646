// Command local-credentials makes what `make run-local` serves with: one
// bearer token per scope (admin-token, write-token, read-token: 32 random
// bytes, base64url) and a CA with a certificate for localhost and
// 127.0.0.1 (ca.crt, tls.crt, tls.key), in one directory. Files that exist
// are kept, so a restarted server keeps its tokens.
package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/summadev/summa/internal/pki"
)

func main() {
	dir := flag.String("dir", "bin/credentials", "directory of the tokens and certificates")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "local-credentials:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, name := range []string{"admin-token", "write-token", "read-token"} {
		p := filepath.Join(dir, name)
		if exists(p) {
			continue
		}
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(base64.RawURLEncoding.EncodeToString(b)+"\n"), 0o600); err != nil {
			return err
		}
	}
	if exists(filepath.Join(dir, "tls.crt")) && exists(filepath.Join(dir, "tls.key")) && exists(filepath.Join(dir, "ca.crt")) {
		return nil
	}
	now := time.Now()
	ca, err := pki.NewCA("summa local CA", 365*24*time.Hour, now)
	if err != nil {
		return err
	}
	leaf, err := ca.Issue([]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, 365*24*time.Hour, now)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// exists reports whether p exists.
func exists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, fs.ErrNotExist)
}
