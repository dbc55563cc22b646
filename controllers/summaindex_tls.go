package controllers

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/internal/pki"
)

// TLS of the engine. Unless spec.access.tls says otherwise, the operator
// keeps, per SummaIndex, a self-signed CA and a certificate for the
// engine's Service issued by it (internal/pki: ECDSA P-256), in the Secret
// <name>-tls: ca.crt (what clients verify with), tls.crt and tls.key
// (mounted into the engine, and only those, through the volume's items);
// the CA's key is in <name>-ca, which nothing mounts
// (summaindex_tls_ca.go).
//
// Lifetimes, as kubeadm's: the CA 10 years, the engine's certificate one
// year (Options.CertificateValidity). Each is renewed two thirds into its
// lifetime, so a stopped operator has a third of the lifetime (four
// months for the certificate) before anything expires. A renewed
// certificate keeps the Secret's name: the kubelet refreshes the engine's
// files (the access hash annotation makes it do so at once) and the engine
// re-reads them, without a restart. A renewed CA is put first in ca.crt
// and the previous CA stays after it until it expires, so clients holding
// either verify the engine meanwhile.

const (
	// caValidity is the lifetime of the operator's CA.
	caValidity = 10 * 365 * 24 * time.Hour
	// DefaultCertificateValidity is the lifetime of the engine's
	// certificate.
	DefaultCertificateValidity = 365 * 24 * time.Hour
)

// certInfo is what status shows of the engine's certificate.
type certInfo struct {
	// notAfter is when it expires.
	notAfter time.Time
	// renewAt is when the operator renews it (two thirds of its lifetime).
	renewAt time.Time
}

// certRequest is what the engine's certificate must say.
type certRequest struct {
	// caName is the CA's common name.
	caName string
	// dnsNames are the Service's names and localhost.
	dnsNames []string
	// ips are the loopback addresses (app containers of the pod).
	ips []net.IP
	// validity is the certificate's lifetime.
	validity time.Duration
}

// engineCertRequest is the certificate request of index's engine.
func (r *SummaIndexReconciler) engineCertRequest(index *summav1.SummaIndex) certRequest {
	// A common name has at most 64 characters.
	caName := "summa CA " + index.Namespace + "/" + index.Name
	if len(caName) > 64 {
		caName = caName[:64]
	}
	return certRequest{
		caName: caName,
		// The leader's Service and the read Service (which selects the
		// leader and the followers; they share the certificate).
		dnsNames: append(append(index.ServiceDNSNames(r.Options.ClusterDomain), index.ReadServiceDNSNames(r.Options.ClusterDomain)...), "localhost"),
		ips:      []net.IP{net.IPv4(127, 0, 0, 1).To4(), net.IPv6loopback},
		validity: r.Options.CertificateValidity,
	}
}

// ensureTLS returns the Secret of the engine's certificate and what status
// shows of it, or nil with TLS disabled.
func (r *SummaIndexReconciler) ensureTLS(ctx context.Context, index *summav1.SummaIndex) (*corev1.Secret, certInfo, error) {
	if !index.TLSEnabled() {
		return nil, certInfo{}, nil
	}
	name := index.TLSSecretName()
	s, err := r.getSecret(ctx, index.Namespace, name)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, certInfo{}, fmt.Errorf("get TLS secret %s: %w", name, err)
	}
	if !index.IssuesCertificate() {
		if err != nil {
			return nil, certInfo{}, &accessError{reason: ReasonTLSSecretMissing, msg: fmt.Sprintf(
				"Secret %s named by spec.access.tls.secretName does not exist (cert-manager may not have issued it yet)", name)}
		}
		info, err := userCertificate(s)
		if err != nil {
			return nil, certInfo{}, &accessError{reason: ReasonTLSSecretInvalid, msg: fmt.Sprintf(
				"Secret %s named by spec.access.tls.secretName: %v", name, err)}
		}
		return s, info, nil
	}
	now := r.Options.Now()
	req := r.engineCertRequest(index)
	caSecret, cerr := r.caKeySecret(ctx, index)
	if cerr != nil {
		return nil, certInfo{}, cerr
	}
	if err != nil {
		data, _, err := maintainIssuedTLS(nil, req, now)
		if err != nil {
			return nil, certInfo{}, err
		}
		// The key first: a CA whose key is lost is a new CA next time.
		if err := r.splitCAKey(ctx, index, caSecret, data); err != nil {
			return nil, certInfo{}, err
		}
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: index.Namespace, Labels: index.Labels()},
			Type:       corev1.SecretTypeTLS,
			Data:       data,
		}
		if err := r.createOwned(ctx, index, s, "TLS secret", "delete it, or name it in spec.access.tls.secretName to use it"); err != nil {
			return nil, certInfo{}, err
		}
		r.event(index, s, corev1.EventTypeNormal, "CertificateIssued", "secret %s created with a CA and the engine's certificate", name)
	} else {
		if err := r.checkOwned(ctx, index, s, "spec.access.tls.secretName"); err != nil {
			return nil, certInfo{}, err
		}
		data, what, err := maintainIssuedTLS(withCAKey(s.Data, caSecret), req, now)
		if err != nil {
			return nil, certInfo{}, err
		}
		if err := r.splitCAKey(ctx, index, caSecret, data); err != nil {
			return nil, certInfo{}, err
		}
		if _, ok := s.Data[summav1.CAKeyKey]; ok {
			// Written by an earlier version: the key is in its own
			// Secret now (saved above), and leaves this one.
			what = strings.TrimPrefix(what+"; ca.key moved to secret "+caSecretName(index), "; ")
		}
		if what != "" {
			s.Data = data
			// With the resourceVersion read: a concurrent writer wins and
			// the next pass looks again.
			if err := r.Update(ctx, s); err != nil {
				return nil, certInfo{}, fmt.Errorf("renew the certificate in secret %s: %w", name, err)
			}
			r.event(index, s, corev1.EventTypeNormal, "CertificateRenewed", "secret %s: %s", name, what)
		}
	}
	leaf, err := firstCertificate(s.Data[summav1.TLSCertKey])
	if err != nil {
		return nil, certInfo{}, fmt.Errorf("secret %s: %w", name, err)
	}
	return s, certInfo{notAfter: leaf.NotAfter, renewAt: renewalTime(leaf)}, nil
}

// userCertificate checks a TLS Secret made by someone else.
func userCertificate(s *corev1.Secret) (certInfo, error) {
	for _, k := range []string{summav1.TLSCertKey, summav1.TLSKeyKey} {
		if len(s.Data[k]) == 0 {
			return certInfo{}, fmt.Errorf("no %s", k)
		}
	}
	leaf, err := firstCertificate(s.Data[summav1.TLSCertKey])
	if err != nil {
		return certInfo{}, err
	}
	if ca := s.Data[summav1.CACertKey]; len(ca) > 0 && !x509.NewCertPool().AppendCertsFromPEM(ca) {
		return certInfo{}, errors.New("ca.crt holds no PEM certificate")
	}
	return certInfo{notAfter: leaf.NotAfter}, nil
}

// renewalTime is two thirds into a certificate's lifetime.
func renewalTime(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) * 2 / 3)
}

// maintainIssuedTLS returns the data of an operator-issued TLS Secret at
// time now: the CA is kept unless missing, invalid or past its renewal
// time; the engine's certificate is kept unless missing, invalid, not
// issued by the current CA, naming other hosts or past its renewal time.
// what says what changed ("" for nothing).
func maintainIssuedTLS(data map[string][]byte, req certRequest, now time.Time) (map[string][]byte, string, error) {
	out := map[string][]byte{}
	for k, v := range data {
		out[k] = v
	}
	var what []string
	ca, bundle := currentCA(data, now)
	if ca == nil {
		var err error
		if ca, err = pki.NewCA(req.caName, caValidity, now); err != nil {
			return nil, "", fmt.Errorf("make the CA: %w", err)
		}
		out[summav1.CAKeyKey] = ca.KeyPEM
		what = append(what, "new CA")
	}
	// The current CA first, then the previous ones until they expire.
	newBundle := pemCert(ca.Cert)
	for _, c := range bundle {
		if !c.Equal(ca.Cert) && now.Before(c.NotAfter) {
			newBundle = append(newBundle, pemCert(c)...)
		}
	}
	out[summav1.CACertKey] = newBundle
	if why := leafOutdated(data, ca.Cert, req, now); why != "" {
		leaf, err := ca.Issue(req.dnsNames, req.ips, req.validity, now)
		if err != nil {
			return nil, "", fmt.Errorf("issue the engine's certificate: %w", err)
		}
		out[summav1.TLSCertKey], out[summav1.TLSKeyKey] = leaf.CertPEM, leaf.KeyPEM
		what = append(what, "engine certificate issued ("+why+")")
	}
	if len(what) == 0 && !bytes.Equal(out[summav1.CACertKey], data[summav1.CACertKey]) {
		what = append(what, "expired CA dropped from ca.crt")
	}
	return out, strings.Join(what, "; "), nil
}

// currentCA returns the CA of the data (the first certificate of ca.crt,
// with ca.key) when it is valid and not due for renewal, and every
// certificate of ca.crt.
func currentCA(data map[string][]byte, now time.Time) (*pki.CA, []*x509.Certificate) {
	bundle := parseCertificates(data[summav1.CACertKey])
	ca, err := pki.ParseCA(data[summav1.CACertKey], data[summav1.CAKeyKey])
	if err != nil || now.Before(ca.Cert.NotBefore) || !now.Before(renewalTime(ca.Cert)) {
		return nil, bundle
	}
	return ca, bundle
}

// leafOutdated says why the engine's certificate must be issued again, or
// "" when it is fine.
func leafOutdated(data map[string][]byte, ca *x509.Certificate, req certRequest, now time.Time) string {
	leaf, err := firstCertificate(data[summav1.TLSCertKey])
	if err != nil {
		return "none yet"
	}
	switch {
	case !keyMatches(data[summav1.TLSCertKey], data[summav1.TLSKeyKey]):
		return "key does not match"
	case leaf.CheckSignatureFrom(ca) != nil:
		return "new CA"
	case !slices.Equal(leaf.DNSNames, req.dnsNames) || !sameIPs(leaf.IPAddresses, req.ips):
		return "names changed"
	case now.Before(leaf.NotBefore):
		return "not valid yet"
	case !now.Before(renewalTime(leaf)):
		return "two thirds of its lifetime passed"
	}
	return ""
}

// pemCert encodes a certificate.
func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// keyMatches reports whether a PEM key is the one of a PEM certificate.
func keyMatches(certPEM, keyPEM []byte) bool {
	_, err := tls.X509KeyPair(certPEM, keyPEM)
	return err == nil
}

// parseCertificates decodes every certificate of a PEM bundle, skipping
// what does not parse.
func parseCertificates(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// firstCertificate decodes the first certificate of a PEM chain.
func firstCertificate(data []byte) (*x509.Certificate, error) {
	c, err := pki.ParseCertificate(data)
	if err != nil {
		return nil, fmt.Errorf("tls.crt: %w", err)
	}
	return c, nil
}

// sameIPs compares address lists.
func sameIPs(a, b []net.IP) bool {
	return slices.EqualFunc(a, b, func(index, y net.IP) bool { return index.Equal(y) })
}
