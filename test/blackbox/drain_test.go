package blackbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestDrainUnderConcurrentIngestion drains while several writers ingest:
// writers get 503 Draining with Retry-After, the drain commits everything
// that was accepted (it survives a kill -9), /readyz is 503 and /healthz
// 200 while draining, and resume admits writes again.
func TestDrainUnderConcurrentIngestion(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	const index = "drain"
	s := startServer(t, dir)
	s.CreateIndex(index, testSchema)
	s.Ingest(index, makeDocs(ps, "base", 0, 100))
	s.Commit(index)

	const writers = 4
	var (
		mu        sync.Mutex
		accepted  = map[string]bool{}
		problems  []string
		refusals  int
		drainSent = make(chan struct{})
	)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				docs := makeDocs(ps, fmt.Sprintf("w%d", w), i*25, i*25+25)
				r, err := s.Do(context.Background(), "POST", "/v1/indexes/"+index+"/documents", NDJSON(docs))
				mu.Lock()
				switch {
				case err != nil:
					problems = append(problems, fmt.Sprintf("writer %d: %v", w, err))
				case r.Status == http.StatusOK:
					var out struct {
						Accepted int `json:"accepted"`
					}
					if json.Unmarshal(r.Body, &out) != nil || out.Accepted != len(docs) {
						problems = append(problems, fmt.Sprintf("writer %d: answer %s for %d documents", w, r, len(docs)))
					}
					for _, d := range docs {
						accepted[d.ID] = true
					}
				case r.Status == http.StatusServiceUnavailable && r.ErrCode() == "Draining":
					refusals++
					if r.Header.Get("Retry-After") == "" {
						problems = append(problems, fmt.Sprintf("writer %d: 503 Draining without Retry-After", w))
					}
					select {
					case <-drainSent:
					default:
						problems = append(problems, fmt.Sprintf("writer %d: 503 Draining before the drain was requested", w))
					}
				case r.Status == http.StatusServiceUnavailable && r.ErrCode() == "Backpressure":
					// Retryable; try again.
				default:
					problems = append(problems, fmt.Sprintf("writer %d: %s", w, r))
				}
				backoff := err == nil && r.ErrCode() == "Backpressure"
				stop := err != nil || (r.Status != http.StatusOK && !backoff)
				mu.Unlock()
				if stop {
					return
				}
				if backoff {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}(w)
	}

	// Let the writers get going: at least 300ms and 200 accepted documents.
	time.Sleep(300 * time.Millisecond)
	var before int
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		before = len(accepted)
		mu.Unlock()
		if before >= 200 {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("only %d documents accepted in 30s before the drain", before)
		}
	}
	close(drainSent)
	s.Expect(http.StatusAccepted, "POST", "/v1/admin/drain", nil, nil)
	if r := s.MustDo("GET", "/readyz", nil); r.Status != http.StatusServiceUnavailable {
		t.Errorf("/readyz during drain: %d, want 503", r.Status)
	}
	if r := s.MustDo("GET", "/healthz", nil); r.Status != http.StatusOK {
		t.Errorf("/healthz during drain: %d, want 200", r.Status)
	}
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	if refusals != writers {
		t.Errorf("%d writers were refused with 503 Draining, want %d", refusals, writers)
	}

	deadline := time.Now().Add(60 * time.Second)
	var ds DrainStatus
	for {
		s.Expect(http.StatusOK, "GET", "/v1/admin/drain", nil, &ds)
		if !ds.Draining {
			t.Fatalf("GET /v1/admin/drain: draining=false during the drain: %+v", ds)
		}
		if ds.Drained {
			break
		}
		if r := s.MustDo("GET", "/healthz", nil); r.Status != http.StatusOK {
			t.Errorf("/healthz during drain: %d, want 200", r.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained after 60s: %+v", ds)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ds.UncommittedDocuments != 0 {
		t.Errorf("drained with %d uncommitted documents", ds.UncommittedDocuments)
	}
	// Still draining: readyz 503, writes refused, healthz 200.
	if r := s.MustDo("GET", "/readyz", nil); r.Status != http.StatusServiceUnavailable {
		t.Errorf("/readyz after drained (not resumed): %d, want 503", r.Status)
	}
	if r := s.MustDo("GET", "/healthz", nil); r.Status != http.StatusOK {
		t.Errorf("/healthz after drained: %d, want 200", r.Status)
	}
	r := s.MustDo("POST", "/v1/indexes/"+index+"/documents", NDJSON(makeDocs(ps, "late", 0, 3)))
	if r.Status != http.StatusServiceUnavailable || r.ErrCode() != "Draining" || r.Header.Get("Retry-After") == "" {
		t.Errorf("ingest after drained: %s (Retry-After %q), want 503 Draining with Retry-After", r, r.Header.Get("Retry-After"))
	}
	if r := s.MustDo("DELETE", "/v1/indexes/"+index+"/documents/"+pk("base", 1), nil); r.Status != http.StatusServiceUnavailable || r.ErrCode() != "Draining" {
		t.Errorf("document delete after drained: %s, want 503 Draining", r)
	}

	want := len(accepted) + 100
	t.Logf("%d documents accepted by %d writers (%d before the drain request)", len(accepted), writers, before)
	checkAll := func(when string) {
		t.Helper()
		live := s.LiveDocs(index)
		if len(live) != want {
			t.Errorf("%s: %d searchable documents, want %d (100 + every accepted one)", when, len(live), want)
		}
		missing := 0
		for k := range accepted {
			if _, ok := live[k]; !ok {
				if missing++; missing <= 5 {
					t.Errorf("%s: accepted document %s is not searchable", when, k)
				}
			}
		}
		if st := s.Status(index); st.Documents != uint64(want) || st.UncommittedDocuments != 0 {
			t.Errorf("%s: STATUS documents %d uncommitted %d, want %d and 0", when, st.Documents, st.UncommittedDocuments, want)
		}
	}
	checkAll("drained")

	// The drain's commit is durable: kill -9 and look again.
	s.Kill()
	s = startServer(t, dir)
	checkAll("after kill -9 following the drain")

	// A new server starts undrained; drain it again and resume.
	s.Expect(http.StatusAccepted, "POST", "/v1/admin/drain", nil, nil)
	for {
		s.Expect(http.StatusOK, "GET", "/v1/admin/drain", nil, &ds)
		if ds.Drained {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("second drain not done: %+v", ds)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Expect(http.StatusOK, "POST", "/v1/admin/resume", nil, nil)
	s.Expect(http.StatusOK, "GET", "/v1/admin/drain", nil, &ds)
	if ds.Draining || ds.Drained {
		t.Errorf("after resume: %+v, want draining=false drained=false", ds)
	}
	if r := s.MustDo("GET", "/readyz", nil); r.Status != http.StatusOK {
		t.Errorf("/readyz after resume: %d, want 200", r.Status)
	}
	s.Ingest(index, makeDocs(ps, "resumed", 0, 10))
	s.Commit(index)
	want += 10
	checkAll("after resume")
	s.Stop()
}
