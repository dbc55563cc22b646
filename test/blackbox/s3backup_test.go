package blackbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/summadev/summa/internal/testing/s3test"

	"github.com/summadev/summa/client"
)

// These tests run the real binary against a real S3 server (SeaweedFS,
// internal/testing/s3test): skipped when bin/s3/weed is absent (make s3), failed
// then with SUMMA_REQUIRE_S3=1.

// BackupStatus is the contract's backup object.
type BackupStatus struct {
	ID          string `json:"id"`
	Generation  uint64 `json:"generation"`
	State       string `json:"state"`
	Documents   uint64 `json:"documents"`
	Bytes       int64  `json:"bytes"`
	ReusedBytes int64  `json:"reusedBytes"`
	Error       string `json:"error"`
	Files       int    `json:"files"`
	FilesDone   int    `json:"filesDone"`
}

// RestoreReport is what `summa-server restore` prints.
type RestoreReport struct {
	Index      string `json:"index"`
	FromIndex  string `json:"fromIndex"`
	Backup     string `json:"backup"`
	Generation uint64 `json:"generation"`
	Documents  uint64 `json:"documents"`
	Files      int    `json:"files"`
	Bytes      int64  `json:"bytes"`
	Error      string `json:"error"`
}

// startBackup posts a backup and requires 202 with an ID.
func startBackup(t *testing.T, s *Server, index string) BackupStatus {
	t.Helper()
	var b BackupStatus
	s.Expect(202, "POST", "/v1/indexes/"+index+"/backups", nil, &b)
	if b.ID == "" {
		t.Fatalf("backup answer without an id: %+v", b)
	}
	return b
}

// waitBackup polls a backup until it is not running.
func waitBackup(t *testing.T, s *Server, index, id string, timeout time.Duration) BackupStatus {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var b BackupStatus
		s.Expect(200, "GET", "/v1/indexes/"+index+"/backups/"+id, nil, &b)
		if b.State != "running" {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("backup %s still running after %s: %+v", id, timeout, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// listBackups lists the completed backups.
func listBackups(t *testing.T, s *Server, index string) []BackupStatus {
	t.Helper()
	var out struct {
		Backups []BackupStatus `json:"backups"`
	}
	s.Expect(200, "GET", "/v1/indexes/"+index+"/backups", nil, &out)
	return out.Backups
}

// runRestore runs `summa-server restore` with the store's flags (and
// extra flags).
func runRestore(t *testing.T, st *s3test.Server, prefix, dataDir, index, id string, extra ...string) (rep RestoreReport, stderr string, code int) {
	t.Helper()
	needBinary(t)
	args := append([]string{"restore", "--data-dir", dataDir, "--index", index}, st.Flags(prefix)...)
	if id != "" {
		args = append(args, "--backup", id)
	}
	args = append(args, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = cleanEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("restore did not finish within 3 minutes\nstderr:\n%s", tail(errb.String(), 30))
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("run restore: %v", err)
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("restore stdout is not a JSON report: %v\nstdout:\n%s\nstderr:\n%s", err, out.Bytes(), errb.Bytes())
	}
	return rep, errb.String(), cmd.ProcessState.ExitCode()
}

// manifests returns the manifest keys of an index.
func manifests(t *testing.T, st *s3test.Server, prefix, index string) []s3test.Object {
	return st.Objects(t, prefix+"/"+index+"/backups/")
}

// fileObjects returns the file objects of an index.
func fileObjects(t *testing.T, st *s3test.Server, prefix, index string) []s3test.Object {
	return st.Objects(t, prefix+"/"+index+"/files/")
}

// fillIndex creates index with batches of committed documents (one or more
// segments per batch) and returns the committed primary keys.
func fillIndex(t *testing.T, s *Server, ps []string, index string, batches, per int) map[string]bool {
	t.Helper()
	s.CreateIndex(index, testSchema)
	want := map[string]bool{}
	for b := 0; b < batches; b++ {
		docs := makeDocs(ps, "d", b*per, (b+1)*per)
		s.Ingest(index, docs)
		s.Commit(index)
		for _, d := range docs {
			want[d.ID] = true
		}
	}
	return want
}

// checkRestored starts a server on dataDir and requires exactly the want
// documents, and the same answer as wantHits to query.
func checkRestored(t *testing.T, dataDir, index string, want map[string]bool, query string, wantHits int) {
	t.Helper()
	r := startServer(t, dataDir, "--optimizer-threads", "0")
	got := r.LiveDocs(index)
	if len(got) != len(want) {
		t.Fatalf("restored index has %d documents, the backup %d", len(got), len(want))
	}
	for id := range want {
		if _, ok := got[id]; !ok {
			t.Fatalf("restored index lacks document %s", id)
		}
	}
	if st := r.Status(index); st.Documents != uint64(len(want)) || len(st.Quarantined) != 0 {
		t.Fatalf("restored STATUS: %d documents, %d quarantined; want %d, 0", st.Documents, len(st.Quarantined), len(want))
	}
	if h := r.Search(index, query, 10).TotalHits; h != wantHits {
		t.Fatalf("restored index: %q has %d hits, the backed-up generation %d", query, h, wantHits)
	}
	r.Stop()
}

// TestS3BackupOnlineRestore backs up a live index while writes, commits and
// a forced merge go on (the upload is slowed so they overlap it), then
// restores the backup by ID with the real `summa-server restore` into a
// fresh directory: a server there serves exactly the documents of the
// backed-up generation, with the same search answer. The merge during the
// upload retired segments being uploaded; the tracker kept their files
// until the upload ended.
func TestS3BackupOnlineRestore(t *testing.T) {
	needBinary(t)
	st := s3test.Start(t)
	ps := paragraphs(t)
	const index, prefix = "live", "online"
	dir := t.TempDir()
	s := startServer(t, dir, append(st.Flags(prefix), "--optimizer-threads", "0",
		"--s3-upload-bytes-per-second", "256KiB")...)
	want := fillIndex(t, s, ps, index, 4, 300)
	const query = "light colours"
	wantHits := s.Search(index, query, 10).TotalHits
	before := s.Status(index)
	var size int64
	for _, seg := range before.Segments {
		size += seg.SizeBytes
	}
	t.Logf("index: %d segments, %d bytes, %d documents", len(before.Segments), size, before.Documents)
	files0 := segFiles(t, filepath.Join(dir, index))

	b := startBackup(t, s, index)
	if b.Generation != before.Generation || b.State != "running" {
		t.Fatalf("202 answer %+v, want generation %d running", b, before.Generation)
	}
	// Writes and commits go on during the upload.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var writes atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load() && i < 200; i++ {
			docs := makeDocs(ps, "w", i*20, (i+1)*20)
			resp := s.MustDo("POST", "/v1/indexes/"+index+"/documents", NDJSON(docs))
			if resp.Status != 200 {
				t.Errorf("ingest during backup: %s", resp)
				return
			}
			if resp := s.MustDo("POST", "/v1/indexes/"+index+"/commit", nil); resp.Status != 200 {
				t.Errorf("commit during backup: %s", resp)
				return
			}
			writes.Add(1)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	// A forced merge retires every segment of the backed-up generation
	// while they upload; their files must stay until the upload ends.
	time.Sleep(300 * time.Millisecond)
	s.Expect(200, "POST", "/v1/indexes/"+index+"/merge", map[string]any{"maxSegments": 1}, nil)
	if cur := waitBackupRunning(t, s, index, b.ID); cur {
		now := segFiles(t, filepath.Join(dir, index))
		for id, names := range files0 {
			if len(now[id]) != len(names) {
				t.Fatalf("segment %s of the backed-up generation lost files during the upload: had %v, now %v", id, names, now[id])
			}
		}
	} else {
		t.Logf("the upload ended before the merge published; the retention check did not run")
	}
	done := waitBackup(t, s, index, b.ID, 2*time.Minute)
	stop.Store(true)
	wg.Wait()
	if done.State != "completed" || done.Error != "" {
		t.Fatalf("backup: %+v", done)
	}
	if done.Documents != uint64(len(want)) || done.Generation != before.Generation || done.Bytes != size || done.ReusedBytes != 0 {
		t.Fatalf("backup %+v: want %d documents of generation %d, %d bytes uploaded, 0 reused", done, len(want), before.Generation, size)
	}
	if writes.Load() == 0 {
		t.Fatalf("no write committed during the backup")
	}
	// Once the upload released its references, the retired files go.
	deadline := time.Now().Add(10 * time.Second)
	for {
		now := segFiles(t, filepath.Join(dir, index))
		left := 0
		for id := range files0 {
			left += len(now[id])
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d files of merged-away segments still on disk 10s after the backup ended", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
	list := listBackups(t, s, index)
	if len(list) != 1 || list[0].ID != b.ID || list[0].State != "completed" {
		t.Fatalf("list: %+v", list)
	}

	restored := filepath.Join(t.TempDir(), "restored")
	rep, stderr, code := runRestore(t, st, prefix, restored, index, b.ID)
	if code != 0 || rep.Backup != b.ID || rep.Generation != before.Generation || rep.Documents != uint64(len(want)) {
		t.Fatalf("restore: exit %d, %+v\n%s", code, rep, stderr)
	}
	checkRestored(t, restored, index, want, query, wantHits)
	// A second restore into the same (now non-empty) directory is refused.
	if _, stderr, code := runRestore(t, st, prefix, restored, index, b.ID); code != 2 || !strings.Contains(stderr, "not empty") {
		t.Fatalf("restore into a non-empty directory: exit %d\n%s", code, stderr)
	}
}

// waitProgress waits until a running backup has done a file, and fails
// if it ended first.
func waitProgress(t *testing.T, s *Server, index, id string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var cur BackupStatus
		s.Expect(200, "GET", "/v1/indexes/"+index+"/backups/"+id, nil, &cur)
		if cur.State != "running" {
			t.Fatalf("backup ended too soon: %+v (slow it more)", cur)
		}
		if cur.FilesDone >= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("backup made no progress in a minute: %+v", cur)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitBackupRunning reports whether the backup still runs.
func waitBackupRunning(t *testing.T, s *Server, index, id string) bool {
	var b BackupStatus
	s.Expect(200, "GET", "/v1/indexes/"+index+"/backups/"+id, nil, &b)
	return b.State == "running"
}

// TestS3BackupIncremental: a second backup after a small change uploads
// only the new segment's files; the rest is reused (same name and
// checksum). Restore of the newest backup (no --backup) has every
// document.
func TestS3BackupIncremental(t *testing.T) {
	needBinary(t)
	st := s3test.Start(t)
	ps := paragraphs(t)
	const index, prefix = "incr", "incremental"
	s := startServer(t, t.TempDir(), append(st.Flags(prefix), "--optimizer-threads", "0")...)
	want := fillIndex(t, s, ps, index, 3, 300)
	first := waitBackup(t, s, index, startBackup(t, s, index).ID, time.Minute)
	if first.State != "completed" || first.ReusedBytes != 0 || first.Bytes == 0 {
		t.Fatalf("first backup: %+v", first)
	}
	objs1 := fileObjects(t, st, prefix, index)
	seen := map[string]bool{}
	for _, o := range objs1 {
		seen[o.Key] = true
	}
	// A 1% change: a few new documents, one commit.
	docs := makeDocs(ps, "n", 0, 9)
	s.Ingest(index, docs)
	s.Commit(index)
	for _, d := range docs {
		want[d.ID] = true
	}
	second := waitBackup(t, s, index, startBackup(t, s, index).ID, time.Minute)
	if second.State != "completed" {
		t.Fatalf("second backup: %+v", second)
	}
	objs2 := fileObjects(t, st, prefix, index)
	var newBytes int64
	var newObjs int
	for _, o := range objs2 {
		if !seen[o.Key] {
			newObjs++
			newBytes += o.Size
		}
	}
	if second.ReusedBytes != first.Bytes || second.Bytes != newBytes || newObjs == 0 {
		t.Fatalf("second backup uploaded %d bytes and reused %d; want the new objects' %d bytes (%d objects) and the first backup's %d",
			second.Bytes, second.ReusedBytes, newBytes, newObjs, first.Bytes)
	}
	if second.Bytes*10 > first.Bytes {
		t.Fatalf("second backup uploaded %d bytes, more than a tenth of the first's %d", second.Bytes, first.Bytes)
	}
	t.Logf("first backup %d bytes; after 9 new documents the second uploaded %d bytes in %d objects (%.1f%%), reused %d",
		first.Bytes, second.Bytes, newObjs, 100*float64(second.Bytes)/float64(first.Bytes), second.ReusedBytes)
	if ms := manifests(t, st, prefix, index); len(ms) != 2 {
		t.Fatalf("manifests: %+v", ms)
	}
	list := listBackups(t, s, index)
	if len(list) != 2 || list[0].ID != second.ID || list[1].ID != first.ID {
		t.Fatalf("list is not newest first: %+v", list)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	rep, stderr, code := runRestore(t, st, prefix, restored, index, "")
	if code != 0 || rep.Backup != second.ID {
		t.Fatalf("restore latest: exit %d, %+v\n%s", code, rep, stderr)
	}
	checkRestored(t, restored, index, want, "prism", s.Search(index, "prism", 10).TotalHits)
}

// TestS3RestoreRefusesDamage: a byte flipped in a stored segment object,
// or an object gone, makes restore exit non-zero with a clear message and
// leave no index: a server started on the directory has none.
func TestS3RestoreRefusesDamage(t *testing.T) {
	needBinary(t)
	st := s3test.Start(t)
	ps := paragraphs(t)
	const index, prefix = "damaged", "damage"
	s := startServer(t, t.TempDir(), append(st.Flags(prefix), "--optimizer-threads", "0")...)
	fillIndex(t, s, ps, index, 2, 200)
	b := waitBackup(t, s, index, startBackup(t, s, index).ID, time.Minute)
	if b.State != "completed" {
		t.Fatalf("backup: %+v", b)
	}
	objs := fileObjects(t, st, prefix, index)
	var victim s3test.Object
	for _, o := range objs {
		if o.Size > victim.Size {
			victim = o
		}
	}
	for _, damage := range []string{"flip", "remove"} {
		t.Run(damage, func(t *testing.T) {
			orig := st.Get(t, victim.Key)
			if damage == "flip" {
				st.FlipByte(t, victim.Key, victim.Size/2)
			} else {
				st.Remove(t, victim.Key)
			}
			defer func() {
				st.Put(t, victim.Key, orig)
			}()
			restored := filepath.Join(t.TempDir(), "restored")
			rep, stderr, code := runRestore(t, st, prefix, restored, index, b.ID)
			name := victim.Key[strings.LastIndex(victim.Key, "/")+1:]
			name = name[:strings.LastIndex(name, "-")]
			if code == 0 || rep.Error == "" || !strings.Contains(stderr, name) {
				t.Fatalf("restore of a damaged backup: exit %d, report %+v\nstderr:\n%s", code, rep, stderr)
			}
			if ents, err := os.ReadDir(restored); err == nil && len(ents) != 0 || err != nil && !os.IsNotExist(err) {
				t.Fatalf("a failed restore left %v in the data directory (%v)", dirNames(restored), err)
			}
			r := startServer(t, restored, "--optimizer-threads", "0")
			var list struct {
				Indexes []client.IndexStatus `json:"indexes"`
			}
			r.Expect(200, "GET", "/v1/indexes", nil, &list)
			if len(list.Indexes) != 0 {
				t.Fatalf("a server on the failed restore's directory serves %+v", list.Indexes)
			}
			r.Stop()
		})
	}
}

// TestS3BackupKilledLeavesNoManifest: kill -9 of the engine during an
// upload leaves no manifest; after a restart the listing is empty, the
// next backup completes (reusing what was uploaded) and restores. Then the
// object store is killed during an upload: the backup fails, no manifest;
// after the store restarts the next backup completes.
func TestS3BackupKilledLeavesNoManifest(t *testing.T) {
	needBinary(t)
	st := s3test.Start(t)
	ps := paragraphs(t)
	const index, prefix = "killed", "kill"
	dir := t.TempDir()
	flags := append(st.Flags(prefix), "--optimizer-threads", "0", "--s3-upload-bytes-per-second", "128KiB")
	s := startServer(t, dir, flags...)
	want := fillIndex(t, s, ps, index, 3, 300)
	b := startBackup(t, s, index)
	waitProgress(t, s, index, b.ID)
	s.Kill()
	if ms := manifests(t, st, prefix, index); len(ms) != 0 {
		t.Fatalf("a killed backup left manifests %+v", ms)
	}
	partial := fileObjects(t, st, prefix, index)
	if len(partial) == 0 {
		t.Fatalf("no object was uploaded before the kill")
	}
	s = startServer(t, dir, flags...)
	if list := listBackups(t, s, index); len(list) != 0 {
		t.Fatalf("after a killed backup the listing has %+v", list)
	}
	if resp := s.MustDo("GET", "/v1/indexes/"+index+"/backups/"+b.ID, nil); resp.Status != 404 || resp.ErrCode() != "BackupNotFound" {
		t.Fatalf("GET of the killed backup: %s", resp)
	}
	next := waitBackup(t, s, index, startBackup(t, s, index).ID, 2*time.Minute)
	if next.State != "completed" || next.ReusedBytes == 0 {
		t.Fatalf("backup after the kill: %+v (want completed, reusing the objects uploaded before the kill)", next)
	}

	// The object store goes away during an upload.
	docs := makeDocs(ps, "x", 0, 300)
	s.Ingest(index, docs)
	s.Commit(index)
	for _, d := range docs {
		want[d.ID] = true
	}
	s.Expect(200, "POST", "/v1/indexes/"+index+"/merge", map[string]any{"maxSegments": 1}, nil)
	b2 := startBackup(t, s, index)
	time.Sleep(500 * time.Millisecond)
	st.Kill()
	failed := waitBackup(t, s, index, b2.ID, 3*time.Minute)
	if failed.State != "failed" || failed.Error == "" {
		t.Fatalf("backup with the store gone: %+v", failed)
	}
	st.Restart(t)
	for _, m := range manifests(t, st, prefix, index) {
		if strings.Contains(m.Key, b2.ID) {
			t.Fatalf("the failed backup left its manifest %s", m.Key)
		}
	}
	last := waitBackup(t, s, index, startBackup(t, s, index).ID, 2*time.Minute)
	if last.State != "completed" {
		t.Fatalf("backup after the store came back: %+v", last)
	}
	if list := listBackups(t, s, index); len(list) != 2 || list[0].ID != last.ID || list[1].ID != next.ID {
		t.Fatalf("list: %+v", list)
	}
	checkBackupMetrics(t, s, index, backupCounts{started: 3, completed: 2, failed: 1,
		uploaded: next.Bytes + failed.Bytes + last.Bytes, reused: next.ReusedBytes + failed.ReusedBytes + last.ReusedBytes}, last)
	restored := filepath.Join(t.TempDir(), "restored")
	if rep, stderr, code := runRestore(t, st, prefix, restored, index, ""); code != 0 || rep.Backup != last.ID {
		t.Fatalf("restore: exit %d %+v\n%s", code, rep, stderr)
	}
	checkRestored(t, restored, index, want, "refraction", s.Search(index, "refraction", 10).TotalHits)
}

// backupCounts are the backup metrics a server should show for an index.
type backupCounts struct {
	started, completed, failed float64
	uploaded, reused           int64
}

// checkBackupMetrics requires the backup metrics of index on /metrics:
// the counts, the bytes uploaded and reused (those of the failed backup
// included, as far as it went), and the last success time, that of last.
func checkBackupMetrics(t *testing.T, s *Server, index string, want backupCounts, last BackupStatus) {
	t.Helper()
	l := `{index="` + index + `"}`
	got := backupCounts{started: metric(s, "summa_backups_started_total"+l), completed: metric(s, "summa_backups_completed_total"+l),
		failed: metric(s, "summa_backups_failed_total"+l), uploaded: int64(metric(s, "summa_backup_uploaded_bytes_total"+l)),
		reused: int64(metric(s, "summa_backup_reused_bytes_total"+l))}
	if got != want {
		t.Fatalf("backup metrics of %s: %+v, want %+v", index, got, want)
	}
	var b struct {
		CompletedAt time.Time `json:"completedAt"`
	}
	s.Expect(200, "GET", "/v1/indexes/"+index+"/backups/"+last.ID, nil, &b)
	ts := metric(s, "summa_backup_last_success_timestamp_seconds"+l)
	if d := ts - float64(b.CompletedAt.UnixNano())/1e9; b.CompletedAt.IsZero() || d < -1 || d > 1 {
		t.Fatalf("summa_backup_last_success_timestamp_seconds %v, the last backup completed at %v", ts, b.CompletedAt)
	}
}

// TestS3BackupNotConfigured: without --s3-* flags the routes answer 409
// BackupNotConfigured.
func TestS3BackupNotConfigured(t *testing.T) {
	needBinary(t)
	s := startServer(t, t.TempDir(), "--optimizer-threads", "0")
	s.CreateIndex("plain", testSchema)
	for _, r := range [][2]string{{"POST", "/v1/indexes/plain/backups"}, {"GET", "/v1/indexes/plain/backups"},
		{"GET", "/v1/indexes/plain/backups/20260101T000000.000Z-00000000"}} {
		if resp := s.MustDo(r[0], r[1], nil); resp.Status != 409 || resp.ErrCode() != "BackupNotConfigured" {
			t.Fatalf("%s %s: %s", r[0], r[1], resp)
		}
	}
}

// runPrune runs `summa-server backup prune` and returns its report.
func runPrune(t *testing.T, st *s3test.Server, prefix, index string, keep int) (rep map[string]any, stderr string, code int) {
	t.Helper()
	args := append([]string{"backup", "prune", "--index", index, "--keep", fmt.Sprint(keep)}, st.Flags(prefix)...)
	cmd := exec.Command(binPath, args...)
	cmd.Env = cleanEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("prune stdout is not JSON: %v\n%s\n%s", err, out.Bytes(), errb.Bytes())
	}
	return rep, errb.String(), cmd.ProcessState.ExitCode()
}

// TestS3BackupPrune: prune --keep 1 removes the older manifest, then the
// objects only it named; the kept backup still restores. A prune beside a
// running backup removes manifests only and leaves every object.
func TestS3BackupPrune(t *testing.T) {
	needBinary(t)
	st := s3test.Start(t)
	ps := paragraphs(t)
	const index, prefix = "pruned", "prune"
	s := startServer(t, t.TempDir(), append(st.Flags(prefix), "--optimizer-threads", "0", "--s3-upload-bytes-per-second", "64KiB")...)
	want := fillIndex(t, s, ps, index, 2, 200)
	first := waitBackup(t, s, index, startBackup(t, s, index).ID, time.Minute)
	// A merge replaces every segment: the second backup shares nothing.
	docs := makeDocs(ps, "p", 0, 50)
	s.Ingest(index, docs)
	s.Commit(index)
	for _, d := range docs {
		want[d.ID] = true
	}
	s.Expect(200, "POST", "/v1/indexes/"+index+"/merge", map[string]any{"maxSegments": 1}, nil)
	second := waitBackup(t, s, index, startBackup(t, s, index).ID, time.Minute)
	if first.State != "completed" || second.State != "completed" {
		t.Fatalf("backups: %+v %+v", first, second)
	}
	// A third backup, of a new merged segment, runs (slowly) while a
	// prune keeps one.
	docs = makeDocs(ps, "q", 0, 50)
	s.Ingest(index, docs)
	s.Commit(index)
	for _, d := range docs {
		want[d.ID] = true
	}
	s.Expect(200, "POST", "/v1/indexes/"+index+"/merge", map[string]any{"maxSegments": 1}, nil)
	third := startBackup(t, s, index)
	// Its lease is in the bucket before it decides what to reuse.
	for deadline := time.Now().Add(time.Minute); len(st.Objects(t, prefix+"/"+index+"/leases/backup-"+third.ID)) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no lease of the running backup %s in a minute", third.ID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := fileObjects(t, st, prefix, index)
	rep, stderr, code := runPrune(t, st, prefix, index, 1)
	if !waitBackupRunning(t, s, index, third.ID) {
		t.Fatalf("the third backup ended before the prune did; slow it more")
	}
	if code != 0 || rep["objectsKeptForRunningBackup"] != true {
		t.Fatalf("prune beside a running backup: exit %d %v\n%s", code, rep, stderr)
	}
	if after := fileObjects(t, st, prefix, index); len(after) < len(before) {
		t.Fatalf("prune beside a running backup removed objects: %d -> %d", len(before), len(after))
	}
	if done := waitBackup(t, s, index, third.ID, 2*time.Minute); done.State != "completed" {
		t.Fatalf("backup beside a prune: %+v", done)
	}
	rep, stderr, code = runPrune(t, st, prefix, index, 1)
	if code != 0 || rep["removedObjects"].(float64) == 0 {
		t.Fatalf("prune: exit %d %v\n%s", code, rep, stderr)
	}
	list := listBackups(t, s, index)
	if len(list) != 1 || list[0].ID != third.ID {
		t.Fatalf("after prune --keep 1: %+v", list)
	}
	var kept int64
	for _, o := range fileObjects(t, st, prefix, index) {
		kept += o.Size
	}
	if kept != list[0].Bytes+list[0].ReusedBytes {
		t.Fatalf("after prune the bucket holds %d bytes of files, the kept backup %d", kept, list[0].Bytes+list[0].ReusedBytes)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if rep, stderr, code := runRestore(t, st, prefix, restored, index, ""); code != 0 || rep.Backup != third.ID {
		t.Fatalf("restore after prune: exit %d %+v\n%s", code, rep, stderr)
	}
	checkRestored(t, restored, index, want, "light", s.Search(index, "light", 10).TotalHits)
}
