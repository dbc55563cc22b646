package blackbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// runDoctor runs summa-server --doctor on dir and returns its stdout, its
// stderr and its exit code.
func runDoctor(t *testing.T, dir string, extra ...string) (stdout, stderr []byte, code int) {
	t.Helper()
	needBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, append([]string{"--data-dir", dir, "--doctor"}, extra...)...)
	cmd.Env = cleanEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("--doctor did not finish within 2 minutes\nstderr:\n%s", tail(errb.String(), 30))
	}
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("run --doctor: %v", err)
		}
	}
	return out.Bytes(), errb.Bytes(), cmd.ProcessState.ExitCode()
}

// parseDoctorReport requires stdout to be exactly one JSON report.
func parseDoctorReport(t *testing.T, stdout []byte) DoctorReport {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(stdout))
	var rep DoctorReport
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("--doctor stdout is not a JSON report: %v\nstdout:\n%s", err, stdout)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		t.Fatalf("--doctor stdout holds more than one JSON report:\n%s", stdout)
	}
	return rep
}

// corruptTruncate cuts a file to half its size.
func corruptTruncate(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()/2); err != nil {
		t.Fatal(err)
	}
}

// corruptFlip flips one bit of the byte at off (negative: from the end).
func corruptFlip(t *testing.T, path string, off int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(data))
	}
	data[off] ^= 0x10
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// largestFile returns the largest seg_<id>.* file of a segment.
func largestFile(t *testing.T, idxDir string, id SegID) string {
	t.Helper()
	var best string
	var bestSize int64 = -1
	for _, name := range segFiles(t, idxDir)[normID(id)] {
		st, err := os.Stat(filepath.Join(idxDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, suffix, _ := parseSegFile(name); suffix != "del" && st.Size() > bestSize {
			best, bestSize = name, st.Size()
		}
	}
	if best == "" {
		t.Fatalf("segment %s has no files in %s", id, idxDir)
	}
	return filepath.Join(idxDir, best)
}

// TestCorruptionQuarantineAndDoctor damages three segments while the
// server is stopped: one truncated file, one bit flipped in a file header
// (both visible to the cheap open check) and one bit flipped in the middle
// of a payload (visible to full validation only). The restarted server
// quarantines the first two at least and serves the rest; --doctor removes
// all three; the next start has no quarantine and the surviving documents.
func TestCorruptionQuarantineAndDoctor(t *testing.T) {
	needBinary(t)
	ps := paragraphs(t)
	dir := t.TempDir()
	const index = "damaged"
	const batches, perBatch = 6, 120
	noMaint := []string{"--optimizer-threads", "0"}

	s := startServer(t, dir, noMaint...)
	s.CreateIndex(index, testSchema)
	batchOf := map[SegID]int{}   // segment -> batch
	segDocs := map[SegID]int64{} // segment -> documents
	for b := 0; b < batches; b++ {
		s.Ingest(index, makeDocs(ps, fmt.Sprintf("b%d", b), 0, perBatch))
		s.Commit(index)
		var sum int64
		for _, seg := range s.Status(index).Segments {
			id := normID(SegID(seg.ID))
			if _, old := batchOf[id]; !old {
				batchOf[id] = b
				segDocs[id] = int64(seg.Documents)
			}
			if batchOf[id] == b {
				sum += int64(seg.Documents)
			}
		}
		if sum != perBatch {
			t.Fatalf("batch %d: its new segments hold %d documents, want %d (STATUS segments %+v)", b, sum, perBatch, s.Status(index).Segments)
		}
	}
	total := int64(batches * perBatch)
	if st := s.Status(index); int64(st.Documents) != total {
		t.Fatalf("documents %d, want %d", st.Documents, total)
	}
	s.Stop()

	idxDir := filepath.Join(dir, index)
	md := readMetadata(t, idxDir)
	if len(md.Segments) != len(batchOf) {
		t.Fatalf("metadata.json lists %d segments, STATUS listed %d", len(md.Segments), len(batchOf))
	}
	firstOf := func(b int) SegID {
		var ids []SegID
		for id, bb := range batchOf {
			if bb == b {
				ids = append(ids, id)
			}
		}
		sort.Slice(ids, func(i, j int) bool { return hexLess(ids[i], ids[j]) })
		return ids[0]
	}
	truncated, headerFlip, payloadFlip := firstOf(0), firstOf(1), firstOf(2)

	corruptTruncate(t, largestFile(t, idxDir, truncated))
	corruptFlip(t, largestFile(t, idxDir, headerFlip), 0)
	// A flip in the middle of the forward file (read by BP only, which is
	// off) is invisible to a cheap check and to searches; full validation
	// must find it. Without a forward file, any payload file will do.
	payloadFile := ""
	for _, name := range segFiles(t, idxDir)[payloadFlip] {
		if strings.HasSuffix(name, ".fwd") {
			payloadFile = filepath.Join(idxDir, name)
		}
	}
	if payloadFile == "" {
		payloadFile = largestFile(t, idxDir, payloadFlip)
	}
	if st, _ := os.Stat(payloadFile); st.Size() < 200 {
		t.Fatalf("%s too small (%d bytes) for a payload flip", payloadFile, st.Size())
	}
	{
		st, _ := os.Stat(payloadFile)
		corruptFlip(t, payloadFile, st.Size()/2)
	}
	t.Logf("truncated segment %s, header flip in %s, payload flip in %s (%s)", truncated, headerFlip, payloadFlip, filepath.Base(payloadFile))

	// Restart: the damage is visible as soon as the server is ready.
	s = startServer(t, dir, noMaint...)
	st := s.Status(index)
	quarantined := map[SegID]string{}
	for _, q := range st.Quarantined {
		quarantined[normID(SegID(q.Segment))] = q.Reason
		if strings.TrimSpace(q.Reason) == "" {
			t.Errorf("quarantined segment %s has no reason", q.Segment)
		}
	}
	for _, id := range []SegID{truncated, headerFlip} {
		if _, ok := quarantined[id]; !ok {
			t.Errorf("segment %s was damaged but STATUS does not list it under quarantined (quarantined: %+v)", id, st.Quarantined)
		}
	}
	for id := range quarantined {
		if id != truncated && id != headerFlip && id != payloadFlip {
			t.Errorf("undamaged segment %s is quarantined: %s", id, quarantined[id])
		}
	}
	t.Logf("quarantined at startup: %v (payload flip detected by the cheap check: %v)", st.Quarantined, quarantined[payloadFlip] != "")
	var lost int64
	lostOfBatch := map[int]int64{}
	for id := range quarantined {
		lost += segDocs[id]
		lostOfBatch[batchOf[id]] += segDocs[id]
	}
	if int64(st.Documents) != total-lost {
		t.Errorf("with %d segments quarantined: documents %d, want %d (the other segments' documents)", len(quarantined), st.Documents, total-lost)
	}
	var lc struct {
		QuarantinedSegments int `json:"quarantinedSegments"`
	}
	s.Expect(200, "GET", "/v1/admin/lifecycle", nil, &lc)
	if lc.QuarantinedSegments != len(st.Quarantined) {
		t.Errorf("/v1/admin/lifecycle quarantinedSegments %d, STATUS lists %d", lc.QuarantinedSegments, len(st.Quarantined))
	}
	checkBatches := func(when string, lostOfBatch map[int]int64, extra int) {
		t.Helper()
		live := s.LiveDocs(index)
		count := map[int]int64{}
		for k := range live {
			if len(k) == 8 && k[0] == 'b' && '0' <= k[1] && k[1] <= '9' {
				count[int(k[1]-'0')]++
			} else if !strings.HasPrefix(k, "x") {
				t.Errorf("%s: unexpected document %q", when, k)
			}
		}
		for b := 0; b < batches; b++ {
			if want := perBatch - lostOfBatch[b]; count[b] != want {
				t.Errorf("%s: batch %d has %d searchable documents, want %d", when, b, count[b], want)
			}
		}
		var sum int64
		for _, c := range count {
			sum += c
		}
		if int64(len(live)) != sum+int64(extra) {
			t.Errorf("%s: %d searchable documents, want %d", when, len(live), sum+int64(extra))
		}
	}
	checkBatches("with quarantine", lostOfBatch, 0)
	if res := s.Search(index, "light", 10); res.TotalHits == 0 {
		t.Errorf("search for \"light\" finds nothing while segments are quarantined")
	}
	// Writes keep working; quarantined segments stay in metadata.json.
	s.Ingest(index, makeDocs(ps, "x", 0, 50))
	s.Commit(index)
	checkBatches("after a commit with quarantine", lostOfBatch, 50)
	st = s.Status(index)
	if len(st.Quarantined) != len(quarantined) {
		t.Errorf("after a commit: quarantined %+v, before %v", st.Quarantined, quarantined)
	}
	s.Stop()
	mdq := readMetadata(t, idxDir)
	for _, id := range []SegID{truncated, headerFlip, payloadFlip} {
		if _, ok := mdq.Segments[id]; !ok {
			t.Errorf("damaged segment %s was dropped from metadata.json without --doctor", id)
		}
		if len(segFiles(t, idxDir)[id]) == 0 {
			t.Errorf("files of damaged segment %s were deleted without --doctor", id)
		}
	}
	checked := len(mdq.Segments)

	// Doctor: removes every segment that fails full validation.
	reportFile := filepath.Join(t.TempDir(), "termination-log")
	stdout, stderr, code := runDoctor(t, dir, "--report-file", reportFile)
	if code != 0 {
		t.Fatalf("--doctor exited %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, tail(string(stderr), 30))
	}
	rep := parseDoctorReport(t, stdout)
	if data, err := os.ReadFile(reportFile); err != nil {
		t.Errorf("--report-file %s: %v", reportFile, err)
	} else if fileRep := parseDoctorReport(t, data); fmt.Sprint(fileRep) != fmt.Sprint(rep) {
		t.Errorf("--report-file holds another report:\n%s\nstdout:\n%s", data, stdout)
	}
	var found bool
	wantRemoved := []SegID{truncated, headerFlip, payloadFlip}
	wantDocs := segDocs[truncated] + segDocs[headerFlip] + segDocs[payloadFlip]
	for _, ir := range rep.Indexes {
		if ir.Name != index {
			continue
		}
		found = true
		var got []SegID
		for _, id := range ir.RemovedSegments {
			got = append(got, normID(id))
		}
		if idsString(got) != idsString(wantRemoved) {
			t.Errorf("doctor removedSegments %s, want %s", idsString(got), idsString(wantRemoved))
		}
		if ir.RemovedDocuments != wantDocs {
			t.Errorf("doctor removedDocuments %d, want %d", ir.RemovedDocuments, wantDocs)
		}
		if ir.CheckedSegments != checked {
			t.Errorf("doctor checkedSegments %d, want %d (segments in metadata.json)", ir.CheckedSegments, checked)
		}
	}
	if !found {
		t.Fatalf("doctor report has no entry for %s:\n%s", index, stdout)
	}
	mdd := readMetadata(t, idxDir)
	for _, id := range wantRemoved {
		if _, ok := mdd.Segments[id]; ok {
			t.Errorf("after --doctor metadata.json still lists segment %s", id)
		}
		if files := segFiles(t, idxDir)[id]; len(files) > 0 {
			t.Errorf("after --doctor files of removed segment %s remain: %v", id, files)
		}
	}
	if unowned, _ := unownedSegFiles(t, idxDir); len(unowned) > 0 {
		t.Errorf("after --doctor unowned seg_ files remain: %v", unowned)
	}

	// A second doctor run finds nothing to do.
	stdout, stderr, code = runDoctor(t, dir)
	if code != 0 {
		t.Fatalf("second --doctor exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, tail(string(stderr), 30))
	}
	for _, ir := range parseDoctorReport(t, stdout).Indexes {
		if len(ir.RemovedSegments) != 0 || ir.RemovedDocuments != 0 {
			t.Errorf("second --doctor removed more: %+v", ir)
		}
	}

	// Restart: no quarantine, the surviving documents.
	s = startServer(t, dir, noMaint...)
	st = s.Status(index)
	if len(st.Quarantined) != 0 {
		t.Errorf("after --doctor: still quarantined %+v", st.Quarantined)
	}
	if want := total + 50 - wantDocs; int64(st.Documents) != want {
		t.Errorf("after --doctor: documents %d, want %d", st.Documents, want)
	}
	removedOfBatch := map[int]int64{}
	for _, id := range wantRemoved {
		removedOfBatch[batchOf[id]] += segDocs[id]
	}
	checkBatches("after --doctor", removedOfBatch, 50)
	s.Stop()
}
