package server_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/server"
)

// TestConcurrentTraffic ingests, commits and searches at once, then
// deletes the index under load: every answer is a success or one of the
// expected refusals, never a 500, and no request hangs.
func TestConcurrentTraffic(t *testing.T) {
	e := newEnv(t, server.Limits{})
	e.create("c")
	docs := paragraphDocs(t, 400)
	var wg sync.WaitGroup
	var failures atomic.Int32
	fail := func(format string, args ...any) {
		failures.Add(1)
		t.Errorf(format, args...)
	}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w * 100; i < (w+1)*100; i += 10 {
				for {
					_, err := e.c.AddDocuments(e.ctx, "c", docs[i:i+10]...)
					if err == nil {
						break
					}
					if !client.IsCode(err, client.CodeBackpressure) {
						fail("add: %v", err)
						return
					}
				}
			}
		}()
	}
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(2)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := e.c.Commit(e.ctx, "c"); err != nil {
				fail("commit: %v", err)
				return
			}
		}
	}()
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := e.c.Search(e.ctx, "c", client.SearchRequest{Query: "light"}); err != nil {
				fail("search: %v", err)
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	bg.Wait()
	if failures.Load() > 0 {
		return
	}
	if res := e.mustCommit("c"); res.Documents != 400 {
		t.Fatalf("documents %d, want 400", res.Documents)
	}

	// Delete under load: only 404/409 refusals, and everything ends.
	done := make(chan struct{})
	var load sync.WaitGroup
	for w := range 3 {
		load.Add(1)
		go func() {
			defer load.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				var err error
				switch w {
				case 0:
					_, err = e.c.Search(e.ctx, "c", client.SearchRequest{Query: "colours"})
				case 1:
					_, err = e.c.AddDocuments(e.ctx, "c", map[string]any{"id": fmt.Sprintf("late%d", i)})
				case 2:
					_, err = e.c.Commit(e.ctx, "c")
				}
				if err != nil && !client.IsCode(err, client.CodeIndexNotFound) && !client.IsCode(err, client.CodeIndexDeleting) &&
					!client.IsCode(err, client.CodeBackpressure) {
					t.Errorf("under deletion: %v", err)
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if err := e.c.DeleteIndex(e.ctx, "c"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	waitGone(t, e, "c")
	close(done)
	load.Wait()
}
