package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// driverSpec is how one peer engine's driver (Xapian's C++, Lucene's
// Java) is compiled from its embedded source into the driver cache.
type driverSpec struct {
	// name prefixes the log lines and errors ("xapian") and the cache
	// entries (name-driver-<hash of source>).
	name string
	// source is the embedded driver source; its hash keys the cache entry.
	source []byte
	// packages are the Debian packages that make available return "".
	packages []string
	// available says why the driver cannot be built here ("" when it can).
	available func() string
	// runtime: available's tools also run the driver, so they are checked
	// (and installed) even when the cache entry is already built.
	runtime bool
	// installHint: the error of a missing tool names the apt-get command.
	installHint bool
	// marker is the file under the cache entry whose presence says the
	// entry is built ("" when the entry is that file itself).
	marker string
	// compile builds the driver at tmp (out is the cache entry it is
	// renamed to once complete).
	compile func(out, tmp string, log io.Writer) error
}

// driverBuilds are the cache entries built or found by this process.
var driverBuilds struct {
	sync.Mutex
	done map[string]bool
}

// buildDriver returns the cache entry of spec's driver under cacheDir,
// compiling it first when it is missing (after installing spec.packages
// with apt-get when install is set and a tool is missing). Entries of
// older sources are removed once the new one is built.
func buildDriver(spec driverSpec, cacheDir string, install bool, log io.Writer) (string, error) {
	log = orDiscard(log)
	sum := sha256.Sum256(spec.source)
	prefix := spec.name + "-driver-"
	out := filepath.Join(cacheDir, prefix+hex.EncodeToString(sum[:6]))
	driverBuilds.Lock()
	defer driverBuilds.Unlock()
	if driverBuilds.done[out] {
		return out, nil
	}
	_, statErr := os.Stat(filepath.Join(out, spec.marker))
	if spec.runtime || statErr != nil {
		if err := ensureDriverTools(spec, install, log); err != nil {
			return "", err
		}
	}
	if statErr != nil {
		if err := os.MkdirAll(cacheDir, 0o755); err != nil {
			return "", fmt.Errorf("%s: driver cache: %w", spec.name, err)
		}
		tmp := out + ".tmp"
		os.RemoveAll(tmp)
		if err := spec.compile(out, tmp, log); err != nil {
			os.RemoveAll(tmp)
			return "", err
		}
		if err := os.Rename(tmp, out); err != nil {
			return "", fmt.Errorf("%s: driver cache: %w", spec.name, err)
		}
		removeStaleDrivers(cacheDir, prefix, out)
	}
	if driverBuilds.done == nil {
		driverBuilds.done = map[string]bool{}
	}
	driverBuilds.done[out] = true
	return out, nil
}

// EnsureTools installs pkgs with apt-get (logging as who) when available
// says a tool is missing and install is set; it returns why a tool is
// still missing ("" when none is).
func EnsureTools(who string, available func() string, pkgs []string, install bool, log io.Writer) string {
	why := available()
	if why != "" && install {
		AptInstall(who, why, pkgs, log)
		why = available()
	}
	return why
}

// ensureDriverTools installs spec.packages when a tool is missing and
// install is set, and says why the driver still cannot be built.
func ensureDriverTools(spec driverSpec, install bool, log io.Writer) error {
	why := EnsureTools(spec.name, spec.available, spec.packages, install, log)
	switch {
	case why == "":
		return nil
	case spec.installHint:
		return fmt.Errorf("%s: %s; install with: apt-get install %s", spec.name, why, strings.Join(spec.packages, " "))
	default:
		return fmt.Errorf("%s: %s", spec.name, why)
	}
}

// runCompiler runs a compiler of spec name's driver, logging its command
// line; a failure's error ends with the compiler's last lines of output.
func runCompiler(name, tool string, args []string, log io.Writer) error {
	fmt.Fprintf(log, "%s: %s %s\n", name, tool, strings.Join(args, " "))
	if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: compiling the driver: %v: %s", name, err, lastLines(out, 5))
	}
	return nil
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
