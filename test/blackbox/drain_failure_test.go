package blackbox

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fsImmutableFlag is FS_IMMUTABLE_FL of linux/fs.h (chattr +i).
const fsImmutableFlag = 0x00000010

// setImmutable sets or clears the immutable attribute of a directory: not
// even root may create files in it, so every segment write fails.
func setImmutable(dir string, on bool) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	if on {
		flags |= fsImmutableFlag
	} else {
		flags &^= fsImmutableFlag
	}
	return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
}

// TestDrainOverAFailingDiskKeepsAcceptedDocuments: while the index
// directory refuses new files, every flush fails. The drain must not report
// drained (its commit failed, and the accepted documents are still owed),
// and once the disk accepts writes the same drain commits every one of them.
// A build failure never discards accepted documents.
func TestDrainOverAFailingDiskKeepsAcceptedDocuments(t *testing.T) {
	needBinary(t)
	dir := t.TempDir()
	s := startServer(t, dir)
	const index = "owed"
	s.CreateIndex(index, testSchema)
	docs := makeDocs(paragraphs(t), "p", 0, 40)
	s.Ingest(index, docs)
	idxDir := filepath.Join(dir, index)
	if err := setImmutable(idxDir, true); err != nil {
		t.Skipf("this filesystem has no immutable attribute (%v)", err)
	}
	t.Cleanup(func() { _ = setImmutable(idxDir, false) })

	// A commit fails, answers retryable, and keeps the documents.
	r := s.MustDo("POST", "/v1/indexes/"+index+"/commit", nil)
	if r.Status != http.StatusInternalServerError {
		t.Fatalf("commit on an immutable directory: %s", r)
	}
	if st := s.Status(index); st.UncommittedDocuments != 40 || st.Documents != 0 {
		t.Fatalf("after the failed commit: %d uncommitted, %d committed; want 40 and 0", st.UncommittedDocuments, st.Documents)
	}

	s.Expect(http.StatusAccepted, "POST", "/v1/admin/drain", nil, nil)
	var ds DrainStatus
	for i := 0; i < 10; i++ {
		time.Sleep(200 * time.Millisecond)
		s.Expect(http.StatusOK, "GET", "/v1/admin/drain", nil, &ds)
		if ds.Drained {
			t.Fatalf("drain reported drained while its commit cannot succeed: %+v", ds)
		}
	}
	if ds.UncommittedDocuments != 40 {
		t.Fatalf("drain status %+v, want the 40 accepted documents still owed", ds)
	}

	if err := setImmutable(idxDir, false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !ds.Drained {
		if time.Now().After(deadline) {
			t.Fatalf("the drain did not finish once the disk accepted writes: %+v", ds)
		}
		time.Sleep(200 * time.Millisecond)
		s.Expect(http.StatusOK, "GET", "/v1/admin/drain", nil, &ds)
	}
	if st := s.Status(index); st.Documents != 40 || st.UncommittedDocuments != 0 {
		t.Fatalf("after the drain: %d committed, %d uncommitted; want 40 and 0", st.Documents, st.UncommittedDocuments)
	}
	if got := s.LiveDocs(index); len(got) != 40 {
		t.Fatalf("%d documents searchable, want 40", len(got))
	}
}
