package blackbox

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// leaderRound is one round of leader work: a batch, a deletion every
// third round, a commit, and a forced merge or compaction now and then.
// It returns the committed generation; record, when set, runs after each
// generation the round publishes.
func leaderRound(t *testing.T, leader *Server, ps []string, name string, round int, record ...func()) uint64 {
	t.Helper()
	published := func() {
		for _, r := range record {
			r()
		}
	}
	leader.Ingest(name, makeDocs(ps, "r", round*40, round*40+40))
	if round%3 == 2 {
		leader.Expect(http.StatusOK, "DELETE", "/v1/indexes/"+name+"/documents/"+pk("r", round*40-7), nil, nil)
	}
	g := leader.Commit(name).Generation
	published()
	switch round % 7 {
	case 4:
		leader.Expect(http.StatusOK, "POST", "/v1/indexes/"+name+"/compact", nil, nil)
		published()
	case 6:
		leader.Expect(http.StatusOK, "POST", "/v1/indexes/"+name+"/merge", map[string]any{"maxSegments": 1}, nil)
		published()
	}
	return max(g, leader.Status(name).Generation)
}

// TestReplication_FollowerConvergesUnderIngestionAndMaintenance: a
// follower started beside a leader under continuous ingestion, deletions,
// forced merges, compactions and background maintenance ends with the
// leader's generation, documents and search answers; an index created on
// the leader appears on the follower, and one deleted there disappears.
// STATUS and /metrics report the replication.
func TestReplication_FollowerConvergesUnderIngestionAndMaintenance(t *testing.T) {
	ps := paragraphs(t)
	leader := startServer(t, t.TempDir(), "--optimizer-threads", "1", "--optimizer-scan-interval", "200ms",
		"--optimizer-backoff-min", "200ms")
	leader.CreateIndex("books", testSchema)
	follower := startFollower(t, t.TempDir(), leader.URL(""))
	for round := range 24 {
		leaderRound(t, leader, ps, "books", round)
		switch round {
		case 5:
			leader.CreateIndex("extra", testSchema)
			leader.Ingest("extra", makeDocs(ps, "x", 0, 30))
			leader.Commit("extra")
		case 12:
			waitConverged(t, leader, follower, "extra")
			leader.Expect(http.StatusAccepted, "DELETE", "/v1/indexes/extra", nil, nil)
		}
	}
	st := waitConverged(t, leader, follower, "books")
	if r := st.Replication; r == nil || r.State != "following" || r.LeaderGeneration != st.Generation ||
		r.LagSeconds != 0 || r.Leader != leader.URL("") {
		t.Fatalf("follower's replication status %+v, generation %d", r, st.Generation)
	}
	for _, q := range []string{"light", "colours AND rays", "tag:everydoc"} {
		a, b := leader.Search("books", q, 20), follower.Search("books", q, 20)
		if a.TotalHits != b.TotalHits || len(a.Hits) != len(b.Hits) {
			t.Fatalf("search %q: leader %d hits, follower %d", q, a.TotalHits, b.TotalHits)
		}
		for i := range a.Hits {
			if string(a.Hits[i].Fields["id"]) != string(b.Hits[i].Fields["id"]) {
				t.Fatalf("search %q: hit %d differs", q, i)
			}
		}
	}
	waitUntil(t, "the deleted index to leave the follower", convergeTimeout, func() bool {
		_, ok := replStatus(t, follower, "extra")
		return !ok
	})
	m := follower.MustDo("GET", "/metrics", nil)
	if !strings.Contains(string(m.Body), `summa_replication_lag_seconds{index="books"} 0`) {
		t.Fatalf("follower /metrics has no lag of books:\n%s", grepLines(string(m.Body), "replication"))
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestF05_WritesOnAFollowerAnswerReadOnlyReplica: every write route of a
// follower answers 409 ReadOnlyReplica and changes nothing; reads work.
func TestF05_WritesOnAFollowerAnswerReadOnlyReplica(t *testing.T) {
	ps := paragraphs(t)
	leader := startServer(t, t.TempDir())
	leader.CreateIndex("books", testSchema)
	leader.Ingest("books", makeDocs(ps, "w", 0, 50))
	leader.Commit("books")
	follower := startFollower(t, t.TempDir(), leader.URL(""))
	before := waitConverged(t, leader, follower, "books")
	for _, w := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/indexes/books/documents", NDJSON(makeDocs(ps, "z", 0, 3))},
		{"DELETE", "/v1/indexes/books/documents/" + pk("w", 1), nil},
		{"POST", "/v1/indexes/books/commit", nil},
		{"POST", "/v1/indexes/books/merge", nil},
		{"POST", "/v1/indexes/books/reorder", nil},
		{"POST", "/v1/indexes/books/compact", nil},
		{"DELETE", "/v1/indexes/books", nil},
		{"PUT", "/v1/indexes/other", map[string]any{"schema": testSchema}},
	} {
		r := follower.MustDo(w.method, w.path, w.body)
		if r.Status != http.StatusConflict || r.ErrCode() != "ReadOnlyReplica" {
			t.Fatalf("%s %s on a follower: %s, want 409 ReadOnlyReplica", w.method, w.path, r)
		}
	}
	after, _ := replStatus(t, follower, "books")
	if after.Generation != before.Generation || after.Documents != before.Documents || after.UncommittedDocuments != 0 {
		t.Fatalf("a refused write changed the follower: %+v -> %+v", before.IndexStatus, after.IndexStatus)
	}
	if _, ok := replStatus(t, follower, "other"); ok {
		t.Fatal("a refused PUT created an index on the follower")
	}
}

// TestReplication_LeaderDownFollowerServesAndResumes: with its leader
// killed, a follower stays ready, serves what it has and says
// "disconnected"; the leader back on its address, it follows again.
func TestReplication_LeaderDownFollowerServesAndResumes(t *testing.T) {
	ps := paragraphs(t)
	ldir := t.TempDir()
	leader := startServer(t, ldir)
	leader.CreateIndex("books", testSchema)
	leader.Ingest("books", makeDocs(ps, "d", 0, 60))
	leader.Commit("books")
	follower := startFollower(t, t.TempDir(), leader.URL(""))
	st := waitConverged(t, leader, follower, "books")
	want := leader.LiveDocs("books")
	addr := leader.Addr
	leader.Kill()
	waitUntil(t, "state disconnected", convergeTimeout, func() bool {
		s, _ := replStatus(t, follower, "books")
		return s.Replication != nil && s.Replication.State == "disconnected"
	})
	for range 5 {
		if r := follower.MustDo("GET", "/readyz", nil); r.Status != http.StatusOK {
			t.Fatalf("follower not ready with its leader down: %s", r)
		}
		if got := follower.LiveDocs("books"); !sameDocs(got, want) {
			t.Fatalf("follower serves %d documents with its leader down, want %d", len(got), len(want))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if s, _ := replStatus(t, follower, "books"); s.Generation != st.Generation {
		t.Fatalf("generation %d while disconnected, want %d", s.Generation, st.Generation)
	}
	leader = spawn(t, ldir, "--listen", addr) // the last --listen wins
	leader.Addr = addr
	if err := leader.WaitReady(readyTimeout); err != nil {
		t.Fatalf("leader restarted on %s: %v", addr, err)
	}
	leader.Ingest("books", makeDocs(ps, "d", 60, 90))
	leader.Commit("books")
	s := waitConverged(t, leader, follower, "books")
	if s.Replication == nil || s.Replication.State != "following" {
		t.Fatalf("replication after the leader came back: %+v", s.Replication)
	}
}

// TestReplication_PromotionByHand: a follower's data directory started
// without --follow is a leader: it serves the same documents and takes
// writes, allocating IDs above every copied one.
func TestReplication_PromotionByHand(t *testing.T) {
	ps := paragraphs(t)
	leader := startServer(t, t.TempDir())
	leader.CreateIndex("books", testSchema)
	for round := range 4 {
		leaderRound(t, leader, ps, "books", round)
	}
	fdir := t.TempDir()
	follower := startFollower(t, fdir, leader.URL(""))
	waitConverged(t, leader, follower, "books")
	want := leader.LiveDocs("books")
	if code, _ := follower.Term(shutdownDeadline); code != 0 {
		t.Fatalf("follower exit code %d", code)
	}
	leader.Kill()
	promoted := startServer(t, fdir)
	if got := promoted.LiveDocs("books"); !sameDocs(got, want) {
		t.Fatalf("promoted follower serves %d documents, want %d", len(got), len(want))
	}
	if st := promoted.Status("books"); st.Generation == 0 {
		t.Fatal("promoted follower serves generation 0")
	}
	promoted.Ingest("books", makeDocs(ps, "p", 0, 10))
	promoted.Commit("books")
	if got := promoted.LiveDocs("books"); len(got) != len(want)+10 {
		t.Fatalf("promoted follower shows %d documents after a commit, want %d", len(got), len(want)+10)
	}
	if st, ok := replStatus(t, promoted, "books"); !ok || st.Replication != nil {
		t.Fatalf("a leader reports replication %+v", st.Replication)
	}
}

// TestReplication_CorruptedInTransitIsRefused: with a proxy flipping a
// byte of every file download, the follower never publishes the leader's
// generation (it serves the empty index it created); once downloads are
// clean again it converges.
func TestReplication_CorruptedInTransitIsRefused(t *testing.T) {
	ps := paragraphs(t)
	leader := startServer(t, t.TempDir())
	leader.CreateIndex("books", testSchema)
	leader.Ingest("books", makeDocs(ps, "c", 0, 80))
	leader.Commit("books")
	px := newProxy(t, leader.URL(""))
	px.corrupt.Store(true)
	// Not startFollower: a follower without a copy is not ready.
	follower := spawn(t, t.TempDir(), "--follow", px.srv.URL)
	waitUntil(t, "three corrupted downloads", convergeTimeout, func() bool { return px.corrupted.Load() >= 3 })
	st, ok := replStatus(t, follower, "books")
	if ok && (st.Generation != 0 || st.Documents != 0 || len(follower.LiveDocs("books")) != 0) {
		t.Fatalf("follower published a generation copied through corrupted downloads: %+v", st.IndexStatus)
	}
	if r := follower.MustDo("GET", "/readyz", nil); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("a follower that has no copy of its leader's index yet is ready: %s", r)
	}
	px.corrupt.Store(false)
	waitConverged(t, leader, follower, "books")
	if err := follower.WaitReady(readyTimeout); err != nil {
		t.Fatalf("the follower once it copied the leader: %v", err)
	}
}

// TestReplication_LeaderRetiresFilesWhileFollowerFetches: downloads are
// slowed while the leader merges, compacts and commits, so the files of
// the generation a follower copies are retired on the leader meanwhile;
// the hold keeps them downloadable, every generation the follower
// publishes is complete, and it converges. A hold released by hand lets
// the leader delete the retired files.
func TestReplication_LeaderRetiresFilesWhileFollowerFetches(t *testing.T) {
	ps := paragraphs(t)
	ldir := t.TempDir()
	leader := startServer(t, ldir)
	leader.CreateIndex("books", testSchema)
	for round := range 6 {
		leaderRound(t, leader, ps, "books", round)
	}
	// By hand: a hold, then a merge retiring its files, then downloads.
	var hold struct {
		Hold  string `json:"hold"`
		Files []struct {
			Name string `json:"name"`
			Size int64  `json:"size"`
		} `json:"files"`
	}
	leader.Expect(http.StatusOK, "GET", "/v1/indexes/books/replication", nil, &hold)
	if hold.Hold == "" || len(hold.Files) < 2 {
		t.Fatalf("replication answer without a hold or files: %+v", hold)
	}
	leader.Ingest("books", makeDocs(ps, "h", 0, 5))
	leader.Commit("books")
	leader.Expect(http.StatusOK, "POST", "/v1/indexes/books/merge", map[string]any{"maxSegments": 1}, nil)
	for _, f := range hold.Files {
		r := leader.MustDo("GET", "/v1/indexes/books/replication/holds/"+hold.Hold+"/files/"+f.Name, nil)
		if r.Status != http.StatusOK || int64(len(r.Body)) != f.Size {
			t.Fatalf("held file %s after a merge retired it: %d, %d bytes of %d", f.Name, r.Status, len(r.Body), f.Size)
		}
	}
	leader.Expect(http.StatusNoContent, "DELETE", "/v1/indexes/books/replication/holds/"+hold.Hold, nil, nil)
	waitUntil(t, "the retired files to be deleted once the hold is released", convergeTimeout, func() bool {
		on := segNames(t, filepath.Join(ldir, "books"))
		for _, f := range hold.Files {
			if _, ok := on[f.Name]; ok {
				return false
			}
		}
		return true
	})
	if r := leader.MustDo("GET", "/v1/indexes/books/replication/holds/"+hold.Hold+"/files/"+hold.Files[0].Name, nil); r.Status != http.StatusNotFound || r.ErrCode() != "HoldNotFound" {
		t.Fatalf("a released hold: %s, want 404 HoldNotFound", r)
	}
	// Through a slow proxy while the leader keeps rewriting.
	px := newProxy(t, leader.URL(""))
	px.delay.Store(int64(40 * time.Millisecond))
	fdir := t.TempDir()
	follower := startFollower(t, fdir, px.srv.URL)
	for round := 6; round < 20; round++ {
		leaderRound(t, leader, ps, "books", round)
		if st, ok := replStatus(t, follower, "books"); ok {
			if missing := missingSegFiles(t, filepath.Join(fdir, "books"), readMetadata(t, filepath.Join(fdir, "books"))); len(missing) > 0 && st.Generation > 0 {
				t.Fatalf("follower generation %d names missing files %v", st.Generation, missing)
			}
		}
	}
	px.delay.Store(0)
	waitConverged(t, leader, follower, "books")
	if px.files.Load() == 0 {
		t.Fatal("no download went through the proxy")
	}
}

// TestReplication_Kill9FollowerDuringCatchUp: a follower killed with
// SIGKILL at random points while it catches up serves, as soon as it is
// ready again, one of the leader's committed generations whole (the
// documents the leader showed at that generation), resumes without
// copying again the files it had published, and converges.
func TestReplication_Kill9FollowerDuringCatchUp(t *testing.T) {
	ps := paragraphs(t)
	// Every generation of the leader is recorded: no background
	// maintenance (the rounds merge and compact explicitly).
	leader := startServer(t, t.TempDir(), "--optimizer-threads", "0")
	leader.CreateIndex("books", testSchema)
	states := map[uint64]map[string]Doc{}
	record := func() {
		st := leader.Status("books")
		states[st.Generation] = leader.LiveDocs("books")
	}
	record()
	round := 0
	for ; round < 8; round++ {
		leaderRound(t, leader, ps, "books", round, record)
	}
	trials := 20
	if longMode() {
		trials = 60
	}
	fdir := t.TempDir()
	idir := filepath.Join(fdir, "books")
	rng := rand.New(rand.NewPCG(29, 5))
	// Slowed downloads stretch each catch-up, so that the kills land in
	// the middle of copies.
	px := newProxy(t, leader.URL(""))
	px.delay.Store(int64(30 * time.Millisecond))
	midway := 0
	for trial := range trials {
		f := spawn(t, fdir, "--follow", px.srv.URL)
		if trial%4 == 0 {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond) // anywhere, startup included
		} else {
			// Between two file downloads of a copy (or at the copy's end).
			seen, k := px.files.Load(), int64(1+rng.IntN(3))
			deadline := time.Now().Add(5 * time.Second)
			for px.files.Load() < seen+k && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		}
		f.Kill()
		// On disk, right after the kill: the commit point names only
		// files that are there.
		var live map[SegID]bool
		var before map[string]time.Time
		if exists(filepath.Join(idir, "metadata.json")) {
			m := readMetadata(t, idir)
			if missing := missingSegFiles(t, idir, m); len(missing) > 0 {
				t.Fatalf("trial %d: generation %d names missing files %v", trial, m.Generation, missing)
			}
			if m.Generation < leader.Status("books").Generation {
				midway++
			}
			live, before = m.LiveIDs(), segNames(t, idir)
		}
		f = startFollower(t, fdir, px.srv.URL)
		// At once: a whole committed generation of the leader.
		if st, ok := replStatus(t, f, "books"); ok {
			want, known := states[st.Generation]
			if !known && st.Generation != 0 {
				t.Fatalf("trial %d: follower serves generation %d, never committed by the leader", trial, st.Generation)
			}
			if got := f.LiveDocs("books"); known && !sameDocs(got, want) {
				t.Fatalf("trial %d: follower serves %d documents at generation %d, the leader had %d", trial, len(got), st.Generation, len(want))
			}
		}
		// Resume: the files it had published are not copied again.
		waitConverged(t, leader, f, "books")
		after := segNames(t, idir)
		for name, mt := range before {
			id, _, ok := parseSegFile(name)
			if !ok || !live[id] {
				continue
			}
			if at, still := after[name]; still && !at.Equal(mt) {
				t.Fatalf("trial %d: %s was copied again after the restart", trial, name)
			}
		}
		f.Kill()
		for range 2 + rng.IntN(3) {
			leaderRound(t, leader, ps, "books", round, record)
			round++
		}
	}
	t.Logf("%d of %d restarts found the follower behind the leader (killed during a catch-up)", midway, trials)
	f := startFollower(t, fdir, leader.URL(""))
	waitConverged(t, leader, f, "books")
	waitUntil(t, "no file outside the served generation", convergeTimeout, func() bool {
		unowned, _ := unownedSegFiles(t, idir)
		return len(unowned) == 0
	})
}

// TestReplication_OverTLSWithAReadToken: a follower of a leader that
// serves HTTPS with tokens copies it with a read-scope token and the CA
// (and --follow-server-name); a new follower with another CA copies
// nothing it could not verify and is not ready.
func TestReplication_OverTLSWithAReadToken(t *testing.T) {
	ps := paragraphs(t)
	a := newAccessFiles(t, true)
	_, base, c := startAccessServer(t, a)
	body, _ := json.Marshal(map[string]any{"schema": testSchema})
	if st, out := call(t, c, "PUT", base+"/v1/indexes/books", a.adminTok, string(body)); st != http.StatusCreated {
		t.Fatalf("create: %d %s", st, out)
	}
	if st, out := call(t, c, "POST", base+"/v1/indexes/books/documents", a.writeTok, string(NDJSON(makeDocs(ps, "t", 0, 40)))); st != http.StatusOK {
		t.Fatalf("ingest: %d %s", st, out)
	}
	if st, out := call(t, c, "POST", base+"/v1/indexes/books/commit", a.writeTok, ""); st != http.StatusOK {
		t.Fatalf("commit: %d %s", st, out)
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, a.ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	follower := startFollower(t, t.TempDir(), "https://127.0.0.1:"+portOf(base),
		"--follow-token-file", a.read, "--follow-ca-file", caFile, "--follow-server-name", "localhost")
	waitUntil(t, "the follower to copy the leader over TLS", convergeTimeout, func() bool {
		st, ok := replStatus(t, follower, "books")
		return ok && st.Documents == 40 && st.Replication != nil && st.Replication.State == "following"
	})
	other := newAccessFiles(t, true)
	otherCA := filepath.Join(t.TempDir(), "other-ca.crt")
	if err := os.WriteFile(otherCA, other.ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	// A new follower that cannot verify its leader has nothing to serve:
	// it runs, and is not ready.
	untrusting := spawn(t, t.TempDir(), "--follow", base, "--follow-token-file", a.read, "--follow-ca-file", otherCA)
	waitUntil(t, "the untrusting follower to listen", readyTimeout, func() bool {
		r, err := untrusting.Do(context.Background(), "GET", "/healthz", nil)
		return err == nil && r.Status == http.StatusOK
	})
	time.Sleep(time.Second)
	if r := untrusting.MustDo("GET", "/readyz", nil); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("a new follower that cannot verify its leader is ready with nothing to serve: %s", r)
	}
	if _, ok := replStatus(t, untrusting, "books"); ok {
		t.Fatal("a follower that cannot verify its leader copied its index")
	}
}

// portOf returns the port of a base URL.
func portOf(base string) string { return base[strings.LastIndex(base, ":")+1:] }
