package blackbox

// A full disk, on a real ext4 volume that fills up (loop-mounted, root
// only): ingestion, commits and maintenance answer 507 StorageFull and
// change nothing acknowledged; background maintenance pauses instead of
// retrying; search and drain keep working; once a filler file is deleted,
// writes succeed again without a restart; a server killed with -9 while
// the volume is full loses nothing acknowledged.

import (
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fullDiskVolume is the size of each test's volume.
const fullDiskVolume = 96 << 20

// fullDiskClient ingests numbered documents and records what the server
// acknowledged: accepted by ingestion (200) and durable by a commit (200).
type fullDiskClient struct {
	t    *testing.T
	s    *Server
	name string
	ps   []string
	// next is the number of the next document.
	next int
	// accepted are the documents ingestion ever answered 200 for.
	accepted map[string]bool
	// pending are those accepted since the last commit answered 200 (a
	// failed commit keeps them for the next; a kill loses them).
	pending map[string]bool
	// acked are the accepted documents a later commit answered 200 for.
	acked map[string]bool
}

func newFullDiskClient(t *testing.T, s *Server, name string) *fullDiskClient {
	return &fullDiskClient{t: t, s: s, name: name, ps: paragraphs(t), accepted: map[string]bool{}, pending: map[string]bool{}, acked: map[string]bool{}}
}

// ingest sends n new documents; it returns the answer, which must be 200
// or 507 StorageFull.
func (c *fullDiskClient) ingest(n int) *Response {
	c.t.Helper()
	docs := makeDocs(c.ps, "d", c.next, c.next+n)
	c.next += n
	r := c.s.MustDo("POST", "/v1/indexes/"+c.name+"/documents", NDJSON(docs))
	switch r.Status {
	case http.StatusOK:
		for _, d := range docs {
			c.accepted[d.ID], c.pending[d.ID] = true, true
		}
	case http.StatusInsufficientStorage:
		requireStorageFull(c.t, "ingest", r)
	default:
		c.t.Fatalf("ingest: want 200 or 507 StorageFull, got %s", r)
	}
	return r
}

// commit commits; it returns the answer, which must be 200 or 507.
func (c *fullDiskClient) commit() *Response {
	c.t.Helper()
	r := c.s.MustDo("POST", "/v1/indexes/"+c.name+"/commit", nil)
	switch r.Status {
	case http.StatusOK:
		for id := range c.pending {
			c.acked[id] = true
		}
		clear(c.pending)
	case http.StatusInsufficientStorage:
		requireStorageFull(c.t, "commit", r)
	default:
		c.t.Fatalf("commit: want 200 or 507 StorageFull, got %s", r)
	}
	return r
}

// untilFull ingests and commits batches until an answer is 507, which
// must come from a real ENOSPC (there is no reserve).
func (c *fullDiskClient) untilFull(batch int) {
	c.t.Helper()
	for i := 0; i < 2000; i++ {
		r := c.ingest(batch)
		if r.Status == http.StatusOK {
			r = c.commit()
		}
		if r.Status == http.StatusOK {
			continue
		}
		if !strings.Contains(string(r.Body), "no space left on device") {
			c.t.Fatalf("the first 507 does not come from ENOSPC: %s", r)
		}
		return
	}
	c.t.Fatalf("the volume never filled up")
}

// check requires every acknowledged document to be searchable, and
// nothing that ingestion refused.
func (c *fullDiskClient) check(s *Server) {
	c.t.Helper()
	live := s.LiveDocs(c.name)
	for id := range c.acked {
		if _, ok := live[id]; !ok {
			c.t.Fatalf("acknowledged document %s is missing (%d live, %d acknowledged)", id, len(live), len(c.acked))
		}
	}
	for id := range live {
		if !c.accepted[id] {
			c.t.Fatalf("document %s is live but ingestion never accepted it", id)
		}
	}
}

// resume requires that writes succeed again, without a restart: the
// first attempts may still meet the full state.
func (c *fullDiskClient) resume() {
	c.t.Helper()
	eventually(c.t, "ingestion and commit succeed once space returned", 30*time.Second, func() bool {
		return c.ingest(20).Status == http.StatusOK && c.commit().Status == http.StatusOK
	})
}

// TestStorageFull_Reserve: below --min-free-bytes, ingestion and commits
// answer 507 StorageFull before the disk is truly full; STATUS and
// /metrics show it; search and the drain (which may use the reserve) keep
// working; deleting the filler lets writes through without a restart.
func TestStorageFull_Reserve(t *testing.T) {
	v := mountLoopVolume(t, fullDiskVolume)
	s := startServer(t, filepath.Join(v.dir, "data"), "--min-free-bytes", "16MiB", "--optimizer-threads", "0")
	s.CreateIndex("full", testSchema)
	c := newFullDiskClient(t, s, "full")
	c.ingest(200)
	c.commit()
	if st := storage(s, "full"); st.Full || st.FreeBytes < 16<<20 || st.UsedBytes <= 0 {
		t.Fatalf("storage before the fill: %+v", st)
	}
	if got := metric(s, "summa_storage_full"); got != 0 {
		t.Fatalf("summa_storage_full before the fill: %v", got)
	}
	c.ingest(100) // accepted, to be committed by the drain
	filler := v.fill(t, "filler", 8<<20)

	requireStorageFull(t, "ingest below the reserve", c.ingest(10))
	requireStorageFull(t, "commit below the reserve", c.commit())
	st := storage(s, "full")
	if !st.Full || st.FreeBytes >= 16<<20 {
		t.Fatalf("storage below the reserve: %+v", st)
	}
	if got := metric(s, "summa_storage_full"); got != 1 {
		t.Fatalf("summa_storage_full below the reserve: %v", got)
	}
	if free := metric(s, "summa_storage_free_bytes"); free <= 0 || free >= 16<<20 {
		t.Fatalf("summa_storage_free_bytes below the reserve: %v", free)
	}
	if got := s.Search("full", allQuery, 1).TotalHits; got != 200 {
		t.Fatalf("search while full: %d hits, want the 200 committed", got)
	}
	// The drain commits what was accepted: it may use the reserve.
	s.Expect(http.StatusAccepted, "POST", "/v1/admin/drain", nil, nil)
	eventually(t, "drained while below the reserve", 30*time.Second, func() bool {
		var ds DrainStatus
		s.Expect(http.StatusOK, "GET", "/v1/admin/drain", nil, &ds)
		return ds.Drained
	})
	for id := range c.pending {
		c.acked[id] = true
	}
	clear(c.pending)
	c.check(s)
	s.Expect(http.StatusOK, "POST", "/v1/admin/resume", nil, nil)
	requireStorageFull(t, "ingest after the drain, still below the reserve", c.ingest(10))

	unfill(t, filler)
	c.resume()
	if st := storage(s, "full"); st.Full {
		t.Fatalf("storage after the filler was deleted: %+v", st)
	}
	c.check(s)
}

// TestStorageFull_IngestionKill9: with no reserve, ingestion fills the
// volume until a buffer flush or a commit meets ENOSPC: 507 StorageFull,
// never a 500. Space returns and writes resume without a restart; the
// volume fills again and the server is killed with -9 while full; after
// space returns and a restart, every acknowledged document is there.
func TestStorageFull_IngestionKill9(t *testing.T) {
	v := mountLoopVolume(t, fullDiskVolume)
	dir := filepath.Join(v.dir, "data")
	flags := []string{"--min-free-bytes", "0", "--optimizer-threads", "0",
		"--indexing-workers", "1", "--indexing-buffer-bytes", "256KiB"}
	s := startServer(t, dir, flags...)
	s.CreateIndex("full", testSchema)
	c := newFullDiskClient(t, s, "full")
	c.ingest(100)
	c.commit()

	filler := v.fill(t, "filler", 2<<20)
	c.untilFull(100)
	if got := s.Search("full", allQuery, 1).TotalHits; got != len(c.acked) {
		t.Fatalf("search while full: %d hits, %d acknowledged", got, len(c.acked))
	}
	unfill(t, filler)
	c.resume()
	c.check(s)

	v.fill(t, "filler", 2<<20)
	c.untilFull(100)
	s.Kill()
	clear(c.pending)
	unfill(t, filepath.Join(v.dir, "filler"))
	s2 := startServer(t, dir, flags...)
	c.s = s2
	c.check(s2)
	c.resume()
	c.check(s2)
	t.Logf("acknowledged %d documents, ingestion accepted %d", len(c.acked), len(c.accepted))
}

// TestStorageFull_Maintenance: an explicit merge and a BP pass that run
// out of space answer 507 StorageFull and publish nothing; background
// maintenance on the full volume pauses (a few stopped tasks at most, no
// backed-off failures) instead of retrying in a loop; a kill -9 while full
// loses nothing acknowledged, and once space returns maintenance resumes.
func TestStorageFull_Maintenance(t *testing.T) {
	v := mountLoopVolume(t, fullDiskVolume)
	dir := filepath.Join(v.dir, "data")
	s := startServer(t, dir, "--min-free-bytes", "0", "--optimizer-threads", "0", "--indexing-workers", "1")
	s.CreateIndex("full", testSchema)
	c := newFullDiskClient(t, s, "full")
	for i := 0; i < 12; i++ {
		c.ingest(150)
		c.commit()
	}
	before := s.Status("full")
	filler := v.fill(t, "filler", 64<<10)
	unchanged := func(what string) {
		t.Helper()
		after := s.Status("full")
		if after.Generation != before.Generation || len(after.Segments) != len(before.Segments) {
			t.Fatalf("%s changed the index: generation %d -> %d, %d -> %d segments", what,
				before.Generation, after.Generation, len(before.Segments), len(after.Segments))
		}
		c.check(s)
	}
	requireStorageFull(t, "BP pass on a full volume", s.MustDo("POST", "/v1/indexes/full/reorder", map[string]any{}))
	unchanged("the failed BP pass")
	s.Kill()
	// A fresh process, which has not met ENOSPC yet, runs into it in a merge.
	s = startServer(t, dir, "--min-free-bytes", "0", "--optimizer-threads", "0", "--indexing-workers", "1")
	c.s = s
	unchanged("the restart")
	requireStorageFull(t, "merge on a full volume", s.MustDo("POST", "/v1/indexes/full/merge", map[string]any{"maxSegments": 1}))
	unchanged("the failed merge")
	s.Kill()

	// Background maintenance on the full volume: merges and BP are due.
	flags := []string{"--min-free-bytes", "0", "--optimizer-threads", "1", "--optimizer-scan-interval", "100ms",
		"--optimizer-backoff-min", "100ms", "--optimizer-backoff-max", "200ms"}
	s = startServer(t, dir, flags...)
	c.s = s
	stopped := func() float64 {
		n := 0.0
		for _, kind := range []string{"merge", "reorder", "compact"} {
			n += max(0, metric(s, `summa_maintenance_operations_total{index="",kind="`+kind+`",outcome="storage_full"}`))
		}
		return n
	}
	failures := func() float64 {
		n := 0.0
		for _, kind := range []string{"merge", "reorder", "compact"} {
			n += max(0, metric(s, `summa_maintenance_operations_total{index="",kind="`+kind+`",outcome="failure"}`))
		}
		return n
	}
	eventually(t, "background maintenance stops on the full volume", 30*time.Second, func() bool { return stopped() > 0 })
	// Scans run every 100 ms: a retry loop would stop dozens of tasks in
	// two seconds; a paused optimizer starts none while the volume is full.
	first := stopped()
	time.Sleep(2 * time.Second)
	if n := stopped(); n > first+2 || failures() > 0 {
		t.Fatalf("maintenance kept retrying on the full volume: %v stopped tasks (then %v), %v failures", first, n, failures())
	}
	c.check(s)
	s.Kill()

	unfill(t, filler)
	s = startServer(t, dir, flags...)
	c.s = s
	c.check(s)
	eventually(t, "background merges resume once space returned", 60*time.Second, func() bool {
		return len(s.Status("full").Segments) < len(before.Segments)
	})
	c.resume()
	c.check(s)
	t.Logf("segments %d -> %d; tasks stopped for space: %s", len(before.Segments), len(s.Status("full").Segments),
		strconv.FormatFloat(first, 'f', 0, 64))
}
