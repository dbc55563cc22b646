package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/summadev/summa/bench/serverproc"
)

// HTTPRun is the ingest through summa-server in one repetition.
type HTTPRun struct {
	// Ingest is the time of every POST documents and commit.
	Ingest         time.Duration
	IngestDocsPerS float64
	IngestMBPerS   float64
	// NDJSONMB is the request bodies' size.
	NDJSONMB float64
	// Post is the latency of POST /documents (the server parses and
	// admits the batch); Commit is the latency of POST /commit.
	Post, Commit Dist
	// Search is the latency of POST /search over the query set.
	Search Dist
	// Hits is each query's totalHits.
	Hits map[string]int
	// Err is set when the run failed part-way.
	Err string
}

// IndexName is the index the HTTP ingest creates.
const IndexName = "bench"

// server is one running summa-server process.
type server struct {
	cmd  *exec.Cmd
	base string
	hc   *http.Client
	logs bytes.Buffer
	done chan error
}

func startServer(ctx context.Context, bin, dataDir string) (*server, error) {
	addr, err := serverproc.FreeAddr()
	if err != nil {
		return nil, err
	}
	s := &server{base: "http://" + addr, hc: &http.Client{Timeout: 10 * time.Minute}, done: make(chan error, 1)}
	s.cmd = exec.Command(bin, "--data-dir", dataDir, "--listen", addr)
	s.cmd.Stdout = &s.logs
	s.cmd.Stderr = &s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.done <- s.cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := s.hc.Get(s.base + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("summa-server exited before ready: %v: %s", err, lastLines(s.logs.Bytes(), 5))
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("summa-server not ready after 60s: %s", lastLines(s.logs.Bytes(), 5))
		}
	}
}

// stop sends SIGTERM (the server drains and shuts down) and kills the
// process if it has not exited within 60 seconds.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// call sends one request and decodes a 2xx JSON answer into out; 503
// answers are retried after their Retry-After (at most 200 times).
func (s *server) call(method, path, ctype string, body []byte, out any) error {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := s.hc.Do(req)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusServiceUnavailable && attempt < 200 {
			wait := 100 * time.Millisecond
			if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
				wait = min(time.Duration(secs)*time.Second, time.Second)
			}
			time.Sleep(wait)
			continue
		}
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(data))
		}
		if out != nil {
			if err := json.Unmarshal(data, out); err != nil {
				return fmt.Errorf("%s %s: %w", method, path, err)
			}
		}
		return nil
	}
}

// RunHTTP starts the server on a fresh data directory, creates the index,
// posts the corpus as NDJSON with a commit every cfg.CommitEvery documents,
// then runs the query set through POST /search and shuts the server down.
func RunHTTP(ctx context.Context, cfg *Config, bin string, c *Corpus, raw [][]byte, qs []Query, rep int) (*HTTPRun, error) {
	dataDir, err := os.MkdirTemp(cfg.WorkDir, "http-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dataDir)
	srv, err := startServer(ctx, bin, dataDir)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	schemaBody, _ := json.Marshal(map[string]json.RawMessage{"schema": json.RawMessage(SchemaJSON)})
	if err := srv.call("PUT", "/v1/indexes/"+IndexName, "application/json", schemaBody, nil); err != nil {
		return nil, err
	}
	run := &HTTPRun{Hits: map[string]int{}}
	var posts, commits []time.Duration
	var body bytes.Buffer
	var ndjson int64
	for _, b := range batches(len(raw), cfg.CommitEvery) {
		body.Reset()
		for _, line := range raw[b[0]:b[1]] {
			body.Write(line)
			body.WriteByte('\n')
		}
		ndjson += int64(body.Len())
		t0 := time.Now()
		var acc struct {
			Accepted int `json:"accepted"`
		}
		if err := srv.call("POST", "/v1/indexes/"+IndexName+"/documents", "application/x-ndjson", body.Bytes(), &acc); err != nil {
			return nil, err
		}
		if acc.Accepted != b[1]-b[0] {
			return nil, fmt.Errorf("POST documents accepted %d of %d", acc.Accepted, b[1]-b[0])
		}
		t1 := time.Now()
		if err := srv.call("POST", "/v1/indexes/"+IndexName+"/commit", "application/json", []byte("{}"), nil); err != nil {
			return nil, err
		}
		t2 := time.Now()
		run.Ingest += t2.Sub(t0)
		posts = append(posts, t1.Sub(t0))
		commits = append(commits, t2.Sub(t1))
	}
	run.Post = NewDist(posts)
	run.Commit = NewDist(commits)
	run.IngestDocsPerS = float64(len(raw)) / run.Ingest.Seconds()
	run.IngestMBPerS = c.MB() / run.Ingest.Seconds()
	run.NDJSONMB = float64(ndjson) / 1e6
	var lat []time.Duration
	rounds := max(1, cfg.SearchRounds/5)
	for r := 0; r < rounds+1; r++ {
		for _, q := range qs {
			body, _ := json.Marshal(map[string]any{"query": QueryString(q), "limit": 10})
			var res struct {
				TotalHits int `json:"totalHits"`
			}
			t := time.Now()
			if err := srv.call("POST", "/v1/indexes/"+IndexName+"/search", "application/json", body, &res); err != nil {
				return nil, err
			}
			if r == 0 {
				run.Hits[q.Name] = res.TotalHits // first round warms up
			} else {
				lat = append(lat, time.Since(t))
			}
		}
	}
	run.Search = NewDist(lat)
	return run, nil
}
