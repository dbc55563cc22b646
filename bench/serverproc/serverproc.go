// Package serverproc runs summa-server processes for the benchmarks that
// measure the real binary (bench-replication, bench-backup; the build and
// the port also for summa-bench's HTTP ingest): build it, start on a
// loopback port, wait until ready, call the HTTP API, kill; and the
// disk's sequential write rate those benchmarks print beside their own.
package serverproc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/summadev/summa/internal/testing/harness"
)

// Proc is one summa-server process.
type Proc struct {
	// Cmd is the running command.
	Cmd *exec.Cmd
	// URL is the server's base URL (http://host:port).
	URL string
	// HC is the client of its calls.
	HC *http.Client
}

// WorkDir returns dir, or when dir is empty a new temporary directory
// named prefix* that remove deletes (remove does nothing for dir).
func WorkDir(dir, prefix string) (work string, remove func(), err error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, fmt.Errorf("work directory: %w", err)
	}
	return d, func() { os.RemoveAll(d) }, nil
}

// Build builds cmd/summa-server of the module at root into dir (five
// minutes at most) and returns the binary's path.
func Build(ctx context.Context, root, dir string) (string, error) {
	if root == "" {
		return "", fmt.Errorf("module root unknown")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return harness.BuildServer(ctx, root, dir)
}

// FreeAddr returns a loopback address with a port free right now.
func FreeAddr() (string, error) {
	ports, err := harness.FreePorts(1)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), nil
}

// Start runs bin on dataDir on a free loopback port and waits until it
// is ready.
func Start(bin, dataDir string, extra ...string) (*Proc, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	return StartOn(bin, dataDir, addr, extra...)
}

// StartOn runs bin on dataDir listening on addr, its output appended to
// dataDir.log, and waits (a minute at most) until /readyz answers 200.
func StartOn(bin, dataDir, addr string, extra ...string) (*Proc, error) {
	args := append([]string{"--data-dir", dataDir, "--listen", addr, "--log-level", "0"}, extra...)
	cmd := exec.Command(bin, args...)
	logf, err := os.OpenFile(dataDir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the server log: %w", err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Proc{Cmd: cmd, URL: "http://" + addr, HC: &http.Client{Timeout: 5 * time.Minute}}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := p.HC.Get(p.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("summa-server on %s not ready (see %s.log)", dataDir, dataDir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the process (SIGKILL) and waits for it.
func (p *Proc) Stop() {
	_ = p.Cmd.Process.Kill()
	_ = p.Cmd.Wait()
}

// Call sends one request (a string body is sent as NDJSON, anything else
// as JSON) and decodes a 2xx answer into out.
func (p *Proc) Call(method, path string, body, out any) error {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("encode the body of %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, p.URL+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	resp, err := p.HC.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// IndexSize returns the bytes of index's live segments.
func (p *Proc) IndexSize(index string) (int64, error) {
	var st struct {
		Segments []struct {
			SizeBytes int64 `json:"sizeBytes"`
		} `json:"segments"`
	}
	if err := p.Call("GET", "/v1/indexes/"+index, nil, &st); err != nil {
		return 0, err
	}
	var size int64
	for _, s := range st.Segments {
		size += s.SizeBytes
	}
	return size, nil
}

// DiskWriteRate writes n bytes sequentially to path in 4 MiB writes,
// fsyncs, removes the file, and returns MiB/s.
func DiskWriteRate(path string, n int64) (float64, error) {
	defer os.Remove(path)
	return DiskWriteRateKept(path, n)
}

// DiskWriteRateKept is DiskWriteRate, the file kept (the caller removes
// it): a later probe then writes new blocks too, not the ones this one
// freed. On virtual disks a rewrite of blocks just freed can run several
// times faster than a write of new data.
func DiskWriteRateKept(path string, n int64) (float64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("disk probe: %w", err)
	}
	buf := make([]byte, 4<<20)
	for i := range buf {
		buf[i] = byte(i*31 + i>>9)
	}
	t0 := time.Now()
	for w := int64(0); w < n; w += int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return 0, fmt.Errorf("disk probe: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, fmt.Errorf("disk probe: %w", err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("disk probe: %w", err)
	}
	return float64(n) / (1 << 20) / time.Since(t0).Seconds(), nil
}

// CPUTime returns the CPU time (user and system) the process has used,
// read from /proc (Linux only).
func (p *Proc) CPUTime() (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time: %w", err)
	}
	// Fields after the command name (which may hold spaces) start at ")".
	rest := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(rest) < 13 {
		return 0, fmt.Errorf("cpu time: short /proc/%d/stat", p.Cmd.Process.Pid)
	}
	var ticks int64
	for _, f := range rest[11:13] { // utime, stime (fields 14 and 15)
		var n int64
		if _, err := fmt.Sscan(f, &n); err != nil {
			return 0, fmt.Errorf("cpu time: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times.
const clockTicks = 100
