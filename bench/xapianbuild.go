package bench

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// xapianDriverSource is the C++ driver (bench/xapian/driver.cc).
//
//go:embed xapian/driver.cc
var xapianDriverSource []byte

// XapianPackages are the Debian packages the driver needs.
var XapianPackages = []string{"libxapian-dev", "g++"}

var xapianBuilds struct {
	sync.Mutex
	bins map[string]string
}

// XapianAvailable reports why the driver cannot be built here ("" when
// g++ and the Xapian headers are present).
func XapianAvailable() string {
	if _, err := exec.LookPath("g++"); err != nil {
		return "g++ not found"
	}
	if _, err := exec.LookPath("xapian-config"); err != nil {
		return "xapian-config (libxapian-dev) not found"
	}
	return ""
}

// BuildXapianDriver compiles the driver into cacheDir (a file name keyed by
// the source's hash, so it is rebuilt only when driver.cc changes). When
// install is set and g++ or libxapian-dev is missing it runs apt-get
// install first.
func BuildXapianDriver(cacheDir string, install bool, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	sum := sha256.Sum256(xapianDriverSource)
	bin := filepath.Join(cacheDir, "xapian-driver-"+hex.EncodeToString(sum[:6]))
	xapianBuilds.Lock()
	defer xapianBuilds.Unlock()
	if b, ok := xapianBuilds.bins[bin]; ok {
		return b, nil
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if why := XapianAvailable(); why != "" && install {
		AptInstall("xapian", why, XapianPackages, log)
	}
	if why := XapianAvailable(); why != "" {
		return "", fmt.Errorf("xapian: %s", why)
	}
	flags, err := exec.Command("xapian-config", "--cxxflags", "--libs").Output()
	if err != nil {
		return "", fmt.Errorf("xapian: xapian-config: %w", err)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	src := bin + ".cc"
	if err := os.WriteFile(src, xapianDriverSource, 0o644); err != nil {
		return "", err
	}
	defer os.Remove(src)
	tmp := bin + ".tmp"
	args := []string{"-O2", "-std=c++17", "-o", tmp, src}
	args = append(args, strings.Fields(string(flags))...)
	args = append(args, "-lpthread")
	fmt.Fprintf(log, "xapian: g++ %s\n", strings.Join(args, " "))
	if out, err := exec.Command("g++", args...).CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("xapian: compiling the driver: %v: %s", err, lastLines(out, 5))
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	removeStaleDrivers(cacheDir, "xapian-driver-", bin)
	if xapianBuilds.bins == nil {
		xapianBuilds.bins = map[string]string{}
	}
	xapianBuilds.bins[bin] = bin
	return bin, nil
}

// removeStaleDrivers removes the drivers built from older sources: every
// entry of cacheDir named prefix* but keep.
func removeStaleDrivers(cacheDir, prefix, keep string) {
	old, err := filepath.Glob(filepath.Join(cacheDir, prefix+"*"))
	if err != nil {
		return
	}
	for _, o := range old {
		if o != keep {
			os.RemoveAll(o)
		}
	}
}

// XapianVersion is the installed Xapian version, for the report.
func XapianVersion() string {
	out, err := exec.Command("xapian-config", "--version").Output()
	if err != nil {
		return "xapian (unknown version)"
	}
	v := strings.TrimSpace(string(out))
	if i := strings.LastIndex(v, " - "); i >= 0 {
		v = v[i+3:]
	}
	return v
}
