package bench

import (
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// xapianDriverSource is the C++ driver (bench/xapian/driver.cc).
//
//go:embed xapian/driver.cc
var xapianDriverSource []byte

// XapianPackages are the Debian packages the driver needs.
var XapianPackages = []string{"libxapian-dev", "g++"}

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
	return buildDriver(driverSpec{
		name: "xapian", source: xapianDriverSource, packages: XapianPackages,
		available: XapianAvailable, compile: compileXapianDriver,
	}, cacheDir, install, log)
}

// compileXapianDriver compiles the driver with g++ into the file tmp.
func compileXapianDriver(out, tmp string, log io.Writer) error {
	flags, err := exec.Command("xapian-config", "--cxxflags", "--libs").Output()
	if err != nil {
		return fmt.Errorf("xapian: xapian-config: %w", err)
	}
	src := out + ".cc"
	if err := os.WriteFile(src, xapianDriverSource, 0o644); err != nil {
		return fmt.Errorf("xapian: %w", err)
	}
	defer os.Remove(src)
	args := []string{"-O2", "-std=c++17", "-o", tmp, src}
	args = append(args, strings.Fields(string(flags))...)
	args = append(args, "-lpthread")
	return runCompiler("xapian", "g++", args, log)
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
