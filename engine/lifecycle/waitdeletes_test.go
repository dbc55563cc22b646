package lifecycle

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

// TestD01_WaitDeletesReturnsOnceDeletionsEnd: WaitDeletes (D01 step 6)
// waits for the deletions in flight and returns once they end, whether
// one ID or many were deleted at once, and the files are gone by then.
// The deadline only guards against a hang.
func TestD01_WaitDeletesReturnsOnceDeletionsEnd(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	live := []segid.ID{1, 2, 3}
	for _, id := range live {
		writeFiles(t, mem, id, "cmp", "post")
	}
	m := NewManager(mem, dir, live, 10, Options{})
	m.Publish([]segid.ID{3}) // retires 1 and 2 together
	m.Publish(nil)           // then 3 alone
	done := make(chan struct{})
	go func() { m.WaitDeletes(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("WaitDeletes did not return after the deletions ended")
	}
	names, err := mem.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 0 {
		t.Fatalf("files left after WaitDeletes: %v", names)
	}
}
