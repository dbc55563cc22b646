package index

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/summadev/summa/engine/bp"
	"github.com/summadev/summa/engine/schema"
)

// cancelInside is a context that cancels itself right after the n-th
// cancellation check made by a function whose name contains in: the check
// itself still passes, so cancellation arrives between two bounded units of
// that phase, not at its start.
type cancelInside struct {
	context.Context
	// cancel cancels the embedded context.
	cancel context.CancelFunc
	// in names the phase's function.
	in string
	// n is the check after which the context is cancelled.
	n int32
	// seen counts the phase's checks.
	seen atomic.Int32
}

func (c *cancelInside) Err() error {
	err := c.Context.Err()
	if pc, _, _, ok := runtime.Caller(1); ok && strings.Contains(runtime.FuncForPC(pc).Name(), c.in) {
		if c.seen.Add(1) == c.n {
			c.cancel()
		}
	}
	return err
}

// TestS03_CancellationInsideGraphBuildingAndBP: cancelled after the graph
// builder's first check (document 0 of over 1,024), a reorder stops at its
// next check (document 1,024) with the graph's error; cancelled after the
// graph's last check, the graph completes and BP stops at its first
// bounded unit (bp.ErrCancelled). Either way no file, claim or generation
// is left behind.
func TestS03_CancellationInsideGraphBuildingAndBP(t *testing.T) {
	fs, idx := createMem(t)
	defer mustClose(t, idx)
	ps := paragraphs(t, 500)
	var all []*schema.Document
	for i := 0; i < 2500; i++ { // the corpus's paragraphs, repeated
		all = append(all, doc(t, fmt.Sprintf("p%04d", i), ps[i%len(ps)], 1))
	}
	if err := idx.Add(all); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	before, gen := segFiles(t, fs), idx.Metadata().Generation
	src := idx.Metadata().Segments[0]
	if src.Documents <= 1024 {
		t.Fatalf("segment of %d documents: the graph checks only once", src.Documents)
	}
	checks := int32((src.Documents-1)/1024 + 1) // one per 1,024 documents
	for _, c := range []struct {
		phase string
		after int32
		want  func(error) bool
	}{
		{"graph building", 1, func(err error) bool {
			return errors.Is(err, context.Canceled) && strings.Contains(err.Error(), "reorder graph") && !errors.Is(err, bp.ErrCancelled)
		}},
		{"BP", checks, func(err error) bool { return errors.Is(err, bp.ErrCancelled) && errors.Is(err, context.Canceled) }},
	} {
		parent, cancel := context.WithCancel(context.Background())
		ctx := &cancelInside{Context: parent, cancel: cancel, in: "forwardGraph", n: c.after}
		_, err := idx.ReorderSegment(ctx, src.ID, ReorderOptions{})
		cancel()
		if !c.want(err) {
			t.Fatalf("cancelled inside %s: %v", c.phase, err)
		}
		if after := segFiles(t, fs); len(after) != len(before) || idx.Manager().ActiveOperations() != 0 ||
			idx.Metadata().Generation != gen {
			t.Fatalf("cancelled inside %s: files %v, %d claims, generation %d", c.phase, after,
				idx.Manager().ActiveOperations(), idx.Metadata().Generation)
		}
	}
}
