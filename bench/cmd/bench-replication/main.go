// Command bench-replication measures read followers on the real
// summa-server binary (make bench-replication): the lag from a leader's
// commit to its visibility on a follower (p99 over many single-document
// commits), and the catch-up rate of a new follower copying an index of
// -index-mb, beside the disk's sequential write rate measured in the same
// run on the same filesystem; then a rolling restart (two followers one at
// a time, each ready and caught up before the next, the leader last)
// under a search load routed to whichever process is ready, as a read
// Service routes. It prints
//
//	replication lag p99 ms: N
//	follower catch-up MB/s: N
//	searches failed during rolling restart: N
//	disk sequential write MB/s: N
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/summadev/summa/internal/corpus"
)

func main() {
	indexMB := flag.Int("index-mb", 1024, "size of the index the new follower copies, in MiB")
	commits := flag.Int("commits", 200, "single-document commits timed for the lag")
	work := flag.String("dir", "", "work directory (default: a temporary directory, removed at the end)")
	flag.Parse()
	if err := run(*indexMB, *commits, *work); err != nil {
		fmt.Fprintln(os.Stderr, "bench-replication:", err)
		os.Exit(1)
	}
}

// run is the whole benchmark.
func run(indexMB, commits int, work string) error {
	if work == "" {
		d, err := os.MkdirTemp("", "bench-replication-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	bin := filepath.Join(work, "summa-server")
	build := exec.Command("go", "build", "-o", bin, "./cmd/summa-server")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build summa-server: %w", err)
	}
	// Background maintenance off: the figures are the copy's, not those of
	// a merge's output copied meanwhile.
	leaderExtra := []string{"--optimizer-threads", "0"}
	leader, err := start(bin, filepath.Join(work, "leader"), leaderExtra...)
	if err != nil {
		return err
	}
	defer leader.stop()
	if err := leader.call("PUT", "/v1/indexes/bench", map[string]any{"schema": json.RawMessage(
		`{"fields":[{"name":"id","type":"keyword","primary":true},{"name":"body","type":"text"}]}`)}, nil); err != nil {
		return err
	}
	size, err := fill(leader, int64(indexMB)<<20)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "leader index: %.0f MiB\n", float64(size)/(1<<20))
	disk, err := diskWriteRate(filepath.Join(work, "disk-probe"), size)
	if err != nil {
		return err
	}
	fdir := filepath.Join(work, "follower")
	if err := os.RemoveAll(fdir); err != nil {
		return err
	}
	follower, err := start(bin, fdir, "--follow", leader.url)
	if err != nil {
		return err
	}
	defer follower.stop()
	t0 := time.Now()
	want := leader.generation()
	for follower.generation() < want {
		time.Sleep(5 * time.Millisecond)
	}
	catchUp := float64(size) / (1 << 20) / time.Since(t0).Seconds()
	lags, err := lagSamples(leader, follower, commits)
	if err != nil {
		return err
	}
	failed, sent, err := rollingRestart(bin, work, leader, follower, leaderExtra)
	if err != nil {
		return err
	}
	fmt.Printf("replication lag p99 ms: %.0f\n", lags[len(lags)*99/100].Seconds()*1000)
	fmt.Printf("follower catch-up MB/s: %.0f\n", catchUp)
	fmt.Printf("searches failed during rolling restart: %d\n", failed)
	fmt.Printf("disk sequential write MB/s: %.0f (catch-up at %.0f%% of it; index %.0f MiB, lag median %.0f ms; %d searches during the rolling restart)\n",
		disk, 100*catchUp/disk, float64(size)/(1<<20), lags[len(lags)/2].Seconds()*1000, sent)
	return nil
}

// lagSamples commits one document at a time on the leader and measures
// how long after the commit's answer the follower serves that generation.
func lagSamples(leader, follower *proc, n int) ([]time.Duration, error) {
	var lags []time.Duration
	for i := range n {
		doc := fmt.Sprintf(`{"id":"lag%d","body":"lag probe %d"}`+"\n", i, i)
		if err := leader.call("POST", "/v1/indexes/bench/documents", doc, nil); err != nil {
			return nil, err
		}
		var res struct {
			Generation uint64 `json:"generation"`
		}
		if err := leader.call("POST", "/v1/indexes/bench/commit", nil, &res); err != nil {
			return nil, err
		}
		t := time.Now()
		deadline := t.Add(time.Minute)
		for follower.generation() < res.Generation {
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("generation %d not on the follower after a minute", res.Generation)
			}
			time.Sleep(time.Millisecond)
		}
		lags = append(lags, time.Since(t))
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	return lags, nil
}

// fill ingests documents made of the corpus's paragraphs until the
// leader's index holds target bytes, committing every batch, and returns
// the index's size.
func fill(leader *proc, target int64) (int64, error) {
	ps, err := corpus.Paragraphs()
	if err != nil {
		return 0, err
	}
	size, err := indexSize(leader)
	if err != nil {
		return 0, err
	}
	// A kept -dir: documents are added after those already there.
	var st struct {
		Documents int `json:"documents"`
	}
	if err := leader.call("GET", "/v1/indexes/bench", nil, &st); err != nil {
		return 0, err
	}
	for batch, id := 0, st.Documents; size < target; batch++ {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		for b.Len() < 16<<20 {
			var body strings.Builder
			for k := range 8 {
				body.WriteString(ps[(id*7+k*13)%len(ps)])
				body.WriteString(fmt.Sprintf(" w%dx%d ", id%5000, k))
			}
			_ = enc.Encode(map[string]string{"id": fmt.Sprintf("d%d", id), "body": body.String()})
			id++
		}
		if err := leader.call("POST", "/v1/indexes/bench/documents", b.String(), nil); err != nil {
			return 0, err
		}
		if err := leader.call("POST", "/v1/indexes/bench/commit", nil, nil); err != nil {
			return 0, err
		}
		if size, err = indexSize(leader); err != nil {
			return 0, err
		}
		if batch%10 == 0 {
			fmt.Fprintf(os.Stderr, "ingested %d documents, index %.0f MiB\n", id, float64(size)/(1<<20))
		}
	}
	return size, nil
}

// indexSize returns the bytes of the bench index's live segments.
func indexSize(leader *proc) (int64, error) {
	var st struct {
		Segments []struct {
			SizeBytes int64 `json:"sizeBytes"`
		} `json:"segments"`
	}
	if err := leader.call("GET", "/v1/indexes/bench", nil, &st); err != nil {
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
	return startOn(bin, dataDir, addr, extra...)
}

// startOn runs bin on dataDir listening on addr and waits until it is
// ready. Each process answers 2 s more after SIGTERM, unready
// (--shutdown-delay), as the operator runs engines with followers, so
// that the rolling restart's router drops it before its port closes.
func startOn(bin, dataDir, addr string, extra ...string) (*proc, error) {
	args := append([]string{"--data-dir", dataDir, "--listen", addr, "--log-level", "0", "--shutdown-delay", "2s"}, extra...)
	cmd := exec.Command(bin, args...)
	logf, err := os.OpenFile(dataDir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
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

// generation returns the served generation of the bench index (0 when it
// does not exist yet).
func (p *proc) generation() uint64 {
	var st struct {
		Generation uint64 `json:"generation"`
	}
	if err := p.call("GET", "/v1/indexes/bench", nil, &st); err != nil {
		return 0
	}
	return st.Generation
}
