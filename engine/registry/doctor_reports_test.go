package registry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestDoctorReportsAreKeptAtomicallyAndBounded saves reports, reads them
// back, refuses IDs that are not DNS labels, removes a crash's temporary
// file and keeps at most MaxDoctorReports (never the one just saved).
func TestDoctorReportsAreKeptAtomicallyAndBounded(t *testing.T) {
	fs, dir := vfs.Default, t.TempDir()
	if _, err := LoadDoctorReport(fs, dir, "r1"); !errors.Is(err, ErrDoctorReportNotFound) {
		t.Fatalf("load before save: %v", err)
	}
	for _, bad := range []string{"", "../x", "A", strings.Repeat("a", 64), "a/b", "-a"} {
		if err := SaveDoctorReport(fs, dir, bad, []byte("{}")); !errors.Is(err, ErrInvalidReportID) {
			t.Errorf("save %q: %v", bad, err)
		}
		if _, err := LoadDoctorReport(fs, dir, bad); !errors.Is(err, ErrInvalidReportID) {
			t.Errorf("load %q: %v", bad, err)
		}
	}
	big := []byte(`{"indexes":[` + strings.Repeat(`{"name":"x"},`, 1000) + `{"name":"y"}]}`)
	if err := SaveDoctorReport(fs, dir, "r1", big); err != nil {
		t.Fatal(err)
	}
	got, err := LoadDoctorReport(fs, dir, "r1")
	if err != nil || string(got) != string(big) {
		t.Fatalf("load: %d bytes, %v", len(got), err)
	}
	leftover := filepath.Join(dir, DoctorReportsDir, "r0.json.tmp")
	if err := os.WriteFile(leftover, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, DoctorReportsDir, "r1.json"), old.Add(-time.Hour), old.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < MaxDoctorReports+5; i++ {
		id := fmt.Sprintf("old-%d", i)
		if err := SaveDoctorReport(fs, dir, id, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		// Distinct ages, oldest first, whatever the clock's resolution.
		at := old.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(filepath.Join(dir, DoctorReportsDir, id+".json"), at, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := SaveDoctorReport(fs, dir, "latest", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(filepath.Join(dir, DoctorReportsDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != MaxDoctorReports {
		t.Fatalf("%d files kept, want %d", len(names), MaxDoctorReports)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the temporary file of a crash is still there: %v", err)
	}
	for _, gone := range []string{"r1", "old-0", "old-5"} {
		if _, err := LoadDoctorReport(fs, dir, gone); !errors.Is(err, ErrDoctorReportNotFound) {
			t.Errorf("%s: %v, want removed as one of the oldest", gone, err)
		}
	}
	for _, kept := range []string{"latest", fmt.Sprintf("old-%d", MaxDoctorReports+4)} {
		if _, err := LoadDoctorReport(fs, dir, kept); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
}

// TestDoctorReportsDirIsNotAnIndex: the registry opens a data directory
// holding reports and neither serves nor removes them.
func TestDoctorReportsDirIsNotAnIndex(t *testing.T) {
	fs, dir := vfs.Default, t.TempDir()
	if err := SaveDoctorReport(fs, dir, "r1", []byte(`{"indexes":[]}`)); err != nil {
		t.Fatal(err)
	}
	r, err := Open(fs, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.Names()); n != 0 {
		t.Errorf("%d indexes, want 0", n)
	}
	if data, err := r.DoctorReport("r1"); err != nil || string(data) != `{"indexes":[]}` {
		t.Errorf("report through the registry: %q %v", data, err)
	}
	if err := r.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	rep, err := Doctor(t.Context(), fs, dir, Options{})
	if err != nil || len(rep.Indexes) != 0 {
		t.Fatalf("doctor: %+v %v", rep, err)
	}
	if _, err := LoadDoctorReport(fs, dir, "r1"); err != nil {
		t.Errorf("after open and doctor: %v", err)
	}
}
