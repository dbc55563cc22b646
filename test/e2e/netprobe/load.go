package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/summadev/summa/client"
)

// The load mode: searches sent back to back through one Service name by a
// few workers sharing one HTTP client (keep-alive connections, as an
// application's client keeps them), for the read followers' e2e spec. A
// search fails when it returns an error of any kind (connection refused
// or reset, a timeout, a non-2xx answer) or finds another number of hits
// than -expect. Nothing is retried: a failure is counted, printed, and the
// worker goes on with its next search.

// loadTotals is the JSON line printed on stdout every second (the only
// output, so that the last line of the pod's log is the state).
type loadTotals struct {
	// OK counts the searches that answered with the expected hits.
	OK int64 `json:"ok"`
	// Failed counts every other search.
	Failed int64 `json:"failed"`
	// LastError is the most recent failure, if any.
	LastError string `json:"lastError,omitempty"`
	// Recent are the last recentFailures failures, oldest first.
	Recent []string `json:"recent,omitempty"`
}

// recentFailures bounds loadTotals.Recent.
const recentFailures = 20

// loadPause is the pause between two searches of a worker.
const loadPause = 20 * time.Millisecond

// runLoad searches until the process is killed. It returns only when the
// client cannot be set up.
func runLoad(o options, expect, workers int) error {
	c, err := engineClient(o)
	if err != nil {
		return err
	}
	var ok, failed atomic.Int64
	var mu sync.Mutex
	var recent []string
	for w := 0; w < workers; w++ {
		go func() {
			for {
				err := searchOnce(c, o, expect)
				if err == nil {
					ok.Add(1)
				} else {
					failed.Add(1)
					mu.Lock()
					recent = append(recent, time.Now().UTC().Format(time.RFC3339Nano)+" "+err.Error())
					if len(recent) > recentFailures {
						recent = recent[1:]
					}
					mu.Unlock()
				}
				time.Sleep(loadPause)
			}
		}()
	}
	for range time.Tick(time.Second) {
		mu.Lock()
		t := loadTotals{OK: ok.Load(), Failed: failed.Load(), Recent: slices.Clone(recent)}
		if len(recent) > 0 {
			t.LastError = recent[len(recent)-1]
		}
		mu.Unlock()
		line, _ := json.Marshal(t)
		fmt.Println(string(line))
	}
	return nil
}

// searchOnce runs one search and checks its number of hits.
func searchOnce(c *client.Client, o options, expect int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Search(ctx, o.index, client.SearchRequest{Query: o.query, Limit: 10})
	if err != nil {
		return err
	}
	if res.TotalHits != expect {
		return fmt.Errorf("%d hits, want %d", res.TotalHits, expect)
	}
	return nil
}
