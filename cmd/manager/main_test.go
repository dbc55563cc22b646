package main

import (
	"strings"
	"testing"

	"github.com/summadev/summa/controllers"
)

// TestEngineImageDefault checks --engine-image's default: the environment
// wins, then the image stamped at build time, then the development image.
func TestEngineImageDefault(t *testing.T) {
	old := defaultEngineImage
	t.Cleanup(func() { defaultEngineImage = old })

	defaultEngineImage = ""
	t.Setenv("SUMMA_ENGINE_IMAGE", "")
	if got := engineImageDefault(); got != controllers.DefaultEngineImage {
		t.Errorf("development build: %q, want %q", got, controllers.DefaultEngineImage)
	}
	defaultEngineImage = "ghcr.io/summadev/summa-server:v9.9.9"
	if got := engineImageDefault(); got != defaultEngineImage {
		t.Errorf("stamped build: %q, want %q", got, defaultEngineImage)
	}
	t.Setenv("SUMMA_ENGINE_IMAGE", "mirror.example/summa-server:v9.9.9")
	if got := engineImageDefault(); got != "mirror.example/summa-server:v9.9.9" {
		t.Errorf("with SUMMA_ENGINE_IMAGE: %q", got)
	}
}

// TestVersionString checks that the stamped version and commit are shown.
func TestVersionString(t *testing.T) {
	oldV, oldC := version, commit
	t.Cleanup(func() { version, commit = oldV, oldC })
	version, commit = "v9.9.9", "0123abc"
	got := versionString()
	if !strings.HasPrefix(got, "summa-operator v9.9.9 (commit 0123abc) go") {
		t.Errorf("versionString() = %q", got)
	}
}

// TestMetricsOptions checks the metrics endpoint's two modes: secure
// (HTTPS on :8443 behind the authn/authz filter, HTTP/2 off unless asked)
// and plain (HTTP on :8080, no filter), and that an explicit address wins.
func TestMetricsOptions(t *testing.T) {
	o := metricsOptions("", true, "", false)
	if o.BindAddress != ":8443" || !o.SecureServing || o.FilterProvider == nil || len(o.TLSOpts) != 1 {
		t.Errorf("secure: %+v", o)
	}
	if o := metricsOptions("", true, "/certs", true); len(o.TLSOpts) != 0 || o.CertDir != "/certs" {
		t.Errorf("secure with HTTP/2 and a certificate directory: %+v", o)
	}
	o = metricsOptions("", false, "", false)
	if o.BindAddress != ":8080" || o.SecureServing || o.FilterProvider != nil {
		t.Errorf("plain: %+v", o)
	}
	if o := metricsOptions("0", true, "", false); o.BindAddress != "0" {
		t.Errorf("--metrics-bind-address=0: %q", o.BindAddress)
	}
}

func TestCacheOptionsWatchNamespaces(t *testing.T) {
	all, err := cacheOptions("")
	if err != nil || all.DefaultNamespaces != nil || len(all.ByObject) == 0 {
		t.Fatalf("no --watch-namespaces: %+v, %v", all, err)
	}
	some, err := cacheOptions(" search, team-b ")
	if err != nil {
		t.Fatal(err)
	}
	if len(some.DefaultNamespaces) != 2 {
		t.Fatalf("namespaces %v", some.DefaultNamespaces)
	}
	for _, ns := range []string{"search", "team-b"} {
		if _, ok := some.DefaultNamespaces[ns]; !ok {
			t.Errorf("%s not watched: %v", ns, some.DefaultNamespaces)
		}
	}
	if len(some.ByObject) == 0 {
		t.Error("namespaced mode dropped the label-filtered cache")
	}
	for _, bad := range []string{"Search", "a,,b", "team_b"} {
		if _, err := cacheOptions(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestRestartProgressDeadlineFlag checks that a restart progress deadline
// that is not positive stops the operator before it starts.
func TestRestartProgressDeadlineFlag(t *testing.T) {
	for _, bad := range []string{"0s", "-1m"} {
		err := run([]string{"--restart-progress-deadline=" + bad})
		if err == nil || !strings.Contains(err.Error(), "--restart-progress-deadline") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if err := run([]string{"--restart-progress-deadline=ten"}); err == nil {
		t.Error("a restart progress deadline that is no duration was taken")
	}
}

// TestPodTemplatePolicyFlag checks that a mistyped --pod-template-policy
// stops the operator before it starts, rather than fall back on a policy.
func TestPodTemplatePolicyFlag(t *testing.T) {
	for _, bad := range []string{"none", "Baseline", ""} {
		err := run([]string{"--pod-template-policy=" + bad})
		if err == nil || !strings.Contains(err.Error(), "--pod-template-policy") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
