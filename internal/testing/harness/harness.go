// Package harness holds what the process harnesses share (testserver and
// s3test for the tests, bench/serverproc and summa-bench for the
// benchmarks): the module's root, free loopback ports, the summa-server
// build, and a process's output read while it runs.
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Module is the path of the project's module.
const Module = "github.com/summadev/summa"

// ModuleRoot returns the directory of the project's go.mod at or above
// the working directory.
func ModuleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("module root: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			if strings.Contains(string(b), "module "+Module+"\n") {
				return d, nil
			}
			return "", fmt.Errorf("%s/go.mod is not %s; run from the repository", d, Module)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", errors.New("no go.mod above the working directory; run from the repository")
		}
		d = parent
	}
}

// FreePorts returns n distinct loopback ports that were free a moment
// ago (all are held open until every one is picked).
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// BuildServer builds ./cmd/summa-server of the module at root into dir
// and returns the binary's path.
func BuildServer(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "summa-server")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/summa-server")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/summa-server: %v\n%s", err, bytes.TrimSpace(out))
	}
	return bin, nil
}

// Tail returns the last n lines of s, after a line that counts the
// earlier ones when there are more.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d earlier lines)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// Output collects a process's output (its command's Stdout and Stderr)
// while a test reads it.
type Output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

// String returns everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
