package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/internal/testing/testserver"
)

// racer sends requests from several goroutines and collects the first
// answer the contract does not allow.
type racer struct {
	e    *env
	mu   sync.Mutex
	errs []error
}

// send sends r and requires one of want; it returns the answer (nil on a
// transport error, which is recorded).
func (x *racer) send(r request, want []answer) *testserver.Response {
	resp, err := x.e.send(r)
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case err != nil:
		x.errs = append(x.errs, fmt.Errorf("%s %s: %v", r.method, r.path, err))
	case !matches(resp, want):
		x.errs = append(x.errs, fmt.Errorf("%s %s: got %s, want %s", r.method, r.path, resp, describe(want)))
	}
	return resp
}

// err is the first recorded error.
func (x *racer) err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.errs) == 0 {
		return nil
	}
	return x.errs[0]
}

// batch is n documents of index name with tag, keys w<writer>-<i>-<j>.
func batch(tag string, writer, i, n int) ([]byte, []string) {
	var b bytes.Buffer
	var keys []string
	for j := 0; j < n; j++ {
		k := fmt.Sprintf("w%d-%d-%d", writer, i, j)
		keys = append(keys, k)
		fmt.Fprintf(&b, `{"id":%q,"tag":%q,"body":"light is refracted %d times"}`+"\n", k, tag, i)
	}
	return b.Bytes(), keys
}

// retryable is the answers a write may get while drains come and go.
var retryable = []answer{{200, ""}, {503, "Draining"}, {503, "Backpressure"}}

// drainRace ingests from two writers into a fresh index while drains,
// resumes and commits come and go. Every document of an accepted request
// must be live after a final resume and commit; nothing refused may be.
func drainRace(e *env) error {
	const name = "hx-race"
	ctx := context.Background()
	if _, err := e.admin.CreateIndex(ctx, name, json.RawMessage(baseSchema)); err != nil {
		return err
	}
	err := raceDrains(e, name)
	if derr := dropIndex(e, name); err == nil {
		err = derr
	}
	return err
}

// raceDrains is drainRace on an existing index.
func raceDrains(e *env, name string) error {
	x := &racer{e: e}
	var mu sync.Mutex
	accepted := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body, keys := batch("race", w, i, 5)
				r := x.send(request{method: http.MethodPost, path: indexPath(name, "documents"), body: body, as: asWrite}, retryable)
				if r != nil && r.Status == http.StatusOK {
					mu.Lock()
					for _, k := range keys {
						accepted[k] = true
					}
					mu.Unlock()
				} else {
					time.Sleep(10 * time.Millisecond)
				}
				if i%5 == 4 {
					x.send(request{method: http.MethodPost, path: indexPath(name, "commit"), as: asWrite}, retryable)
				}
			}
		}(w)
	}
	for k := 0; k < 6; k++ {
		time.Sleep(60 * time.Millisecond)
		x.send(request{method: http.MethodPost, path: "/v1/admin/drain"}, []answer{{202, ""}})
		time.Sleep(60 * time.Millisecond)
		x.send(request{method: http.MethodPost, path: "/v1/admin/resume"}, okay)
	}
	close(stop)
	wg.Wait()
	x.send(request{method: http.MethodPost, path: "/v1/admin/resume"}, okay)
	body, keys := batch("race", 9, 0, 5) // one batch after the race: accepted for sure
	if r := x.send(request{method: http.MethodPost, path: indexPath(name, "documents"), body: body, as: asWrite}, okay); r != nil && r.Status == http.StatusOK {
		for _, k := range keys {
			accepted[k] = true
		}
	}
	x.send(request{method: http.MethodPost, path: indexPath(name, "commit"), as: asWrite}, okay)
	if err := x.err(); err != nil {
		return err
	}
	res, err := e.reader.Search(context.Background(), name, client.SearchRequest{Query: "tag:race", Limit: 10000})
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, h := range res.Hits {
		var d struct {
			ID string `json:"id"`
		}
		json.Unmarshal(h.Fields, &d)
		live[d.ID] = true
	}
	var lost, extra []string
	for k := range accepted {
		if !live[k] {
			lost = append(lost, k)
		}
	}
	for k := range live {
		if !accepted[k] {
			extra = append(extra, k)
		}
	}
	e.note("%d documents were accepted during the race", len(accepted))
	if len(lost) > 0 || len(extra) > 0 {
		return fmt.Errorf("after the race %d documents were accepted: %d lost %v, %d live that were refused %v",
			len(accepted), len(lost), firstN(lost, 5), len(extra), firstN(extra, 5))
	}
	return nil
}

// deleteRace ingests and commits from two writers while the index is
// deleted under them: every answer is the contract's (accepted, or
// IndexNotFound/IndexDeleting/Draining-style refusals, never a 5xx), the
// deletion finishes, and the name is reusable with nothing of the old
// index in it.
func deleteRace(e *env) error {
	const name = "hx-doomed"
	ctx := context.Background()
	if _, err := e.admin.CreateIndex(ctx, name, json.RawMessage(baseSchema)); err != nil {
		return err
	}
	gone := []answer{{200, ""}, {404, "IndexNotFound"}, {409, "IndexDeleting"}, {503, "Backpressure"}}
	x := &racer{e: e}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body, _ := batch("doomed", w, i, 5)
				x.send(request{method: http.MethodPost, path: indexPath(name, "documents"), body: body, as: asWrite}, gone)
				if i%4 == 3 {
					x.send(request{method: http.MethodPost, path: indexPath(name, "commit"), as: asWrite}, gone)
				}
			}
		}(w)
	}
	time.Sleep(300 * time.Millisecond)
	x.send(request{method: http.MethodDelete, path: indexPath(name, "")}, []answer{{202, ""}})
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err := x.err(); err != nil {
		return err
	}
	if err := waitGone(e, name); err != nil {
		return err
	}
	if created, err := e.admin.CreateIndex(ctx, name, json.RawMessage(baseSchema)); err != nil || !created {
		return fmt.Errorf("re-create %s after its deletion: created=%v, %v", name, created, err)
	}
	st, err := e.reader.GetIndex(ctx, name)
	if err != nil {
		return err
	}
	if st.Documents != 0 || st.UncommittedDocuments != 0 {
		return fmt.Errorf("re-created %s holds %d documents, %d uncommitted, from its deleted namesake",
			name, st.Documents, st.UncommittedDocuments)
	}
	return dropIndex(e, name)
}

// dropIndex deletes an index and waits until it is gone.
func dropIndex(e *env, name string) error {
	r, err := e.send(request{method: http.MethodDelete, path: indexPath(name, "")})
	if err != nil {
		return err
	}
	if r.Status != http.StatusAccepted {
		return fmt.Errorf("DELETE %s: got %s, want 202", name, r)
	}
	return waitGone(e, name)
}

// firstN is at most n elements of s.
func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
