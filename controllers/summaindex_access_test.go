package controllers

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	summav1 "github.com/summadev/summa/api/v1"
)

// testAccess is what the access step decides for podTestIndex by default.
func testAccess() access {
	return access{credentialsSecret: "articles-credentials", tlsSecret: "articles-tls", caPresent: true, hash: "0123456789abcdef"}
}

// volume returns the pod's volume of that name.
func volume(t *testing.T, pod *corev1.Pod, name string) *corev1.Volume {
	t.Helper()
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	t.Fatalf("no volume %s in %+v", name, pod.Spec.Volumes)
	return nil
}

// env returns the container's variable of that name, or nil.
func env(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func TestEngineGetsTokenFilesAndOnlyTheServingKeyPair(t *testing.T) {
	pod := desiredPod(podTestIndex(), podInputs{image: "img:1", grace: 30, access: testAccess()})
	c := pod.Spec.Containers[0]
	for _, want := range []string{
		"--admin-token-file=/etc/summa/credentials/admin-token",
		"--write-token-file=/etc/summa/credentials/write-token",
		"--read-token-file=/etc/summa/credentials/read-token",
		"--tls-cert-file=/etc/summa/tls/tls.crt",
		"--tls-key-file=/etc/summa/tls/tls.key",
	} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("engine args %v lack %s", c.Args, want)
		}
	}
	creds := volume(t, pod, credentialsVolumeName).Secret
	if creds.SecretName != "articles-credentials" || len(creds.Items) != 3 || *creds.DefaultMode != 0o440 {
		t.Errorf("credentials volume %+v", creds)
	}
	tlsVol := volume(t, pod, tlsVolumeName).Secret
	var keys []string
	for _, it := range tlsVol.Items {
		keys = append(keys, it.Key)
	}
	if tlsVol.SecretName != "articles-tls" || strings.Join(keys, ",") != "tls.crt,tls.key" {
		t.Errorf("the engine mounts %v of %s: want only tls.crt and tls.key (never ca.key)", keys, tlsVol.SecretName)
	}
	for _, m := range c.VolumeMounts {
		if (m.Name == credentialsVolumeName || m.Name == tlsVolumeName) && !m.ReadOnly {
			t.Errorf("mount %s is writable", m.Name)
		}
	}
	for _, p := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
		if p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("probe %s scheme %q, want HTTPS", p.HTTPGet.Path, p.HTTPGet.Scheme)
		}
	}
	if pod.Annotations[AnnotationAccessHash] != "0123456789abcdef" {
		t.Errorf("annotations %v", pod.Annotations)
	}
}

func TestPlainHTTPWithTLSDisabled(t *testing.T) {
	acc := testAccess()
	acc.tlsSecret, acc.caPresent = "", false
	pod := desiredPod(podTestIndex(), podInputs{image: "img:1", grace: 30, access: acc})
	c := pod.Spec.Containers[0]
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--tls-") }) {
		t.Errorf("TLS flags without TLS: %v", c.Args)
	}
	if c.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTP {
		t.Errorf("probe scheme %q", c.ReadinessProbe.HTTPGet.Scheme)
	}
	if !slices.Contains(c.Args, "--admin-token-file=/etc/summa/credentials/admin-token") {
		t.Errorf("tokens are required without TLS too: %v", c.Args)
	}
}

func TestAccessHashIsNotPartOfTheRevision(t *testing.T) {
	x := podTestIndex()
	acc := testAccess()
	base := desiredPod(x, podInputs{image: "img:1", grace: 30, access: acc})
	acc.hash = "fedcba9876543210"
	rotated := desiredPod(x, podInputs{image: "img:1", grace: 30, access: acc})
	if rotated.Annotations[AnnotationRevision] != base.Annotations[AnnotationRevision] {
		t.Error("new tokens or a renewed certificate change the revision (a restart)")
	}
	acc.tlsSecret = "cert-manager-made"
	if desiredPod(x, podInputs{image: "img:1", grace: 30, access: acc}).Annotations[AnnotationRevision] == base.Annotations[AnnotationRevision] {
		t.Error("another TLS Secret keeps the revision")
	}
	acc = testAccess()
	acc.tlsSecret = ""
	if desiredPod(x, podInputs{image: "img:1", grace: 30, access: acc}).Annotations[AnnotationRevision] == base.Annotations[AnnotationRevision] {
		t.Error("turning TLS off keeps the revision")
	}
}

func TestAppContainersGetTheWriteTokenURLAndCA(t *testing.T) {
	x := podTestIndex()
	x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", Image: "app:1"},
		{Name: "own", Image: "app:1", Env: []corev1.EnvVar{{Name: EnvToken, Value: "mine"}}},
	}}}
	pod := desiredPod(x, podInputs{image: "img:1", grace: 30, access: testAccess()})
	app, own := pod.Spec.Containers[0], pod.Spec.Containers[1]
	tok := env(app, EnvToken)
	if tok == nil || tok.ValueFrom == nil || tok.ValueFrom.SecretKeyRef == nil ||
		tok.ValueFrom.SecretKeyRef.Name != "articles-credentials" || tok.ValueFrom.SecretKeyRef.Key != summav1.WriteTokenKey {
		t.Errorf("SUMMA_TOKEN %+v", tok)
	}
	if u := env(app, EnvURL); u == nil || u.Value != "https://localhost:8082" {
		t.Errorf("SUMMA_URL %+v", u)
	}
	if f := env(app, EnvCAFile); f == nil || f.Value != "/var/run/summa/tls/ca.crt" {
		t.Errorf("SUMMA_CA_FILE %+v", f)
	}
	if f := env(app, EnvTokenFile); f == nil || f.Value != "/var/run/summa/credentials/token" {
		t.Errorf("SUMMA_TOKEN_FILE %+v", f)
	}
	ca := volume(t, pod, clientCAVolumeName).Secret
	if len(ca.Items) != 1 || ca.Items[0].Key != summav1.CACertKey {
		t.Errorf("the apps' CA volume mounts %+v", ca.Items)
	}
	n := 0
	for _, e := range own.Env {
		if e.Name == EnvToken {
			n++
			if e.Value != "mine" {
				t.Errorf("the app's own SUMMA_TOKEN was replaced: %+v", e)
			}
		}
	}
	if n != 1 {
		t.Errorf("SUMMA_TOKEN %d times in %+v", n, own.Env)
	}
	engine := pod.Spec.InitContainers[0]
	if engine.Name != EngineContainerName || env(engine, EnvToken) != nil {
		t.Errorf("the engine sidecar got client variables: %+v", engine.Env)
	}
}

func TestAccessOfReadsBackHowThePodWasMade(t *testing.T) {
	x := podTestIndex()
	pa := accessOf(desiredPod(x, podInputs{image: "img:1", grace: 30, access: testAccess()}))
	if pa != (podAccess{credentialsSecret: "articles-credentials", https: true, tlsSecret: "articles-tls"}) {
		t.Errorf("pod access %+v", pa)
	}
	legacy := accessOf(desiredPod(x, podInputs{image: "img:1", grace: 30}))
	if legacy != (podAccess{}) {
		t.Errorf("a pod from before 1.1 has access %+v", legacy)
	}
	x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	if pa := accessOf(desiredPod(x, podInputs{image: "img:1", grace: 30, access: testAccess()})); !pa.https {
		t.Error("the engine as a native sidecar is not found")
	}
}

func TestTokensAre32RandomBytesBase64url(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		tok, err := newToken()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || len(raw) != 32 {
			t.Fatalf("token %q: %v, %d bytes", tok, err, len(raw))
		}
		if seen[tok] {
			t.Fatal("a token repeated")
		}
		seen[tok] = true
	}
}

func TestFirstTokenAndMissingTokens(t *testing.T) {
	if got := firstToken([]byte("\n  new \nold\n")); got != "new" {
		t.Errorf("first token %q", got)
	}
	s := &corev1.Secret{Data: map[string][]byte{summav1.AdminTokenKey: []byte("a"), summav1.ReadTokenKey: []byte(" \n")}}
	if got := missingTokens(s); strings.Join(got, ",") != "read-token,write-token" {
		t.Errorf("missing %v", got)
	}
}

func TestAccessHashFollowsTokensAndCertificate(t *testing.T) {
	creds := &corev1.Secret{Data: map[string][]byte{summav1.AdminTokenKey: []byte("a"), summav1.WriteTokenKey: []byte("w"), summav1.ReadTokenKey: []byte("r")}}
	tlsSecret := &corev1.Secret{Data: map[string][]byte{summav1.TLSCertKey: []byte("c"), summav1.TLSKeyKey: []byte("k")}}
	base := accessHash(creds, tlsSecret)
	if accessHash(creds.DeepCopy(), tlsSecret.DeepCopy()) != base {
		t.Fatal("not deterministic")
	}
	rotated := creds.DeepCopy()
	rotated.Data[summav1.ReadTokenKey] = []byte("r2")
	renewed := tlsSecret.DeepCopy()
	renewed.Data[summav1.TLSCertKey] = []byte("c2")
	if accessHash(rotated, tlsSecret) == base || accessHash(creds, renewed) == base || accessHash(creds, nil) == base {
		t.Error("a changed token or certificate keeps the hash")
	}
}
