package controllers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	summav1 "github.com/summadev/summa/api/v1"
)

// testCertRequest is the certificate request of podTestIndex's engine.
func testCertRequest(validity time.Duration) certRequest {
	r := &SummaIndexReconciler{Options: Options{ClusterDomain: "cluster.local", CertificateValidity: validity}}
	return r.engineCertRequest(podTestIndex())
}

// issue runs maintainIssuedTLS and fails the test on error.
func issue(t *testing.T, data map[string][]byte, req certRequest, now time.Time) (map[string][]byte, string) {
	t.Helper()
	out, what, err := maintainIssuedTLS(data, req, now)
	if err != nil {
		t.Fatal(err)
	}
	return out, what
}

// leafOf parses tls.crt.
func leafOf(t *testing.T, data map[string][]byte) *x509.Certificate {
	t.Helper()
	c, err := firstCertificate(data[summav1.TLSCertKey])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// verifies checks the served certificate against ca.crt for a name, as a
// client holding ca.crt does.
func verifies(data map[string][]byte, name string, now time.Time) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(data[summav1.CACertKey])
	leaf, err := firstCertificate(data[summav1.TLSCertKey])
	if err != nil {
		return err
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

func TestIssuedCertificateNamesTheServiceAndLocalhost(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	data, what := issue(t, nil, testCertRequest(DefaultCertificateValidity), now)
	if !strings.Contains(what, "new CA") || !strings.Contains(what, "engine certificate issued") {
		t.Errorf("what %q", what)
	}
	for _, k := range []string{summav1.CACertKey, summav1.CAKeyKey, summav1.TLSCertKey, summav1.TLSKeyKey} {
		if len(data[k]) == 0 {
			t.Errorf("no %s", k)
		}
	}
	for _, name := range []string{"articles", "articles.ns", "articles.ns.svc", "articles.ns.svc.cluster.local", "localhost", "127.0.0.1", "::1"} {
		if err := verifies(data, name, now); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if verifies(data, "other.ns.svc", now) == nil {
		t.Error("the certificate verifies for another Service")
	}
	leaf := leafOf(t, data)
	if leaf.IsCA || leaf.NotAfter.Sub(now) != DefaultCertificateValidity {
		t.Errorf("leaf: CA %v, valid until %v", leaf.IsCA, leaf.NotAfter)
	}
	ca := parseCertificates(data[summav1.CACertKey])
	if len(ca) != 1 || !ca[0].IsCA || ca[0].NotAfter.Sub(now) != caValidity {
		t.Errorf("CA bundle %d certs, %+v", len(ca), ca)
	}
	if strings.Contains(string(data[summav1.TLSCertKey]), string(data[summav1.CAKeyKey])) {
		t.Error("the CA key is in tls.crt")
	}
}

func TestCertificateIsKeptUntilTwoThirdsOfItsLifetimeThenRenewed(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	req := testCertRequest(DefaultCertificateValidity)
	data, _ := issue(t, nil, req, start)
	first := leafOf(t, data)

	kept, what := issue(t, data, req, start.Add(DefaultCertificateValidity/2))
	if what != "" || string(kept[summav1.TLSCertKey]) != string(data[summav1.TLSCertKey]) {
		t.Fatalf("half-way: %q", what)
	}
	later := start.Add(DefaultCertificateValidity * 7 / 10)
	renewed, what := issue(t, data, req, later)
	if !strings.Contains(what, "two thirds") || strings.Contains(what, "new CA") {
		t.Fatalf("at 70%%: %q", what)
	}
	second := leafOf(t, renewed)
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 || string(renewed[summav1.TLSKeyKey]) == string(data[summav1.TLSKeyKey]) {
		t.Error("renewal kept the certificate or its key")
	}
	if string(renewed[summav1.CACertKey]) != string(data[summav1.CACertKey]) || string(renewed[summav1.CAKeyKey]) != string(data[summav1.CAKeyKey]) {
		t.Error("renewing the certificate changed the CA")
	}
	if err := verifies(renewed, "articles.ns.svc", later.Add(DefaultCertificateValidity/2)); err != nil {
		t.Errorf("the renewed certificate does not verify with the same ca.crt: %v", err)
	}
}

func TestRenewedCAKeepsThePreviousOneInTheBundleUntilItExpires(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	req := testCertRequest(DefaultCertificateValidity)
	data, _ := issue(t, nil, req, start)
	oldCA := parseCertificates(data[summav1.CACertKey])[0]

	at := start.Add(caValidity * 7 / 10)
	renewed, what := issue(t, data, req, at)
	if !strings.Contains(what, "new CA") || !strings.Contains(what, "new CA)") {
		t.Fatalf("at 70%% of the CA's lifetime: %q", what)
	}
	bundle := parseCertificates(renewed[summav1.CACertKey])
	if len(bundle) != 2 || bundle[0].Equal(oldCA) || !bundle[1].Equal(oldCA) {
		t.Fatalf("bundle after the CA renewal: %d certificates", len(bundle))
	}
	if leafOf(t, renewed).CheckSignatureFrom(bundle[0]) != nil {
		t.Error("the certificate is not issued by the new CA")
	}
	expired, _ := issue(t, renewed, req, oldCA.NotAfter.Add(time.Hour))
	if n := len(parseCertificates(expired[summav1.CACertKey])); n != 1 {
		t.Errorf("after the old CA expired: %d certificates in ca.crt", n)
	}
	// Only the dropped CA changes (the certificate is fresh).
	fresh, _ := issue(t, renewed, req, oldCA.NotAfter.Add(-time.Hour))
	if _, what := issue(t, fresh, req, oldCA.NotAfter.Add(time.Hour)); what != "expired CA dropped from ca.crt" {
		t.Errorf("dropping the expired CA: %q", what)
	}
}

func TestBrokenOrForeignCertificatesAreIssuedAgain(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	req := testCertRequest(DefaultCertificateValidity)
	data, _ := issue(t, nil, req, now)
	other, _ := issue(t, nil, req, now)

	mismatched := map[string][]byte{}
	for k, v := range data {
		mismatched[k] = v
	}
	mismatched[summav1.TLSKeyKey] = other[summav1.TLSKeyKey]
	if _, what := issue(t, mismatched, req, now); !strings.Contains(what, "key does not match") {
		t.Errorf("a key of another certificate: %q", what)
	}
	foreign := map[string][]byte{}
	for k, v := range data {
		foreign[k] = v
	}
	foreign[summav1.TLSCertKey], foreign[summav1.TLSKeyKey] = other[summav1.TLSCertKey], other[summav1.TLSKeyKey]
	if _, what := issue(t, foreign, req, now); !strings.Contains(what, "new CA") {
		t.Errorf("a certificate of another CA: %q", what)
	}
	renamed := req
	renamed.dnsNames = append([]string{"articles.ns.svc.example.org"}, req.dnsNames...)
	if _, what := issue(t, data, renamed, now); !strings.Contains(what, "names changed") {
		t.Errorf("another cluster domain: %q", what)
	}
}

func TestShortLifetimesDoNotRenewAtOnce(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	req := testCertRequest(2 * time.Minute)
	data, _ := issue(t, nil, req, now)
	if _, what := issue(t, data, req, now.Add(30*time.Second)); what != "" {
		t.Errorf("a two-minute certificate renewed after 30 s: %q", what)
	}
	if _, what := issue(t, data, req, now.Add(90*time.Second)); what == "" {
		t.Error("a two-minute certificate not renewed after 90 s")
	}
}

func TestTheOperatorVerifiesTheEngineWithCACrt(t *testing.T) {
	now := time.Now()
	req := testCertRequest(DefaultCertificateValidity)
	data, _ := issue(t, nil, req, now)
	wrong, _ := issue(t, nil, req, now)
	pair, err := tls.X509KeyPair(data[summav1.TLSCertKey], data[summav1.TLSKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	defer srv.Close()
	x := podTestIndex()
	names := x.ServiceDNSNames("cluster.local")
	var clients engineClients
	get := func(ca []byte, names []string) error {
		hc, err := clients.get(ca, x.ServiceHost(), names, 5*time.Second, time.Now)
		if err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	if err := get(data[summav1.CACertKey], names); err != nil {
		t.Fatalf("with the right CA: %v", err)
	}
	if err := get(wrong[summav1.CACertKey], names); err == nil || !strings.Contains(err.Error(), "verify the engine's certificate") {
		t.Errorf("with another CA: %v", err)
	}
	if err := get(data[summav1.CACertKey], []string{"other.ns.svc"}); err == nil || !strings.Contains(err.Error(), "none of the Service's names") {
		t.Errorf("for another Service: %v", err)
	}
	if err := get(nil, names); err == nil {
		t.Error("the system roots accepted a self-signed CA")
	}
	if _, err := clients.get([]byte("not PEM"), x.ServiceHost(), names, time.Second, time.Now); err == nil {
		t.Error("a ca.crt without a certificate was accepted")
	}
}
