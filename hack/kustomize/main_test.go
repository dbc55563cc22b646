package main

import (
	"strings"
	"testing"
)

func TestSplitRef(t *testing.T) {
	for _, tc := range []struct{ ref, repo, tag, digest string }{
		{"summa-operator", "summa-operator", "", ""},
		{"ghcr.io/summadev/summa-operator:v0.2.0", "ghcr.io/summadev/summa-operator", "v0.2.0", ""},
		{"localhost:5000/summa-server", "localhost:5000/summa-server", "", ""},
		{"localhost:5000/summa-server:v1@sha256:ab", "localhost:5000/summa-server", "v1", "sha256:ab"},
	} {
		repo, tag, digest, err := splitRef(tc.ref)
		if err != nil || repo != tc.repo || tag != tc.tag || digest != tc.digest {
			t.Errorf("splitRef(%q) = %q %q %q %v", tc.ref, repo, tag, digest, err)
		}
	}
	for _, bad := range []string{":v1", "x@sha256", "a b:c"} {
		if _, _, _, err := splitRef(bad); err == nil {
			t.Errorf("splitRef(%q) accepted", bad)
		}
	}
}

// TestRunPinsImages builds config/default with both images pinned.
func TestRunPinsImages(t *testing.T) {
	out, err := run([]string{"-image", "ghcr.io/summadev/summa-operator=reg.example:5000/op:v9", "-engine-image", "reg.example:5000/engine:v9", "../../config/default"})
	if err != nil {
		t.Fatal(err)
	}
	y := string(out)
	for _, want := range []string{"image: reg.example:5000/op:v9", "value: reg.example:5000/engine:v9", "kind: CustomResourceDefinition"} {
		if !strings.Contains(y, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if i, j := strings.Index(y, "kind: Namespace"), strings.Index(y, "kind: ServiceAccount"); i < 0 || i > j {
		t.Errorf("the Namespace does not come before the objects inside it")
	}
}
