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
