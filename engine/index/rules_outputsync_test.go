package index

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// failOutputSync fails, once armed, the first fsync of a flushed segment's
// post file and remembers its segment.
type failOutputSync struct {
	mu     sync.Mutex
	armed  bool
	failed segid.ID
}

func (f *failOutputSync) MaybeError(op errorfs.Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.armed || op.Kind != errorfs.OpFileSync || !strings.HasSuffix(op.Path, "."+segment.SuffixCompound) {
		return nil
	}
	id, _, ok := segid.ParseFileName(op.Path[strings.LastIndexByte(op.Path, '/')+1:])
	if !ok {
		return nil
	}
	f.armed, f.failed = false, id
	return errorfs.ErrInjected
}
func (f *failOutputSync) String() string { return "failOutputSync" }

// TestC05_OutputSyncFailureRebuildsGeneration: flushed segments are synced
// in the commit point's sync round (with metadata.json.tmp). When one of
// their fsyncs fails the output is never published, not even by a retry
// (after a failed fsync its data may be gone whatever a later fsync says):
// the commit fails as a failed generation (C05), nothing is published, and
// the next commit rebuilds the documents into a new segment.
func TestC05_OutputSyncFailureRebuildsGeneration(t *testing.T) {
	inj := &failOutputSync{}
	fs := errorfs.Wrap(vfs.NewMem(), inj)
	idx, err := Create(fs, testDir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if err := idx.Add(docs(t, 0, 10, 1)); err != nil {
		t.Fatal(err)
	}
	inj.mu.Lock()
	inj.armed = true
	inj.mu.Unlock()
	_, err = idx.Commit(context.Background())
	if !errors.Is(err, ErrGenerationFailed) {
		t.Fatalf("commit with a failed output fsync: %v, want ErrGenerationFailed", err)
	}
	if inj.failed == 0 {
		t.Fatal("no output fsync was attempted")
	}
	if got := len(visible(t, idx)); got != 0 {
		t.Fatalf("%d documents visible after a failed commit", got)
	}
	res := mustCommit(t, idx)
	if res.Documents != 10 {
		t.Fatalf("the next commit published %d documents, want 10", res.Documents)
	}
	if got := len(visible(t, idx)); got != 10 {
		t.Fatalf("visible %d, want 10", got)
	}
	for _, s := range idx.Metadata().Segments {
		if s.ID == inj.failed {
			t.Fatalf("segment %s, whose fsync failed, was published", s.ID)
		}
	}
	if _, left := segFiles(t, fs)[inj.failed]; left {
		t.Fatalf("files of the unsynced output %s were not cleaned up", inj.failed)
	}
	checkOwned(t, fs, idx)
}

// TestOutputSyncFailedLooksAtEveryJoinedError: the sync round joins the
// errors of its concurrent fsyncs; a failed mask fsync listed first must
// not hide a failed output fsync behind it.
func TestOutputSyncFailedLooksAtEveryJoinedError(t *testing.T) {
	mask := &metadata.SyncError{Name: "seg_7.del", Err: errorfs.ErrInjected}
	output := &metadata.SyncError{Name: "seg_5.post", Err: errorfs.ErrInjected}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{mask, false},
		{output, true},
		{fmt.Errorf("save: %w", errors.Join(errors.New("tmp"), mask)), false},
		{fmt.Errorf("save: %w", errors.Join(mask, output)), true},
	} {
		if got := outputSyncFailed(c.err); got != c.want {
			t.Errorf("outputSyncFailed(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
