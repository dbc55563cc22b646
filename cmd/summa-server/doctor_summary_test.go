package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/segid"
)

// bigDoctorOutput is a report of n removed segments in index "big" (with a
// reason each) and one clean index.
func bigDoctorOutput(n int) client.DoctorReport {
	ir := client.DoctorIndexReport{Name: "big", CheckedSegments: int64(n + 3), RemovedDocuments: int64(n * 7),
		Reasons: map[string]string{}}
	for i := 0; i < n; i++ {
		id := segid.ID(0x1000 + i).String()
		ir.RemovedSegments = append(ir.RemovedSegments, id)
		ir.Reasons[id] = "segment: checksum mismatch in seg_" + id + ".postings at offset 4096"
	}
	clean := client.DoctorIndexReport{Name: "clean", CheckedSegments: 2, RemovedSegments: []string{}}
	return client.DoctorReport{Indexes: []client.DoctorIndexReport{ir, clean}}
}

// TestDoctorSummaryFitsATerminationMessage: however many segments a run
// removes, the summary fits in 4000 bytes, with exact counts and the
// first removed segments in order.
func TestDoctorSummaryFitsATerminationMessage(t *testing.T) {
	for _, n := range []int{0, 3, 100, 150, 5000} {
		out := bigDoctorOutput(n)
		full, _ := json.Marshal(out)
		data := summarize(out, "r1", true)
		if len(data) > maxSummaryBytes {
			t.Fatalf("n=%d: summary of %d bytes", n, len(data))
		}
		var s client.DoctorSummary
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("n=%d: %v: %s", n, err, data)
		}
		if !s.Summary || s.ReportID != "r1" || len(s.Indexes) != 2 {
			t.Fatalf("n=%d: %s", n, data)
		}
		big := s.Indexes[0]
		if big.RemovedSegmentCount != n || big.RemovedDocuments != int64(n*7) || big.CheckedSegments != int64(n+3) {
			t.Errorf("n=%d: counts %+v", n, big)
		}
		if want := min(n, summaryMaxSegments); len(big.RemovedSegments) != want {
			t.Errorf("n=%d: %d segments listed, want %d", n, len(big.RemovedSegments), want)
		}
		for i, id := range big.RemovedSegments {
			if id != segid.ID(0x1000+i).String() {
				t.Fatalf("n=%d: segment %d is %s", n, i, id)
			}
		}
		t.Logf("n=%d: report %d bytes, summary %d bytes", n, len(full), len(data))
	}
	// Many indexes with long errors still fit, some of them counted only.
	var out client.DoctorReport
	for i := 0; i < 100; i++ {
		out.Indexes = append(out.Indexes, client.DoctorIndexReport{Name: fmt.Sprintf("index-%03d-%s", i, strings.Repeat("x", 200)),
			Error: strings.Repeat("e", 5000)})
	}
	data := summarize(out, "r1", false)
	var s client.DoctorSummary
	if err := json.Unmarshal(data, &s); err != nil || len(data) > maxSummaryBytes || s.IndexesOmitted == 0 ||
		len(s.Indexes)+s.IndexesOmitted != 100 || s.ReportID != "" {
		t.Fatalf("many indexes: %d bytes, %v, %d listed, %d omitted", len(data), err, len(s.Indexes), s.IndexesOmitted)
	}
}

// TestDoctorKeepsItsReportForTheServer runs the doctor with --report-id
// and --summary-file: the summary is written, the whole report is kept in
// the data directory, survives a server's start and is served by
// GET /v1/admin/doctor-reports/{id}; an unknown ID is 404, an invalid one
// is refused by the command line.
func TestDoctorKeepsItsReportForTheServer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	p := start(t, dir)
	if _, err := p.c.CreateIndex(ctx, "opticks", json.RawMessage(testSchema)); err != nil {
		t.Fatal(err)
	}
	if n, err := p.c.AddDocuments(ctx, "opticks", opticks(t, 50)...); err != nil || n != 50 {
		t.Fatalf("add: %d %v", n, err)
	}
	if _, err := p.c.Commit(ctx, "opticks"); err != nil {
		t.Fatal(err)
	}
	if code := p.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	if _, stderr, code := runCmd(t, "--data-dir", dir, "--doctor", "--report-id", "../x"); code != exitUsage {
		t.Fatalf("invalid report id: exit %d, %s", code, stderr)
	}
	summary := filepath.Join(t.TempDir(), "termination-log")
	stdout, stderr, code := runCmd(t, "--data-dir", dir, "--doctor", "--report-id", "r1", "--summary-file", summary)
	if code != 0 {
		t.Fatalf("doctor: exit %d\n%s\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	var s client.DoctorSummary
	if err := json.Unmarshal(data, &s); err != nil || !s.Summary || s.ReportID != "r1" || len(s.Indexes) != 1 ||
		s.Indexes[0].Name != "opticks" || s.Indexes[0].RemovedSegmentCount != 0 {
		t.Fatalf("summary %s: %v", data, err)
	}

	p = start(t, dir)
	rep, err := p.c.DoctorReport(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Indexes) != 1 || rep.Indexes[0].Name != "opticks" || rep.Indexes[0].CheckedSegments < 1 {
		t.Fatalf("served report %+v", rep)
	}
	var want client.DoctorReport
	if err := json.Unmarshal([]byte(stdout), &want); err != nil || want.Indexes[0].CheckedSegments != rep.Indexes[0].CheckedSegments {
		t.Fatalf("served report %+v differs from the printed one %s", rep, stdout)
	}
	if _, err := p.c.DoctorReport(ctx, "r2"); !client.IsCode(err, client.CodeNotFound) {
		t.Fatalf("unknown report: %v", err)
	}
	if st, err := p.c.GetIndex(ctx, "opticks"); err != nil || st.Documents != 50 {
		t.Fatalf("index after the doctor: %+v %v", st, err)
	}
	if code := p.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}
