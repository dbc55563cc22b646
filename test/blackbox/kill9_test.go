package blackbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/summadev/summa/client"
)

// keyUniverse bounds the primary keys of the main index, so its size stays
// below one search page however many trials run.
const keyUniverse = 3000

// kill9Env is what persists across the trials of TestKill9.
type kill9Env struct {
	ps      []string
	main    *indexModel
	victims []*indexModel // indexes whose deletion is not confirmed yet
	nextKey int           // keys [0, nextKey) of the main index were used
	version uint64        // last document version handed out
}

// workload is the client of one trial: it writes, commits, creates and
// deletes indexes until the server dies under it, recording every
// acknowledgement in the models.
type workload struct {
	s      *Server
	rng    *rand.Rand
	env    *kill9Env
	trial  int
	victim bool // create and delete a victim index in this trial
	// victimAt is the loop iteration at which victim work happens.
	victimAt int
	// events receives "commit" and "delete" when such a request is sent.
	events chan string
	// maint runs explicit merges and compactions concurrently with the
	// writes (they must not change what the index shows).
	maint bool
	// mu guards violations.
	mu sync.Mutex
	// violations are contract violations seen by the client.
	violations []string
	// merges counts maintenance requests answered 200, conflicts those
	// answered with a retryable 409, mergesSent those sent.
	merges, conflicts, mergesSent atomic.Int64
	// stopped is why the workload stopped (a transport error after the kill).
	stopped error
	// stats
	commits, batches, deletes int
}

func (w *workload) event(e string) {
	select {
	case w.events <- e:
	default:
	}
}

func (w *workload) violation(format string, args ...any) {
	w.mu.Lock()
	w.violations = append(w.violations, fmt.Sprintf(format, args...))
	w.mu.Unlock()
}

// maintenance calls merge and compact on the main index at random
// intervals until the server dies or stop is closed.
func (w *workload) maintenance(rng *rand.Rand, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(10+rng.IntN(150)) * time.Millisecond):
		}
		maxSegments := []int{1, 2, 4, 8, 16}[rng.IntN(5)]
		path, body := "/v1/indexes/main/merge", any(map[string]int{"maxSegments": maxSegments})
		if rng.IntN(3) == 0 {
			path, body = "/v1/indexes/main/compact", any(map[string]int{})
		}
		w.mergesSent.Add(1)
		r, err := w.s.Do(context.Background(), "POST", path, body)
		if err != nil {
			return
		}
		var eb ErrorBody
		switch {
		case r.Status == http.StatusOK:
			w.merges.Add(1)
		case r.Status == http.StatusConflict && json.Unmarshal(r.Body, &eb) == nil && eb.Error.Retryable:
			w.conflicts.Add(1)
		case r.Status == http.StatusServiceUnavailable && (r.ErrCode() == "Backpressure"):
		default:
			w.violation("POST %s: %s", path, r)
			return
		}
	}
}

// call sends one request, retrying retryable 503 answers. A transport
// error (the server died) is returned; so is a non-retryable answer.
func (w *workload) call(method, path string, body any) (*Response, error) {
	for attempt := 0; ; attempt++ {
		r, err := w.s.Do(context.Background(), method, path, body)
		if err != nil {
			return nil, err
		}
		if r.Status == http.StatusServiceUnavailable {
			code := r.ErrCode()
			if r.Header.Get("Retry-After") == "" {
				w.violation("%s %s: 503 %s without Retry-After", method, path, code)
			}
			if code == "Backpressure" || code == "CommitFlushTimeout" {
				if attempt > 2000 {
					w.violation("%s %s: still %s after %d attempts", method, path, code, attempt)
					return r, errUnexpected
				}
				time.Sleep(time.Duration(5+w.rng.IntN(20)) * time.Millisecond)
				continue
			}
		}
		return r, nil
	}
}

var errUnexpected = errors.New("unexpected answer")

func (w *workload) expect(r *Response, method, path string, status int) error {
	if r.Status != status {
		w.violation("%s %s: want %d, got %s", method, path, status, r)
		return errUnexpected
	}
	return nil
}

func (w *workload) create(m *indexModel) error {
	path := "/v1/indexes/" + m.name
	m.createSent = true
	r, err := w.call("PUT", path, map[string]any{"schema": testSchema})
	if err != nil {
		return err
	}
	if r.Status != http.StatusCreated && r.Status != http.StatusOK {
		w.violation("PUT %s: want 201 or 200, got %s", path, r)
		return errUnexpected
	}
	m.created = true
	return nil
}

func (w *workload) ingest(m *indexModel, docs []Doc) error {
	path := "/v1/indexes/" + m.name + "/documents"
	r, err := w.call("POST", path, NDJSON(docs))
	if err != nil {
		return err
	}
	if err := w.expect(r, "POST", path, http.StatusOK); err != nil {
		return err
	}
	var out struct {
		Accepted int `json:"accepted"`
	}
	if err := json.Unmarshal(r.Body, &out); err != nil || out.Accepted != len(docs) {
		w.violation("POST %s: %d documents sent, answer %s", path, len(docs), r)
		return errUnexpected
	}
	for _, d := range docs {
		m.pending = append(m.pending, op{pk: d.ID, n: d.N})
	}
	w.batches++
	return nil
}

func (w *workload) deleteDoc(m *indexModel, key string) error {
	path := "/v1/indexes/" + m.name + "/documents/" + key
	r, err := w.call("DELETE", path, nil)
	if err != nil {
		return err
	}
	if err := w.expect(r, "DELETE", path, http.StatusOK); err != nil {
		return err
	}
	var out struct {
		Deleted *int `json:"deleted"`
	}
	if json.Unmarshal(r.Body, &out) != nil || out.Deleted == nil || *out.Deleted < 0 || *out.Deleted > 1 {
		w.violation("DELETE %s: answer %s, want {\"deleted\":0 or 1}", path, r)
	}
	m.pending = append(m.pending, op{pk: key, delete: true})
	w.deletes++
	return nil
}

func (w *workload) commit(m *indexModel) error {
	path := "/v1/indexes/" + m.name + "/commit"
	m.commitInFlight = true
	w.event("commit")
	r, err := w.call("POST", path, nil)
	if err != nil {
		return err
	}
	if err := w.expect(r, "POST", path, http.StatusOK); err != nil {
		return err
	}
	next := m.acked.apply(m.pending)
	var out CommitResult
	if err := json.Unmarshal(r.Body, &out); err != nil {
		w.violation("POST %s: answer %s: %v", path, r, err)
	} else if out.Documents != int64(len(next)) {
		w.violation("POST %s: answered documents=%d, the index holds %d live documents", path, out.Documents, len(next))
	}
	m.acked, m.pending, m.commitInFlight = next, nil, false
	w.commits++
	return nil
}

func (w *workload) deleteIndex(m *indexModel) error {
	path := "/v1/indexes/" + m.name
	m.deleteSent = true
	w.event("delete:" + m.name)
	r, err := w.call("DELETE", path, nil)
	if err != nil {
		return err
	}
	if err := w.expect(r, "DELETE", path, http.StatusAccepted); err != nil {
		return err
	}
	m.deleteAcked = true
	return nil
}

// keys returns n keys for a batch: mostly new ones while the universe
// lasts, otherwise used ones (upserts, also of deleted documents).
func (w *workload) keys(n int) []int {
	out := make([]int, 0, n)
	seen := map[int]bool{}
	for len(out) < n {
		var k int
		if w.env.nextKey < keyUniverse && (w.env.nextKey == 0 || w.rng.IntN(10) < 7) {
			k = w.env.nextKey
			w.env.nextKey++
		} else {
			k = w.rng.IntN(w.env.nextKey)
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func (w *workload) batch(prefix string, keys []int) []Doc {
	docs := make([]Doc, len(keys))
	for i, k := range keys {
		w.env.version++
		docs[i] = makeDoc(w.env.ps, prefix, k+int(w.env.version), w.env.version)
		docs[i].setID(pk(prefix, k))
	}
	return docs
}

// victimWork runs the victim part of a trial: finish deleting leftover
// victims, then create one, fill it, commit and delete it.
func (w *workload) victimWork() error {
	for _, v := range w.env.victims {
		if !v.deleteAcked {
			if err := w.deleteIndex(v); err != nil {
				return err
			}
		}
	}
	if !w.victim {
		return nil
	}
	v := newIndexModel(victimName(w.trial))
	w.env.victims = append(w.env.victims, v)
	if err := w.create(v); err != nil {
		return err
	}
	for b := 0; b < 1+w.rng.IntN(3); b++ {
		keys := make([]int, 10+w.rng.IntN(60))
		for i := range keys {
			keys[i] = b*100 + i
		}
		if err := w.ingest(v, w.batch("v", keys)); err != nil {
			return err
		}
		if err := w.commit(v); err != nil {
			return err
		}
	}
	return w.deleteIndex(v)
}

// victimName names the victim of a trial; every other one has the longest
// legal name, full of dots, so that kills land at every point of the
// deletion of such names too.
func victimName(trial int) string {
	base := fmt.Sprintf("victim-%d", trial)
	if trial%2 == 0 {
		return base
	}
	pad := strings.Repeat("v.", (maxNameLen-len(base))/2)
	if (maxNameLen-len(base))%2 == 1 {
		pad = "w" + pad
	}
	return pad + base
}

// run drives the main index until the server dies.
func (w *workload) run() {
	m := w.env.main
	stop := make(chan struct{})
	var maint sync.WaitGroup
	defer maint.Wait()
	defer close(stop)
	err := func() error {
		if !m.created {
			if err := w.create(m); err != nil {
				return err
			}
		}
		if w.maint {
			rng := rand.New(rand.NewPCG(w.rng.Uint64(), 7))
			maint.Add(1)
			go func() { defer maint.Done(); w.maintenance(rng, stop) }()
		}
		sinceCommit := 0
		for it := 0; ; it++ {
			if it == w.victimAt {
				if err := w.victimWork(); err != nil {
					return err
				}
			}
			var err error
			switch x := w.rng.IntN(100); {
			case sinceCommit >= 4 || x < 25:
				err = w.commit(m)
				sinceCommit = 0
			case x < 40 && w.env.nextKey > 0:
				for range 1 + w.rng.IntN(5) {
					if err = w.deleteDoc(m, pk("k", w.rng.IntN(w.env.nextKey))); err != nil {
						break
					}
				}
				sinceCommit++
			default:
				err = w.ingest(m, w.batch("k", w.keys(1+w.rng.IntN(120))))
				sinceCommit++
			}
			if err != nil {
				return err
			}
		}
	}()
	w.stopped = err
}

// checkDataDir requires every directory of the data directory to be a
// served index, or the leftover of a PUT that was never answered: a
// deleted index leaves nothing behind (no trash, no partial directory).
func checkDataDir(t *testing.T, v *Server, dataDir string, trial int, env *kill9Env) {
	t.Helper()
	unacked := map[string]bool{}
	for _, m := range append([]*indexModel{env.main}, env.victims...) {
		if !m.created {
			unacked[m.name] = true
		}
	}
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() || unacked[e.Name()] {
			continue
		}
		if r := v.MustDo("GET", "/v1/indexes/"+e.Name(), nil); r.Status != http.StatusOK {
			t.Errorf("trial %d: data directory holds %s/ (%v), which is no served index (GET: %d)",
				trial, e.Name(), dirNames(filepath.Join(dataDir, e.Name())), r.Status)
		}
	}
}

// waitRemovalStarted returns as soon as dir has fewer entries than when it
// was first listed (or is gone), or after timeout.
func waitRemovalStarted(dir string, timeout time.Duration) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	n := len(ents)
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); {
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) < n {
			return
		}
		n = max(n, len(ents))
	}
}

// verifyIndex checks one index after a restart against its model and
// settles the model. It reports whether the index is gone.
func verifyIndex(t *testing.T, v *Server, dataDir string, m *indexModel, trial int) (gone bool) {
	t.Helper()
	path := "/v1/indexes/" + m.name
	idxDir := filepath.Join(dataDir, m.name)
	r := v.MustDo("GET", path, nil)
	switch r.Status {
	case http.StatusNotFound:
		if code := r.ErrCode(); code != "IndexNotFound" {
			t.Errorf("trial %d: GET %s: 404 with error code %q, want IndexNotFound", trial, path, code)
		}
		if m.created && !m.deleteSent {
			t.Errorf("trial %d: index %s was created (PUT answered) and never deleted, but GET answers 404", trial, m.name)
		}
		if m.created && exists(idxDir) {
			t.Errorf("trial %d: index %s answers 404 after its deletion (DELETE answered: %v) but its directory %s remains, holding %v",
				trial, m.name, m.deleteAcked, idxDir, dirNames(idxDir))
		}
		if !m.created && exists(idxDir) {
			// A PUT was cut short and left a partial directory: the name
			// must still be usable.
			t.Logf("trial %d: unanswered PUT %s left %v; creating it again", trial, path, dirNames(idxDir))
			r := v.MustDo("PUT", path, map[string]any{"schema": testSchema})
			if r.Status != http.StatusCreated {
				t.Errorf("trial %d: PUT %s over the leftover of an interrupted create: %s, want 201", trial, path, r)
				return true
			}
			m.created, m.deleteSent = true, false
			if st := v.Status(m.name); st.Documents != 0 || len(st.Quarantined) != 0 {
				t.Errorf("trial %d: re-created %s: documents %d, quarantined %v; want an empty index", trial, m.name, st.Documents, st.Quarantined)
			}
			if unowned, _ := unownedSegFiles(t, idxDir); len(unowned) > 0 {
				t.Errorf("trial %d: re-created %s keeps seg_ files of the interrupted create: %v", trial, m.name, unowned)
			}
			return false
		}
		return true
	case http.StatusOK:
	default:
		t.Errorf("trial %d: GET %s: %s", trial, path, r)
		return false
	}
	if m.deleteAcked {
		t.Errorf("trial %d: DELETE %s answered 202 before the kill, but the index is back after restart", trial, path)
	}
	if exists(filepath.Join(idxDir, ".deleting")) {
		t.Errorf("trial %d: index %s is served with a .deleting marker in its directory", trial, m.name)
	}
	var st client.IndexStatus
	if err := json.Unmarshal(r.Body, &st); err != nil {
		t.Fatalf("trial %d: GET %s: %v", trial, path, err)
	}
	if st.State != "open" {
		t.Errorf("trial %d: %s state %q after restart, want open", trial, m.name, st.State)
	}
	if len(st.Quarantined) > 0 {
		t.Errorf("trial %d: %s has quarantined segments after a crash: %+v", trial, m.name, st.Quarantined)
	}
	if st.UncommittedDocuments != 0 {
		t.Errorf("trial %d: %s has %d uncommitted documents right after restart", trial, m.name, st.UncommittedDocuments)
	}
	got := stateOf(v.LiveDocs(m.name)) // fails on a duplicate primary key
	if uint64(len(got)) != st.Documents {
		t.Errorf("trial %d: %s: STATUS documents=%d but %d live documents are searchable", trial, m.name, st.Documents, len(got))
	}
	cands := m.candidates()
	matched := false
	for _, c := range cands {
		if c.equal(got) {
			matched = true
			break
		}
	}
	if !matched {
		msg := fmt.Sprintf("trial %d: %s shows neither the last acknowledged commit nor the in-flight one (commit in flight: %v, %d writes pending):\n  vs acknowledged: %s",
			trial, m.name, m.commitInFlight, len(m.pending), cands[0].diff(got))
		if len(cands) > 1 {
			msg += "\n  vs in-flight: " + cands[1].diff(got)
		}
		t.Error(msg)
	}
	checkSparse(t, v, m.name, got, trial)
	unowned, md := unownedSegFiles(t, idxDir)
	if len(unowned) > 0 {
		t.Errorf("trial %d: %s: seg_ files owned by no live segment or mask of metadata.json (generation %d): %v", trial, m.name, md.Generation, unowned)
	}
	if missing := missingSegFiles(t, idxDir, md); len(missing) > 0 {
		t.Errorf("trial %d: %s: metadata-live segments without files: %s", trial, m.name, idsString(missing))
	}
	if md.Generation != st.Generation {
		t.Errorf("trial %d: %s: STATUS generation %d, metadata.json generation %d", trial, m.name, st.Generation, md.Generation)
	}
	m.settle(got)
	m.created = true
	// A DELETE that was not answered and did not happen is sent again.
	m.deleteSent = false
	return false
}

// TestKill9 kills the server with SIGKILL at seeded random moments during
// ingestion, commits, index creation and index deletion (and during
// startup recovery), restarts it and checks that every index shows exactly
// its last acknowledged commit or the one in flight, each primary key once,
// with no unowned seg_ file and no resurrected deleted index.
func TestKill9(t *testing.T) {
	needBinary(t)
	trials := 12
	if longMode() {
		trials = 200
	}
	if v, err := strconv.Atoi(os.Getenv("SUMMA_KILL9_TRIALS")); err == nil && v > 0 {
		trials = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("SUMMA_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (rerun with SUMMA_SEED=%d)", seed, seed)

	k := &kill9Run{
		dir:  t.TempDir(),
		seed: seed,
		env:  &kill9Env{ps: paragraphs(t), main: newIndexModel("main")},
		// SUMMA_KILL9_NO_DELETES=1 leaves index deletion out (to look at
		// the rest while a deletion bug is open).
		noDeletes: os.Getenv("SUMMA_KILL9_NO_DELETES") == "1",
	}
	start := time.Now()
	for trial := 0; trial < trials && !t.Failed(); trial++ {
		k.trial(t, trial)
		k.recoverAndVerify(t, trial)
	}
	t.Logf("kill -9 trials: %d (%s); main index %d documents; %v",
		k.stats.trials, k.stats, len(k.env.main.acked), time.Since(start).Round(time.Millisecond))
	fmt.Printf("kill -9 trials: %d\n", k.stats.trials)
}

// kill9Run is one TestKill9 run: its data directory, seed, model and counts.
type kill9Run struct {
	dir       string
	seed      uint64
	env       *kill9Env
	noDeletes bool
	stats     kill9Stats
}

// kill9Stats counts what the trials did.
type kill9Stats struct {
	trials, inCommit, inDelete, inStartup, random int
	commits, batches                              int
	mergesSent, merges, conflicts                 int
}

func (s kill9Stats) String() string {
	return fmt.Sprintf("during commit %d, index deletion %d, startup %d, random moment %d; %d commits and %d batches acknowledged; merges/compactions: %d sent, %d answered 200, %d retryable 409",
		s.inCommit, s.inDelete, s.inStartup, s.random, s.commits, s.batches, s.mergesSent, s.merges, s.conflicts)
}

// Kill moments of a trial.
const (
	killInStartup = iota // during startup recovery
	killInCommit         // right after a commit is sent
	killInDelete         // right after an index DELETE is sent
	killInRemoval        // as soon as a deleted index's directory loses files
	killRandom           // at a random delay
)

// killMode draws the kill moment of a trial.
func (k *kill9Run) killMode(trial int, rng *rand.Rand) int {
	mode := [8]int{killInStartup, killInCommit, killInCommit, killInDelete, killInRemoval,
		killRandom, killRandom, killRandom}[rng.IntN(8)]
	switch {
	case trial == 0 && mode == killInStartup:
		return killRandom // the first trial creates the index
	case k.noDeletes && (mode == killInDelete || mode == killInRemoval):
		return killRandom
	}
	return mode
}

// trial runs one server under a workload and kills it with SIGKILL.
func (k *kill9Run) trial(t *testing.T, trial int) {
	t.Helper()
	k.stats.trials++
	rng := workloadRand(k.seed, trial)
	mode := k.killMode(trial, rng)
	if mode == killInStartup {
		s := spawn(t, k.dir)
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		if !s.Running() && !strings.Contains(s.Output(), "address already in use") {
			t.Fatalf("trial %d: server exited during startup: %v\n%s", trial, s.ExitErr(), tail(s.Output(), 40))
		}
		s.Kill()
		k.stats.inStartup++
		return
	}
	s := startServer(t, k.dir)
	w := &workload{s: s, rng: rand.New(rand.NewPCG(k.seed, uint64(trial))), env: k.env, trial: trial,
		events: make(chan string, 64)}
	deleting := mode == killInDelete || mode == killInRemoval
	w.victim = (deleting || rng.IntN(3) == 0) && !k.noDeletes
	w.maint = rng.IntN(2) == 0
	w.victimAt = rng.IntN(6)
	if deleting && k.env.main.created {
		w.victimAt = 0
	}
	done := make(chan struct{})
	go func() { w.run(); close(done) }()
	k.waitForMoment(mode, rng, w, done)

	if !s.Running() {
		t.Fatalf("trial %d: server exited on its own under load: %v\n%s", trial, s.ExitErr(), tail(s.Output(), 40))
	}
	select {
	case <-done:
		for _, v := range w.violations {
			t.Errorf("trial %d: %s", trial, v)
		}
		t.Fatalf("trial %d: workload stopped before the kill: %v", trial, w.stopped)
	default:
	}
	s.Kill()
	<-done
	switch mode {
	case killInCommit:
		k.stats.inCommit++
	case killInDelete, killInRemoval:
		k.stats.inDelete++
	default:
		k.stats.random++
	}
	k.stats.commits += w.commits
	k.stats.batches += w.batches
	k.stats.mergesSent += int(w.mergesSent.Load())
	k.stats.merges += int(w.merges.Load())
	k.stats.conflicts += int(w.conflicts.Load())
	for _, v := range w.violations {
		t.Errorf("trial %d: %s", trial, v)
	}
	if errors.Is(w.stopped, errUnexpected) {
		t.Fatalf("trial %d: workload stopped on an unexpected answer", trial)
	}
}

// waitForMoment returns at the trial's kill moment (at the latest after
// five seconds, or when the workload stops).
func (k *kill9Run) waitForMoment(mode int, rng *rand.Rand, w *workload, done <-chan struct{}) {
	var killAfter <-chan time.Time
	var wantEvent string
	var eventDelay time.Duration
	nth := 1 + rng.IntN(4)
	switch mode {
	case killInCommit:
		wantEvent, eventDelay = "commit", time.Duration(rng.IntN(3000))*time.Microsecond
	case killInDelete, killInRemoval:
		wantEvent, eventDelay, nth = "delete", time.Duration(rng.IntN(8000))*time.Microsecond, 1
	default:
		killAfter = time.After(time.Duration(10+rng.IntN(2500)) * time.Millisecond)
	}
	fallback := time.After(5 * time.Second)
	for seen := 0; ; {
		select {
		case e := <-w.events:
			kind, name, _ := strings.Cut(e, ":")
			if kind != wantEvent {
				continue
			}
			if seen++; seen < nth {
				continue
			}
			if mode == killInRemoval {
				// Step 7 of the deletion has begun.
				waitRemovalStarted(filepath.Join(k.dir, name), 2*time.Second)
			} else {
				time.Sleep(eventDelay)
			}
			return
		case <-killAfter:
			return
		case <-fallback:
			return
		case <-done:
			return
		}
	}
}

// recoverAndVerify restarts the server with background maintenance off
// (so every seg_ file on disk must belong to metadata.json) and checks
// every index against its model.
func (k *kill9Run) recoverAndVerify(t *testing.T, trial int) {
	t.Helper()
	v := startServer(t, k.dir, "--optimizer-threads", "0")
	if k.env.main.createSent {
		verifyIndex(t, v, k.dir, k.env.main, trial)
	}
	var left []*indexModel
	for _, m := range k.env.victims {
		if gone := verifyIndex(t, v, k.dir, m, trial); !gone {
			left = append(left, m)
		}
	}
	k.env.victims = left
	checkDataDir(t, v, k.dir, trial, k.env)
	v.Stop()
}
