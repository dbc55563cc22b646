package envkubelet_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// helperVar makes the test binary run as a small HTTPS server instead of
// the tests, so that a pod can run one (Options.Binaries maps "tls-helper"
// to the test binary).
const helperVar = "ENVKUBELET_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperVar) == "https" {
		os.Exit(httpsHelper(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// httpsHelper serves HTTPS on --listen with the key pair of --cert and
// --key (re-read at every handshake): /healthz answers 200 and /env?name=X
// the variable X.
func httpsHelper(args []string) int {
	fs := flag.NewFlagSet("tls-helper", flag.ContinueOnError)
	listen := fs.String("listen", "", "address")
	cert := fs.String("cert", "", "certificate file")
	key := fs.String("key", "", "key file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, os.Getenv(r.URL.Query().Get("name"))) })
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second, TLSConfig: &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(*cert, *key)
			return &c, err
		},
	}}
	if err := srv.ListenAndServeTLS("", ""); err != nil {
		fmt.Fprintln(os.Stderr, "tls-helper:", err)
		return 1
	}
	return 0
}

// selfSigned returns a PEM certificate and key for localhost.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "helper"},
		DNSNames: []string{"localhost"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// httpsGet fetches a URL of a pod without verifying its certificate.
func httpsGet(url string) (string, error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test's self-signed server
	resp, err := hc.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// testSecrets: a pod waits for the Secrets of its volumes; a secret
// volume holds the items named (never the other keys) with their modes;
// a secretKeyRef becomes the variable; an HTTPS readiness probe passes
// against a TLS server; an edited Secret reaches the files only at the
// periodic sync or at once when the pod's annotations change, and the
// variable keeps its value.
func testSecrets(t *testing.T, f *fixture) {
	ctx := context.Background()
	certPEM, keyPEM := selfSigned(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "https", Namespace: ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "server", Image: "helper", Command: []string{"tls-helper"},
				Args: []string{"--listen=0.0.0.0:8443", "--cert=/tls/tls.crt", "--key=/tls/tls.key"},
				Env: []corev1.EnvVar{{Name: helperVar, Value: "https"}, {Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "token"}, Key: "token"}}}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: "/healthz", Port: intstr.FromInt32(8443), Scheme: corev1.URISchemeHTTPS}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}, {Name: "creds", MountPath: "/creds", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "pair",
					DefaultMode: ptr.To[int32](0o440),
					Items:       []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}}}}},
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "token"}}},
			},
		},
	}
	create(t, f, pod)
	time.Sleep(time.Second) // a few passes of the Kubelet
	if err := get(f, pod); err != nil || pod.Status.Phase != corev1.PodPending || f.k.PodIP(ns, "https") != "" {
		t.Fatalf("a pod whose Secrets are missing started: %v %s", err, pod.Status.Phase)
	}
	pair := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pair", Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.key": []byte("never mounted")}}
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token", Namespace: ns}, Data: map[string][]byte{"token": []byte("t1")}}
	create(t, f, pair, token)
	pod = runningReady(t, f, "https") // the HTTPS probe passed

	dir := f.k.VolumeDir(ns, "https", "tls")
	if _, err := os.Stat(filepath.Join(dir, "ca.key")); !os.IsNotExist(err) {
		t.Errorf("ca.key is in the volume: %v", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "tls.key")); err != nil || st.Mode().Perm() != 0o440 {
		t.Errorf("tls.key: %v %v", st, err)
	}
	base := "https://" + pod.Status.PodIP + ":8443"
	if got, err := httpsGet(base + "/env?name=TOKEN"); err != nil || got != "t1" {
		t.Fatalf("TOKEN from the Secret: %q %v", got, err)
	}
	readToken := func() string {
		data, _ := os.ReadFile(filepath.Join(f.k.VolumeDir(ns, "https", "creds"), "token"))
		return string(data)
	}
	if readToken() != "t1" {
		t.Fatalf("token file %q", readToken())
	}

	token.Data["token"] = []byte("t2")
	if err := f.c.Update(ctx, token); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // a few passes: the fixture's sync period is an hour
	if readToken() != "t1" {
		t.Fatal("the secret volume was refreshed before the sync period without a pod update")
	}
	patch := client.MergeFrom(pod.DeepCopy())
	pod.Annotations = map[string]string{"example.com/reload": "1"}
	if err := f.c.Patch(ctx, pod, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "token file refreshed after the annotation change", func() error {
		if got := readToken(); got != "t2" {
			return fmt.Errorf("token file %q", got)
		}
		return nil
	})
	if got, err := httpsGet(base + "/env?name=TOKEN"); err != nil || got != "t1" {
		t.Errorf("a running container's variable changed: %q %v", got, err)
	}
	if err := f.c.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "https pod removed", gone(f, pod))
}
