package auth

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/summadev/summa/internal/tick"
)

// Certificate is a TLS server certificate and key read from two PEM files
// and re-read when they change (see Watch): a renewed certificate is served
// from the next handshake on, without a restart. It is safe for concurrent
// use.
type Certificate struct {
	// certFile and keyFile are the PEM files.
	certFile, keyFile string
	// log receives reload outcomes.
	log logr.Logger
	// cur is the certificate served now.
	cur atomic.Pointer[tls.Certificate]
	// mu serializes reloads.
	mu sync.Mutex
	// lastCert and lastKey are the file contents last tried.
	lastCert, lastKey []byte
}

// LoadCertificate reads the pair; both files must hold a matching
// certificate chain and private key.
func LoadCertificate(certFile, keyFile string, log logr.Logger) (*Certificate, error) {
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	c := &Certificate{certFile: certFile, keyFile: keyFile, log: log}
	certPEM, keyPEM, err := c.read()
	if err != nil {
		return nil, err
	}
	pair, err := parsePair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	c.cur.Store(pair)
	c.lastCert, c.lastKey = certPEM, keyPEM
	return c, nil
}

// read reads both files.
func (c *Certificate) read() (certPEM, keyPEM []byte, err error) {
	if certPEM, err = os.ReadFile(c.certFile); err != nil {
		return nil, nil, fmt.Errorf("read TLS certificate: %w", err)
	}
	if keyPEM, err = os.ReadFile(c.keyFile); err != nil {
		return nil, nil, fmt.Errorf("read TLS key: %w", err)
	}
	return certPEM, keyPEM, nil
}

// parsePair parses a certificate chain and key and checks that they match.
func parsePair(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
	}
	return &pair, nil
}

// GetCertificate serves the current certificate (tls.Config.GetCertificate).
func (c *Certificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}

// NotAfter is the expiry of the certificate served now.
func (c *Certificate) NotAfter() time.Time { return c.cur.Load().Leaf.NotAfter }

// Reload re-reads both files and serves the new pair when they changed
// and match. A pair caught half-written (a new certificate with the old
// key) is not served; the old one stays until both files agree, and the
// error is logged once per content.
func (c *Certificate) Reload() (changed bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	certPEM, keyPEM, err := c.read()
	if err != nil {
		return false, err
	}
	if bytes.Equal(certPEM, c.lastCert) && bytes.Equal(keyPEM, c.lastKey) {
		return false, nil
	}
	c.lastCert, c.lastKey = certPEM, keyPEM
	pair, err := parsePair(certPEM, keyPEM)
	if err != nil {
		err = fmt.Errorf("TLS certificate %s and key %s: %w; serving the previous certificate", c.certFile, c.keyFile, err)
		c.log.Error(err, "TLS certificate not reloaded")
		return false, err
	}
	c.cur.Store(pair)
	c.log.Info("TLS certificate reloaded", "file", c.certFile, "subject", pair.Leaf.Subject.String(),
		"notAfter", pair.Leaf.NotAfter.UTC().Format(time.RFC3339))
	return true, nil
}

// Reloader is a set of files re-read on change: *Tokens or *Certificate.
type Reloader interface {
	// Reload re-reads the files; changed tells whether what is served
	// changed.
	Reload() (changed bool, err error)
}

// Watch calls Reload on every reloader each interval until ctx is done.
// Polling (rather than inotify) follows every way a file changes: an
// in-place write, a rename over it, and the symlink swap with which the
// kubelet updates a mounted Secret. A nil reloader is skipped.
func Watch(ctx context.Context, interval time.Duration, reloaders ...Reloader) {
	tick.Every(ctx, interval, func() {
		for _, r := range reloaders {
			if r != nil {
				_, _ = r.Reload()
			}
		}
	})
}
