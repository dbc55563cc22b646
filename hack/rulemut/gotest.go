package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

var (
	// errTestBuild: the package's test binary does not build.
	errTestBuild = errors.New("the tests do not build")
	// errDeadline: the test binary outlived -timeout by a minute and was
	// killed by the runner (its own timeout report never came).
	errDeadline = errors.New("killed at the runner's deadline")
)

// testBuildTimeout bounds the compilation of one test binary; it is apart
// from the run's deadline so that a slow build on a loaded machine never
// eats into the time the tests are given.
const testBuildTimeout = 30 * time.Minute

// goTest compiles pkg's test binary in dir (go test -c), then runs it in
// the package's directory, as go test does, with -test.run run and
// -test.timeout timeout. The returned error wraps errTestBuild or
// errDeadline when the tests did not run to their own end.
func goTest(dir, pkg, run string, timeout time.Duration, verbose bool) (string, error) {
	bin := filepath.Join(dir, ".rulemut-bin", strings.NewReplacer("/", "_", ".", "_").Replace(pkg)+".test")
	bctx, bcancel := context.WithTimeout(context.Background(), testBuildTimeout)
	defer bcancel()
	if out, err := output(bctx, dir, "go", "test", "-c", "-o", bin, pkg); err != nil {
		return out, fmt.Errorf("%w: %v", errTestBuild, err)
	}
	args := []string{"-test.count=1", "-test.timeout", timeout.String(), "-test.run", run}
	if verbose {
		args = append(args, "-test.v")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	out, err := output(ctx, filepath.Join(dir, pkg), bin, args...)
	if err != nil && ctx.Err() != nil {
		return out, fmt.Errorf("%w: %v", errDeadline, err)
	}
	return out, err
}

func output(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// copyTree copies the files git sees in root (tracked, and untracked but
// not ignored) to dst, leaving out large stray binaries.
func copyTree(root, dst string) error {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink or directory
		}
		if st.Size() > 8<<20 && !strings.HasSuffix(name, ".go") {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, data, st.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
