package index

// The crash and fault harness: a scenario of ingest, commit, upsert, delete
// and reopen runs on a crashable in-memory filesystem. It runs once to count
// its filesystem operations; then, for every operation N, it (a) crashes
// right before N, dropping every unsynced byte and directory entry, and
// reopens the crash image, and (b) injects an I/O error at N, lets the
// scenario react as a client would (retry the commit, resend an abandoned
// generation), and reopens. After each run it checks the invariants:
// every committed document present exactly once, no uncommitted or partial
// generation visible, metadata never references a missing file, and after
// the sweep every seg_ file has an owner.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/schema"
)

// step is one client step of the scenario: operations then a commit.
type step struct {
	adds    []*schema.Document
	deletes []string
}

// record is what the client of a scenario run observed.
type record struct {
	// acked maps each acknowledged generation to the step whose state it shows.
	acked map[uint64]int
	// degraded marks acknowledged generations that were not crash-durable (C04).
	degraded map[uint64]bool
	// pending is the step whose state an unacknowledged generation would
	// show: the step of the commit or maintenance operation in flight.
	pending int
	// errs are the errors commits and maintenance returned to the client.
	errs []error
}

func newRecord() *record { return &record{acked: map[uint64]int{}, degraded: map[uint64]bool{}} }

func scenarioSteps(t testing.TB) []step {
	return []step{
		{adds: docs(t, 0, 30, 1)},
		{adds: docs(t, 20, 40, 2), deletes: []string{"p0003", "p0005"}},
		{adds: append(docs(t, 40, 50, 3), docs(t, 0, 5, 3)...), deletes: []string{"p0021", "p0045"}},
		{adds: docs(t, 50, 55, 4), deletes: []string{"p0001"}}, // after a reopen
	}
}

// expectedStates returns primary key -> stored JSON after each step.
func expectedStates(steps []step) []map[string]string {
	var out []map[string]string
	cur := map[string]string{}
	for _, s := range steps {
		cur = maps.Clone(cur)
		for _, d := range s.adds {
			cur[d.PrimaryKey] = string(d.Stored)
		}
		for _, pk := range s.deletes {
			delete(cur, pk)
		}
		out = append(out, cur)
	}
	return out
}

// faultFS counts operations and either crashes or fails at one of them.
type faultFS struct {
	mem *vfs.MemFS
	// at is the operation index to act on (-1: count only).
	at int64
	// crash selects crash mode; otherwise a single error is injected.
	crash bool
	// unsynced is the percentage of unsynced data kept by a crash image.
	unsynced int
	rng      *rand.Rand

	n atomic.Int64
	// writes marks the indexes of operations that change the disk (a crash
	// before a read is the same image as a crash before the next write).
	writes sync.Map
	// kinds holds each operation's kind (errorfs.OpKind) by index.
	kinds sync.Map
	// inject, when set, is the error injected at operation at (nil: none)
	// instead of errorfs.ErrInjected (crash_nospace_test.go).
	inject  func(op errorfs.Op) error
	mu      sync.Mutex
	image   *vfs.MemFS
	crashed bool
}

func (f *faultFS) MaybeError(op errorfs.Op) error {
	i := f.n.Add(1) - 1
	if op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
		f.writes.Store(i, true)
	}
	f.kinds.Store(i, op.Kind)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return errorfs.ErrInjected // the process is dead: nothing reaches the disk
	}
	if i != f.at {
		return nil
	}
	if !f.crash {
		if f.inject != nil {
			return f.inject(op)
		}
		return errorfs.ErrInjected
	}
	f.crashed = true
	f.image = f.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: f.unsynced, RNG: f.rng})
	return errorfs.ErrInjected
}

func (f *faultFS) String() string { return "faultFS" }

func newFaultFS(at int64, crash bool, unsynced int, seed int64) (*faultFS, vfs.FS) {
	mem := vfs.NewCrashableMem()
	if err := mem.MkdirAll("data", 0o755); err != nil {
		panic(err)
	}
	root, _ := mem.OpenDir("")
	root.Sync()
	root.Close()
	f := &faultFS{mem: mem, at: at, crash: crash, unsynced: unsynced, rng: rand.New(rand.NewPCG(uint64(seed), 1))}
	return f, errorfs.Wrap(mem, f)
}

func harnessOptions() Options {
	// One worker and a small buffer (mid-generation flushes happen) keep the
	// operation order deterministic, so index N names the same operation in
	// every run.
	return Options{IndexingWorkers: 1, WorkerBufferBytes: 64 << 10,
		Hooks: Hooks{CommitPoint: recordCommitCaller}}
}

// harness is one variant of the scenario: its schema, options and extra
// maintenance operations.
type harness struct {
	schema *schema.Schema
	opts   func() Options
	// extra maintenance run after merge, compaction and reorder.
	extra []func(ctx context.Context, idx *Index) (RewriteResult, error)
}

// textHarness is the original scenario; its schema's binary vector field
// adds the coalescing of the runs the merge concatenated (M08).
var textHarness = harness{schema: testSchema, opts: harnessOptions, extra: []func(ctx context.Context, idx *Index) (RewriteResult, error){
	func(ctx context.Context, idx *Index) (RewriteResult, error) {
		segs := idx.Metadata().Segments
		if len(segs) == 0 {
			return RewriteResult{}, ErrNothingToDo
		}
		return idx.CoalesceSegment(ctx, segs[0].ID)
	},
}}

// runScenario drives the steps as a client would. It records the
// generation each acknowledged commit produced. It returns early (without
// failing) when the filesystem "crashed".
func runScenario(t *testing.T, h harness, fs vfs.FS, f *faultFS, steps []step, rec *record) {
	ctx := context.Background()
	dead := func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.crashed }
	open := func(create bool) *Index {
		for attempt := 0; attempt < 3; attempt++ {
			var idx *Index
			var err error
			if create {
				idx, err = Create(fs, testDir, h.schema, h.opts())
			} else {
				idx, err = Open(fs, testDir, h.opts())
			}
			if err == nil {
				return idx
			}
			if dead() {
				return nil
			}
		}
		t.Fatalf("open failed three times")
		return nil
	}
	idx := open(true)
	if idx == nil {
		return
	}
	for si, s := range steps {
		if si == 3 {
			_ = idx.Close(ctx)
			if idx = open(false); idx == nil {
				return
			}
		}
		if !applyStep(t, idx, s, dead) {
			_ = idx.Close(ctx)
			return
		}
		rec.pending = si
		for attempt := 0; ; attempt++ {
			res, err := idx.Commit(ctx)
			if err == nil {
				rec.ack(res.Generation, si, res.DurabilityDegraded)
				break
			}
			rec.errs = append(rec.errs, err)
			if dead() {
				_ = idx.Close(ctx)
				return
			}
			if attempt > 3 {
				t.Fatalf("step %d: commit keeps failing: %v", si, err)
			}
			if errors.Is(err, ErrGenerationFailed) && !applyStep(t, idx, s, dead) {
				_ = idx.Close(ctx)
				return
			}
		}
		if si == 2 {
			// Maintenance rewrites segments without changing visibility: a
			// merge to one segment, a compaction of its deleted rows, and a
			// BP reorder of the result (all three keep the binary field's
			// encoded runs: the merge concatenates them).
			ops := []func(context.Context, *Index) (RewriteResult, error){
				func(ctx context.Context, idx *Index) (RewriteResult, error) { return idx.ForceMerge(ctx, 1) },
				func(ctx context.Context, idx *Index) (RewriteResult, error) { return idx.Compact(ctx) },
				func(ctx context.Context, idx *Index) (RewriteResult, error) {
					segs := idx.Metadata().Segments
					if len(segs) == 0 {
						return RewriteResult{}, ErrNothingToDo
					}
					return idx.ReorderSegment(ctx, segs[0].ID, ReorderOptions{})
				},
			}
			for _, op := range append(ops, h.extra...) {
				res, err := op(ctx, idx)
				if err != nil {
					rec.errs = append(rec.errs, err)
				}
				if err == nil {
					rec.ack(res.Generation, si, res.DurabilityDegraded)
				} else if dead() {
					_ = idx.Close(ctx)
					return
				}
			}
		}
	}
	_ = idx.Close(ctx)
}

// ack records an acknowledged generation showing step si.
func (r *record) ack(g uint64, si int, degraded bool) {
	r.acked[g] = si
	if degraded {
		// C04: the generation stands but is not crash-durable yet; a crash
		// image may show the one before it.
		r.degraded[g] = true
	}
}

// applyStep admits a step's operations; false when the process is dead.
// A generation that failed under it (an early flush hit the fault) is
// reset by a commit and the whole step is sent again, as a client would.
func applyStep(t *testing.T, idx *Index, s step, dead func() bool) bool {
	for attempt := 0; attempt < 3; attempt++ {
		err := idx.Add(s.adds)
		for _, pk := range s.deletes {
			if err != nil {
				break
			}
			_, err = idx.Delete(pk)
		}
		if err == nil {
			return true
		}
		if dead() {
			return false
		}
		if !errors.Is(err, ErrGenerationFailed) {
			t.Fatalf("apply step: %v", err)
		}
		if _, cerr := idx.Commit(context.Background()); !errors.Is(cerr, ErrGenerationFailed) {
			t.Fatalf("commit of a failed generation: %v", cerr)
		}
	}
	t.Fatal("apply step: generation keeps failing")
	return false
}

// checkRecovered opens fs cleanly and checks the invariants; it returns
// the recovered generation.
func checkRecovered(t *testing.T, h harness, fs vfs.FS, states []map[string]string, rec *record, label string) uint64 {
	t.Helper()
	acked, degraded := rec.acked, rec.degraded
	idx, err := Open(fs, testDir, h.opts())
	if errors.Is(err, ErrNotFound) && len(acked) == 0 {
		return 0 // crashed before the index existed
	}
	if err != nil {
		t.Fatalf("%s: reopen: %v", label, err)
	}
	defer idx.Close(context.Background())
	st := idx.Status()
	if len(st.Quarantined) > 0 {
		t.Fatalf("%s: metadata references a missing or broken file: %+v", label, st.Quarantined)
	}
	g := st.Generation
	var lastAcked uint64
	for ag := range acked {
		if !degraded[ag] {
			lastAcked = max(lastAcked, ag)
		}
	}
	if g < lastAcked {
		t.Fatalf("%s: recovered generation %d is older than acknowledged %d", label, g, lastAcked)
	}
	vis := visible(t, idx)
	if g == 0 {
		if len(vis) != 0 {
			t.Fatalf("%s: generation 0 shows %d docs", label, len(vis))
		}
	} else {
		// Generation g is step acked[g], or the in-flight operation's step.
		si, ok := acked[g]
		if !ok {
			if g > lastAcked+1 {
				t.Fatalf("%s: recovered generation %d skips past the acknowledged %d", label, g, lastAcked)
			}
			si = rec.pending
		}
		if si >= len(states) {
			t.Fatalf("%s: generation %d has no step", label, g)
		}
		if !maps.Equal(vis, states[si]) {
			t.Fatalf("%s: generation %d shows %d docs, step %d expects %d", label, g, len(vis), si, len(states[si]))
		}
	}
	checkOwned(t, fs, idx)
	checkNoSpares(t, fs, label)
	return g
}

func TestCrashAndFaultHarness(t *testing.T) {
	runHarness(t, textHarness, scenarioSteps(t), 1)
}

// runHarness runs the crash and fault harness over steps, exercising one
// in every sample write points.
func runHarness(t *testing.T, h harness, steps []step, sample int64) {
	states := expectedStates(steps)

	// Count the operations of a clean run.
	counter, fs := newFaultFS(-1, false, 0, 0)
	rec := newRecord()
	runScenario(t, h, fs, counter, steps, rec)
	if rewrites := 3 + len(h.extra); len(rec.acked) != len(steps)+rewrites || len(rec.degraded) != 0 {
		t.Fatalf("clean run acknowledged %d generations for %d steps and %d rewrites, %d degraded",
			len(rec.acked), len(steps), rewrites, len(rec.degraded))
	}
	checkRecovered(t, h, fs, states, rec, "clean")
	// Flush publication and rewrite publication reach the one commit
	// point (the doctor has its own harness).
	requireCommitCallers(t, commitByFlush, commitByRewrite)
	total := counter.n.Load()
	if total < 100 {
		t.Fatalf("scenario performed only %d filesystem operations", total)
	}

	points := 0
	for n := int64(0); n < total; n++ {
		_, write := counter.writes.Load(n)
		for _, mode := range []string{"crash", "crash-torn", "error"} {
			label := fmt.Sprintf("%s at op %d", mode, n)
			unsynced := 0
			switch {
			case mode != "error" && !write:
				continue // same crash image as before the next write
			case mode == "crash-torn" && n%5 != 0:
				continue // a sample: torn images keep random unsynced data
			case mode == "crash-torn":
				unsynced = 50
			case mode == "error" && !write && n%3 != 0:
				continue // read errors: a sample
			case testing.Short() && n%4 != 0:
				continue // -short (the race run): a quarter of the points
			case n%sample != 0:
				continue
			}
			f, fs := newFaultFS(n, mode != "error", unsynced, n)
			rec := newRecord()
			runScenario(t, h, fs, f, steps, rec)
			if mode == "error" {
				checkRecovered(t, h, f.mem, states, rec, label)
				if g := checkRecovered(t, h, f.mem, states, rec, label); rec.acked[g] != len(steps)-1 {
					t.Fatalf("%s: the client could not finish the scenario (generation %d)", label, g)
				}
			} else {
				f.mu.Lock()
				image := f.image
				f.mu.Unlock()
				if image == nil {
					// Background deletions make the tail of the operation
					// count vary by a few; a run that ended first is a
					// clean run.
					image = f.mem
				}
				checkRecovered(t, h, image, states, rec, label)
			}
			points++
		}
	}
	t.Logf("crash points exercised: %d (over %d filesystem operations)", points, total)
	fmt.Printf("crash points exercised: %d\n", points)
}
