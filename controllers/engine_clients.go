package controllers

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// maxClients bounds the HTTPS clients kept; past it they are all dropped
// (their idle connections closed) and built again on demand.
const maxClients = 256

// engineClients keeps one HTTPS client per CA bundle and Service, so that
// connections to an engine are reused across passes instead of a new
// transport (and TLS handshake, and idle connection) each time.
type engineClients struct {
	// mu guards m.
	mu sync.Mutex
	// m holds the clients by CA hash and Service names.
	m map[string]*http.Client
	// wrap, when set, wraps every client's transport (tests put an engine
	// stand-in there that refuses some calls).
	wrap func(http.RoundTripper) http.RoundTripper
}

// get returns the client that verifies engines against the PEM bundle ca
// (the system roots when empty), sending serverName as SNI and accepting a
// certificate for any of names.
func (e *engineClients) get(ca []byte, serverName string, names []string, timeout time.Duration, now func() time.Time) (*http.Client, error) {
	sum := sha256.Sum256(ca)
	key := hex.EncodeToString(sum[:]) + "|" + serverName + "|" + strings.Join(names, ",")
	e.mu.Lock()
	defer e.mu.Unlock()
	if hc, ok := e.m[key]; ok {
		return hc, nil
	}
	var roots *x509.CertPool
	if len(ca) > 0 {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(ca) {
			return nil, errors.New("no PEM certificate in ca.crt")
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: serverName,
		// The chain and the name are verified by VerifyConnection below,
		// which accepts any of the Service's names (a certificate made by
		// cert-manager may carry only some of them).
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection:   verifyEngineCertificate(roots, names, now),
	}
	var rt http.RoundTripper = tr
	if e.wrap != nil {
		rt = e.wrap(tr)
	}
	hc := &http.Client{Transport: rt, Timeout: timeout}
	if e.m == nil || len(e.m) >= maxClients {
		for _, old := range e.m {
			old.CloseIdleConnections()
		}
		e.m = map[string]*http.Client{}
	}
	e.m[key] = hc
	return hc, nil
}

// verifyEngineCertificate checks the engine's chain against roots (the
// system roots when nil) at now, for server authentication, and that the
// certificate names one of names.
func verifyEngineCertificate(roots *x509.CertPool, names []string, now func() time.Time) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the engine sent no certificate")
		}
		leaf := cs.PeerCertificates[0]
		opts := x509.VerifyOptions{
			Roots:         roots,
			CurrentTime:   now(),
			Intermediates: x509.NewCertPool(),
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		if _, err := leaf.Verify(opts); err != nil {
			return fmt.Errorf("verify the engine's certificate: %w", err)
		}
		for _, n := range names {
			if leaf.VerifyHostname(n) == nil {
				return nil
			}
		}
		return fmt.Errorf("the engine's certificate names %v, none of the Service's names %v", leaf.DNSNames, names)
	}
}
