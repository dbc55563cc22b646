package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/go-logr/logr"

	"github.com/summadev/summa/engine/auth"
	"github.com/summadev/summa/internal/connlimit"
)

// access is what the command line's access flags load before the port is
// bound: the tokens and the TLS certificate.
type access struct {
	// tokens are the bearer tokens (nil without token files).
	tokens *auth.Tokens
	// cert is the TLS certificate (nil with plain HTTP).
	cert *auth.Certificate
}

// loadAccess reads the token and certificate files and checks that the
// server may listen where it was asked: with no token file, only on
// loopback, unless --insecure-no-auth. Every error names the flag to fix.
func loadAccess(cfg Config, log logr.Logger) (*access, error) {
	a := cfg.Access
	files := auth.TokenFiles{Admin: a.AdminTokenFile, Write: a.WriteTokenFile, Read: a.ReadTokenFile}
	out := &access{}
	if files.Any() {
		t, err := auth.LoadTokens(files, log.WithName("auth"))
		if err != nil {
			return nil, fmt.Errorf("access control: %w", err)
		}
		out.tokens = t
		if a.InsecureNoAuth {
			log.Info("--insecure-no-auth is ignored: token files are given, every API request needs a token")
		}
	} else {
		loopback, err := loopbackOnly(cfg.Listen)
		if err != nil {
			return nil, err
		}
		switch {
		case !loopback && !a.InsecureNoAuth:
			return nil, fmt.Errorf("refusing to listen on %s without access control: anyone who reaches it could "+
				"ingest, delete and drain. Give --admin-token-file (and --write-token-file, --read-token-file), "+
				"listen on a loopback address, or pass --insecure-no-auth to accept the risk", cfg.Listen)
		case !loopback:
			log.Info("WARNING: serving without access control on a non-loopback address (--insecure-no-auth)",
				"address", cfg.Listen)
		}
	}
	if a.TLSCertFile != "" {
		c, err := auth.LoadCertificate(a.TLSCertFile, a.TLSKeyFile, log.WithName("tls"))
		if err != nil {
			return nil, fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
		}
		out.cert = c
	}
	return out, nil
}

// loopbackOnly reports whether every address HOST:PORT can mean is a
// loopback address. An empty host or a wildcard means every interface; a
// name is resolved.
func loopbackOnly(listen string) (bool, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false, fmt.Errorf("--listen %q: %w", listen, err)
	}
	if host == "" {
		return false, nil
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback(), nil
	}
	if host == "localhost" {
		return true, nil
	}
	ips, err := net.DefaultResolver.LookupIPAddr(context.Background(), host)
	if err != nil {
		return false, fmt.Errorf("--listen %q: resolve %s: %w", listen, host, err)
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return false, nil
		}
	}
	return len(ips) > 0, nil
}

// watch re-reads the token and certificate files until ctx is done.
func (a *access) watch(ctx context.Context, cfg AccessConfig) {
	var rs []auth.Reloader
	if a.tokens != nil {
		rs = append(rs, a.tokens)
	}
	if a.cert != nil {
		rs = append(rs, a.cert)
	}
	if len(rs) > 0 {
		auth.Watch(ctx, cfg.ReloadInterval, rs...)
	}
}

// listener wraps a bound listener: at most MaxConnections at once (the
// rest wait in the backlog), and TLS when a certificate is loaded (plain
// HTTP to a TLS port gets a 400 from the TLS layer, never a 2xx).
func (a *access) listener(ln net.Listener, cfg AccessConfig) net.Listener {
	if cfg.MaxConnections > 0 {
		ln = connlimit.Listen(ln, cfg.MaxConnections)
	}
	if a.cert != nil {
		ln = tls.NewListener(ln, &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: a.cert.GetCertificate,
			// HTTP/1.1 only: one request at a time per connection, so
			// that --max-connections bounds the requests in flight.
			NextProtos: []string{"http/1.1"},
		})
	}
	return ln
}
