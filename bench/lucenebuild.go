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

// luceneDriverSource is the Java driver (bench/lucene/LuceneDriver.java).
//
//go:embed lucene/LuceneDriver.java
var luceneDriverSource []byte

// LucenePackages are the Debian packages the Lucene driver needs.
var LucenePackages = []string{"liblucene8-java", "openjdk-17-jdk-headless"}

// luceneCoreJar is Debian's Lucene core jar (liblucene8-java ships 8.8.1
// under the 8.7.0 file names).
const luceneCoreJar = "/usr/share/java/lucene-core-8.7.0.jar"

var luceneBuilds struct {
	sync.Mutex
	dirs map[string]bool
}

// LuceneAvailable reports why the Lucene driver cannot be built here (""
// when javac, java and the Lucene jar are present).
func LuceneAvailable() string {
	for _, t := range []string{"javac", "java"} {
		if _, err := exec.LookPath(t); err != nil {
			return t + " not found (openjdk-17-jdk-headless)"
		}
	}
	if _, err := os.Stat(luceneCoreJar); err != nil {
		return luceneCoreJar + " not found (liblucene8-java)"
	}
	return ""
}

// LuceneDriver is a compiled Java driver: the java command line that runs
// it.
type LuceneDriver struct {
	// Argv runs the driver.
	Argv []string
}

// BuildLuceneDriver compiles the driver with javac into cacheDir (a
// directory keyed by the source's hash, so it is rebuilt only when the
// source changes). When install is set and Java or Lucene is missing it
// runs apt-get install first.
func BuildLuceneDriver(cacheDir string, install bool, log io.Writer) (*LuceneDriver, error) {
	if log == nil {
		log = io.Discard
	}
	sum := sha256.Sum256(luceneDriverSource)
	out := filepath.Join(cacheDir, "lucene-driver-"+hex.EncodeToString(sum[:6]))
	d := &LuceneDriver{Argv: []string{"java", "-XX:+UseParallelGC", "-Xms1g", "-cp", luceneCoreJar + ":" + out, "LuceneDriver"}}
	luceneBuilds.Lock()
	defer luceneBuilds.Unlock()
	if luceneBuilds.dirs[out] {
		return d, nil
	}
	if why := LuceneAvailable(); why != "" && install {
		AptInstall("lucene", why, LucenePackages, log)
	}
	if why := LuceneAvailable(); why != "" {
		return nil, fmt.Errorf("lucene: %s; install with: apt-get install %s", why, strings.Join(LucenePackages, " "))
	}
	if _, err := os.Stat(filepath.Join(out, "LuceneDriver.class")); err != nil {
		tmp := out + ".tmp"
		os.RemoveAll(tmp)
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return nil, err
		}
		src := filepath.Join(tmp, "LuceneDriver.java")
		if err := os.WriteFile(src, luceneDriverSource, 0o644); err != nil {
			return nil, err
		}
		args := []string{"-nowarn", "-d", tmp, "-cp", luceneCoreJar, src}
		fmt.Fprintf(log, "lucene: javac %s\n", strings.Join(args, " "))
		if b, err := exec.Command("javac", args...).CombinedOutput(); err != nil {
			os.RemoveAll(tmp)
			return nil, fmt.Errorf("lucene: compiling the driver: %v: %s", err, lastLines(b, 5))
		}
		os.Remove(src)
		if err := os.Rename(tmp, out); err != nil {
			return nil, err
		}
		removeStaleDrivers(cacheDir, "lucene-driver-", out)
	}
	if luceneBuilds.dirs == nil {
		luceneBuilds.dirs = map[string]bool{}
	}
	luceneBuilds.dirs[out] = true
	return d, nil
}

// AptInstall runs apt-get install of pkgs (after an apt-get update when
// the first attempt fails), logging why; failures are only logged.
func AptInstall(who, why string, pkgs []string, log io.Writer) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return
	}
	fmt.Fprintf(log, "%s: %s; installing %s with apt-get ...\n", who, why, strings.Join(pkgs, " "))
	args := append([]string{"install", "-y", "-q", "--no-install-recommends"}, pkgs...)
	run := func() ([]byte, error) {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	if out, err := run(); err != nil {
		fmt.Fprintf(log, "%s: apt-get install failed (%v: %s); running apt-get update\n", who, err, lastLines(out, 3))
		_ = exec.Command("apt-get", "update", "-q").Run()
		if out, err := run(); err != nil {
			fmt.Fprintf(log, "%s: apt-get install failed again: %v: %s\n", who, err, lastLines(out, 3))
		}
	}
}

// LuceneVersion is the version of the Lucene jar, for the report.
func LuceneVersion() string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "liblucene8-java").Output()
	if err != nil {
		return "lucene 8 (unknown version)"
	}
	return "lucene " + strings.TrimSpace(string(out))
}
