package bench

import (
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	out, err := buildDriver(driverSpec{
		name: "lucene", source: luceneDriverSource, packages: LucenePackages,
		available: LuceneAvailable, runtime: true, installHint: true,
		marker: "LuceneDriver.class", compile: compileLuceneDriver,
	}, cacheDir, install, log)
	if err != nil {
		return nil, err
	}
	return &LuceneDriver{Argv: []string{"java", "-XX:+UseParallelGC", "-Xms1g", "-cp", luceneCoreJar + ":" + out, "LuceneDriver"}}, nil
}

// compileLuceneDriver compiles LuceneDriver.class into the directory tmp.
func compileLuceneDriver(_, tmp string, log io.Writer) error {
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return fmt.Errorf("lucene: %w", err)
	}
	src := filepath.Join(tmp, "LuceneDriver.java")
	if err := os.WriteFile(src, luceneDriverSource, 0o644); err != nil {
		return fmt.Errorf("lucene: %w", err)
	}
	if err := runCompiler("lucene", "javac", []string{"-nowarn", "-d", tmp, "-cp", luceneCoreJar, src}, log); err != nil {
		return err
	}
	_ = os.Remove(src) // not needed to run the driver; a leftover is harmless
	return nil
}

// LuceneVersion is the version of the Lucene jar, for the report.
func LuceneVersion() string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "liblucene8-java").Output()
	if err != nil {
		return "lucene 8 (unknown version)"
	}
	return "lucene " + strings.TrimSpace(string(out))
}
