package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// krewManifest is the part of plugins/krew/summa.yaml the tests read.
type krewManifest struct {
	Spec struct {
		Platforms []struct {
			URI   string `json:"uri"`
			Bin   string `json:"bin"`
			Files []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestKrewManifestInstallsLicense checks that every platform of the Krew
// manifest installs the plugin binary and LICENSE from its archive.
func TestKrewManifestInstallsLicense(t *testing.T) {
	raw, err := os.ReadFile("../../plugins/krew/summa.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m krewManifest
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Spec.Platforms) == 0 {
		t.Fatal("no platforms in plugins/krew/summa.yaml")
	}
	for _, p := range m.Spec.Platforms {
		if !strings.Contains(p.URI, "/kubectl-summa_") || !strings.HasSuffix(p.URI, ".tar.gz") {
			t.Errorf("%s: not an archive of hack/plugin-archives.sh", p.URI)
		}
		if p.Bin != "kubectl-summa" {
			t.Errorf("%s: bin %q, want kubectl-summa", p.URI, p.Bin)
		}
		got := map[string]string{}
		for _, f := range p.Files {
			got[f.From] = f.To
		}
		for _, want := range []string{"kubectl-summa", "LICENSE"} {
			if got[want] != "." {
				t.Errorf("%s: files do not install %s (have %v)", p.URI, want, p.Files)
			}
		}
	}
}

// TestPluginArchiveCarriesLicense packs an archive with
// hack/plugin-archives.sh (a stand-in binary, so that nothing is built)
// and checks that it holds the binary and the repository's LICENSE, byte
// for byte.
func TestPluginArchiveCarriesLicense(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("no tar")
	}
	out := t.TempDir()
	bin := filepath.Join(t.TempDir(), "kubectl-summa")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("../../hack/plugin-archives.sh")
	cmd.Env = append(os.Environ(), "OUT="+out, "BIN="+bin, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/plugin-archives.sh: %v\n%s", err, b)
	}
	f, err := os.Open(filepath.Join(out, "kubectl-summa_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	members := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		members[h.Name] = b
	}
	if string(members["kubectl-summa"]) != "#!/bin/sh\n" {
		t.Errorf("archive lacks the binary kubectl-summa (has %d members)", len(members))
	}
	license, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(members["LICENSE"], license) {
		t.Errorf("archive's LICENSE differs from the repository's (%d bytes, want %d)", len(members["LICENSE"]), len(license))
	}
	if !bytes.Contains(license, []byte("Apache License")) || !bytes.Contains(license, []byte("Version 2.0")) {
		t.Error("LICENSE is not the Apache License 2.0")
	}
}
