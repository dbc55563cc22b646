package pki

import (
	"crypto/x509"
	"net"
	"testing"
	"time"
)

func TestIssueVerifiesAgainstItsCA(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("test-ca", 24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue([]string{"articles.ns.svc", "localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, 48*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if !leaf.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("leaf outlives its CA: %v > %v", leaf.NotAfter, ca.Cert.NotAfter)
	}
	cert, err := ParseCertificate(leaf.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	for _, name := range []string{"articles.ns.svc", "localhost", "127.0.0.1"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: now}); err != nil {
			t.Errorf("verify %s: %v", name, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "other.ns.svc", CurrentTime: now}); err == nil {
		t.Error("verified for a name it does not carry")
	}
	other, _ := NewCA("other", time.Hour, now)
	wrong := x509.NewCertPool()
	wrong.AddCert(other.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: wrong, DNSName: "localhost", CurrentTime: now}); err == nil {
		t.Error("verified against another CA")
	}
	back, err := ParseCA(ca.CertPEM, ca.KeyPEM)
	if err != nil || !back.Cert.Equal(ca.Cert) {
		t.Fatalf("ParseCA: %v", err)
	}
	if _, err := ParseCA(ca.CertPEM, other.KeyPEM); err == nil {
		t.Error("ParseCA accepted another CA's key")
	}
	if _, err := ParseCA(leaf.CertPEM, leaf.KeyPEM); err == nil {
		t.Error("ParseCA accepted a server certificate")
	}
}
