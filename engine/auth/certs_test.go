package auth

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/summadev/summa/internal/pki"
)

// issue writes a fresh certificate of ca for localhost into dir as
// tls.crt and tls.key and returns their paths.
func issue(t *testing.T, ca *pki.CA, dir string) (certFile, keyFile string, leaf *pki.Leaf) {
	t.Helper()
	leaf, err := ca.Issue([]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, leaf.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, leaf.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, leaf
}

func TestCertificateReloadServesTheNewPairOnlyWhenBothAgree(t *testing.T) {
	ca, err := pki.NewCA("test", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile, first := issue(t, ca, dir)
	c, err := LoadCertificate(certFile, keyFile, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	serial := func() string {
		got, _ := c.GetCertificate(nil)
		return got.Leaf.SerialNumber.String()
	}
	firstSerial := serial()
	if changed, err := c.Reload(); changed || err != nil {
		t.Fatalf("unchanged files reloaded: %v %v", changed, err)
	}
	// A new certificate with the old key: caught half-written.
	second, err := ca.Issue([]string{"localhost"}, nil, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, second.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := c.Reload(); changed || err == nil {
		t.Fatalf("mismatched pair served: %v %v", changed, err)
	}
	if serial() != firstSerial {
		t.Fatal("the served certificate changed to a mismatched pair")
	}
	if err := os.WriteFile(keyFile, second.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := c.Reload(); !changed || err != nil {
		t.Fatalf("renewed pair not served: %v %v", changed, err)
	}
	if serial() == firstSerial {
		t.Fatal("still serving the first certificate")
	}
	if !c.NotAfter().Equal(second.NotAfter.Truncate(time.Second)) && c.NotAfter().Sub(first.NotAfter) < 0 {
		t.Errorf("NotAfter %v", c.NotAfter())
	}
}

func TestLoadCertificateRefusesBadPairs(t *testing.T) {
	ca, _ := pki.NewCA("test", time.Hour, time.Now())
	dir := t.TempDir()
	certFile, _, _ := issue(t, ca, dir)
	other := t.TempDir()
	_, otherKey, _ := issue(t, ca, other)
	if _, err := LoadCertificate(certFile, otherKey, testLogger(t)); err == nil {
		t.Error("a key of another certificate was accepted")
	}
	if _, err := LoadCertificate(certFile, filepath.Join(dir, "missing"), testLogger(t)); err == nil {
		t.Error("a missing key was accepted")
	}
}
