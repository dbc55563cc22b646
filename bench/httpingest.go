package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/summadev/summa/bench/serverproc"
	"github.com/summadev/summa/client"
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

// retryLimit bounds the retries of one request answered "retry later"
// (a 503 during a commit's publication, for instance).
const retryLimit = 200

// retrying calls op until it succeeds, fails for good, or was answered
// "retry later" retryLimit times; it waits the answer's Retry-After
// (between 100 ms and 1 s) before each retry.
func retrying(ctx context.Context, op func() error) error {
	for attempt := 0; ; attempt++ {
		err := op()
		var apiErr *client.APIError
		if err == nil || !errors.As(err, &apiErr) || !apiErr.Retryable || attempt >= retryLimit {
			return err
		}
		wait := min(max(apiErr.RetryAfter, 100*time.Millisecond), time.Second)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// RunHTTP starts the server on a fresh data directory, creates the index,
// posts the corpus as NDJSON with a commit every cfg.CommitEvery documents,
// then runs the query set through POST /search and shuts the server down.
func RunHTTP(ctx context.Context, cfg *Config, bin string, c *Corpus, raw [][]byte, qs []Query, rep int) (*HTTPRun, error) {
	// The server makes its data directory; the run's work directory is new.
	dataDir := filepath.Join(cfg.WorkDir, fmt.Sprintf("http-%d", rep))
	defer os.RemoveAll(dataDir)
	srv, err := serverproc.Start(bin, dataDir)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	cl := client.New(srv.URL, srv.HC)
	if err := retrying(ctx, func() error {
		_, err := cl.CreateIndex(ctx, IndexName, json.RawMessage(SchemaJSON))
		return err
	}); err != nil {
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
		var accepted int
		if err := retrying(ctx, func() (err error) {
			accepted, err = cl.AddNDJSON(ctx, IndexName, bytes.NewReader(body.Bytes()))
			return err
		}); err != nil {
			return nil, err
		}
		if accepted != b[1]-b[0] {
			return nil, fmt.Errorf("POST documents accepted %d of %d", accepted, b[1]-b[0])
		}
		t1 := time.Now()
		if err := retrying(ctx, func() error {
			_, err := cl.Commit(ctx, IndexName)
			return err
		}); err != nil {
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
			req := client.SearchRequest{Query: QueryString(q), Limit: 10}
			var res *client.SearchResult
			t := time.Now()
			if err := retrying(ctx, func() (err error) {
				res, err = cl.Search(ctx, IndexName, req)
				return err
			}); err != nil {
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
