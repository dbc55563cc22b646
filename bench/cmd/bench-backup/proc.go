package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The summa-server process, its HTTP calls and the disk probe: the same
// as bench-replication's.

// indexSize returns the bytes of the bench index's live segments.
func indexSize(p *proc) (int64, error) {
	var st struct {
		Segments []struct {
			SizeBytes int64 `json:"sizeBytes"`
		} `json:"segments"`
	}
	if err := p.call("GET", "/v1/indexes/bench", nil, &st); err != nil {
		return 0, err
	}
	var size int64
	for _, s := range st.Segments {
		size += s.SizeBytes
	}
	return size, nil
}

// diskWriteRate writes n bytes sequentially to path in 4 MiB writes,
// fsyncs, and returns MiB/s.
func diskWriteRate(path string, n int64) (float64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	buf := make([]byte, 4<<20)
	for i := range buf {
		buf[i] = byte(i*31 + i>>9)
	}
	t0 := time.Now()
	for w := int64(0); w < n; w += int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return 0, err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	return float64(n) / (1 << 20) / time.Since(t0).Seconds(), nil
}

// proc is one summa-server process.
type proc struct {
	cmd *exec.Cmd
	url string
	hc  *http.Client
}

// start runs bin on dataDir on a free loopback port and waits until it
// is ready.
func start(bin, dataDir string, extra ...string) (*proc, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	args := append([]string{"--data-dir", dataDir, "--listen", addr, "--log-level", "0"}, extra...)
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(dataDir + ".log")
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, url: "http://" + addr, hc: &http.Client{Timeout: 5 * time.Minute}}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := p.hc.Get(p.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("summa-server on %s not ready (see %s.log)", dataDir, dataDir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the process.
func (p *proc) stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// call sends one request (a string body is sent as NDJSON, anything else
// as JSON) and decodes a 2xx answer into out.
func (p *proc) call(method, path string, body, out any) error {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, p.url+path, rd)
	if err != nil {
		return err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}
