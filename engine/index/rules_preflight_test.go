package index

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segment"
)

// TestQ06_ConcurrentPreflightQuarantinesFirstCorruptSourceInOrder: the
// sources validate concurrently, yet each merge quarantines the first
// corrupt source in source order, as a one-by-one preflight would, and
// the merge after the last quarantine merges the healthy rest.
func TestQ06_ConcurrentPreflightQuarantinesFirstCorruptSourceInOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	fs := vfs.NewMem()
	idx, err := Create(fs, testDir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	for i := 0; i < 9; i++ {
		if err := idx.Add(docs(t, 10*i, 10*i+10, 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	segs := idx.Metadata().Segments
	bad := []int{3, 5, 6}
	for _, i := range bad {
		corruptPart(t, fs, segs[i].Info, segment.SuffixStore)
	}
	for k, i := range bad {
		_, err := idx.ForceMerge(context.Background(), 1)
		if !errors.Is(err, ErrSourceQuarantined) {
			t.Fatalf("merge %d: %v", k, err)
		}
		st := idx.Status()
		if len(st.Quarantined) != k+1 {
			t.Fatalf("merge %d: quarantine %+v", k, st.Quarantined)
		}
		if !idx.IsQuarantined(segs[i].ID) {
			t.Fatalf("merge %d quarantined %+v, want segment %d (%s) first", k, st.Quarantined, i, segs[i].ID)
		}
	}
	res, err := idx.ForceMerge(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sources) != len(segs)-len(bad) || res.Documents != 60 {
		t.Fatalf("final merge of %d sources, %d documents", len(res.Sources), res.Documents)
	}
	checkOwned(t, fs, idx)
}
