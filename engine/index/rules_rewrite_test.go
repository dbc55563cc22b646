package index

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// oneSegment commits docs [0, n) as one segment (one worker).
func oneSegment(t *testing.T, fs vfs.FS, opts Options, n int) *Index {
	t.Helper()
	opts.IndexingWorkers = 1
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(docs(t, 0, n, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	if len(idx.Metadata().Segments) != 1 {
		t.Fatalf("setup: %d segments", len(idx.Metadata().Segments))
	}
	return idx
}

func deleteAndCommit(t *testing.T, idx *Index, pks ...string) {
	t.Helper()
	for _, pk := range pks {
		if _, err := idx.Delete(pk); err != nil {
			t.Error(err)
		}
	}
	if _, err := idx.Commit(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestC09_FinalizerOwnsGuardsAndPublishesRefreshesThenResumes: a commit
// whose caller gave up is finished by its owned finalizer: until
// publication, the prepared segments stay claimed and the workers paused
// (ingestion answered ErrBackpressure); metadata is published, then the
// primary-key view (the snapshot) shows the generation, and only then is
// ingestion admitted again.
func TestC09_FinalizerOwnsGuardsAndPublishesRefreshesThenResumes(t *testing.T) {
	hooks, reached, release := blockingPublish()
	opts := testOptions()
	opts.Hooks = hooks
	fs := vfs.NewMem()
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock() // a failed check must not leave Close waiting
	if err := idx.Add(docs(t, 0, 20, 1)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := idx.Commit(ctx); errc <- err }()
	<-reached
	cancel()
	<-errc
	// Before the commit point: the finalizer holds its guards.
	if idx.Manager().ActiveOperations() == 0 {
		t.Fatal("the prepared segments lost their claims while the finalizer runs")
	}
	if err := idx.Add(docs(t, 20, 21, 1)); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("ingestion admitted before the finalizer ended: %v", err)
	}
	if idx.Metadata().Generation != 0 {
		t.Fatal("published before the finalizer's save")
	}
	// The resume is observed by the first admitted Add; at that moment
	// metadata and the primary-key view must already show the commit.
	var seenGen uint64
	var seenDocs int
	var seenP0007 bool
	unblock()
	eventually(t, "ingestion to resume", func() bool {
		if err := idx.Add(docs(t, 20, 21, 1)); err != nil {
			return false
		}
		seenGen = idx.Metadata().Generation
		snap, err := idx.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		seenDocs = int(snap.Documents())
		seenP0007, err = snap.LookupPrimaryKey("p0007")
		if err != nil {
			t.Fatal(err)
		}
		return true
	})
	if seenGen != 1 || seenDocs != 20 || !seenP0007 {
		t.Fatalf("workers resumed before publication and the view refresh: generation %d, %d docs, p0007 %v",
			seenGen, seenDocs, seenP0007)
	}
	if idx.Manager().ActiveOperations() != 0 {
		t.Fatal("claims kept after the finalizer ended")
	}
	checkCommittedFilesExist(t, fs, idx.Metadata())
}

// TestL10_ReorderCarriesTheLatestMaskAndCompactionChecksItsCapture: a
// delete committed while a reorder of its segment runs stays deleted in
// the reordered output (layout-changing rewrites carry the current mask,
// permuted); the same delete during a compaction rejects the compaction.
func TestL10_ReorderCarriesTheLatestMaskAndCompactionChecksItsCapture(t *testing.T) {
	var idx *Index
	var once sync.Once
	var during, victim string
	opts := testOptions()
	opts.Hooks.BeforeRewritePublish = func(kind string) {
		if kind == during {
			once.Do(func() { deleteAndCommit(t, idx, victim) })
		}
	}
	idx = oneSegment(t, vfs.NewMem(), opts, 300)
	defer mustClose(t, idx)
	deleteAndCommit(t, idx, "p0001")
	during, victim = "reorder", "p0042"
	if _, err := idx.ReorderSegment(context.Background(), idx.Metadata().Segments[0].ID, ReorderOptions{}); err != nil {
		t.Fatal(err)
	}
	vis := visible(t, idx)
	if _, ok := vis["p0042"]; ok {
		t.Fatal("a delete committed during the reorder was lost: the output carries the captured mask")
	}
	if _, ok := vis["p0001"]; ok || len(vis) != 298 {
		t.Fatalf("after reorder %d visible", len(vis))
	}
	// Compaction: its captured visibility is checked at publication.
	once = sync.Once{}
	during, victim = "compact", "p0200"
	deleteAndCommit(t, idx, "p0100")
	_, err := idx.CompactSegment(context.Background(), idx.Metadata().Segments[0].ID)
	if !errors.Is(err, ErrVisibilityChanged) {
		t.Fatalf("compaction over a changed mask: %v", err)
	}
	vis = visible(t, idx)
	if _, ok := vis["p0200"]; ok || len(vis) != 296 {
		t.Fatalf("after the rejected compaction %d visible, p0200 visible %v", len(vis), ok)
	}
}

// TestM02_SingleSourceRewriteMaskOwnedBeforeTheSourceRetires: this engine
// has no address-preserving rewrite (every single-source rewrite rebuilds
// the rows; reorder permutes them), so an exact mask generation cannot be
// reused; see docs/engine.md. The nearest behaviour: the output's mask is
// a new generation under its own claimed ID, metadata owns it before the
// source and the source's mask retire, and a snapshot still holding the
// source keeps both until it closes.
func TestM02_SingleSourceRewriteMaskOwnedBeforeTheSourceRetires(t *testing.T) {
	mem := vfs.NewMem()
	var idx *Index
	opts := testOptions()
	opts.Hooks.BeforeRewritePublish = func(string) { checkOwned(t, mem, idx) }
	idx = oneSegment(t, mem, opts, 300)
	defer mustClose(t, idx)
	deleteAndCommit(t, idx, "p0003", "p0004")
	src := idx.Metadata().Segments[0]
	old, err := idx.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var closeOld sync.Once
	defer closeOld.Do(old.Close) // a failed check must not leave Close waiting
	res, err := idx.ReorderSegment(context.Background(), src.ID, ReorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := idx.Metadata().Segments[0]
	if out.ID != res.Output || out.Deletes == nil || out.Deletes.Deleted != 2 {
		t.Fatalf("output entry %+v", out)
	}
	if out.Deletes.ID == src.Deletes.ID {
		t.Fatal("a permuted mask reused the source's mask generation")
	}
	checkCommittedFilesExist(t, mem, idx.Metadata())
	for _, id := range []segid.ID{out.ID, out.Deletes.ID} {
		if !idx.Manager().OwnersOf(id).Live {
			t.Fatalf("%s not metadata-owned after the rewrite", id)
		}
	}
	files := segFiles(t, mem)
	for _, id := range []segid.ID{src.ID, src.Deletes.ID} {
		if _, ok := files[id]; !ok {
			t.Fatalf("%s deleted while a snapshot holds it", id)
		}
	}
	closeOld.Do(old.Close)
	files = segFiles(t, mem)
	for _, id := range []segid.ID{src.ID, src.Deletes.ID} {
		if _, ok := files[id]; ok {
			t.Fatalf("%s kept after its last reader", id)
		}
	}
	checkOwned(t, mem, idx)
}

// TestQ10_CorruptReorderSourceIsQuarantined: a reorder source whose files
// fail full validation, checked before any BP work, enters the merge
// quarantine: it stays in metadata
// and visible in status, is excluded from search, and the next manual
// reorder skips it.
func TestQ10_CorruptReorderSourceIsQuarantined(t *testing.T) {
	fs, idx := threeSegments(t, testOptions())
	defer mustClose(t, idx)
	victim := idx.Metadata().Segments[1].ID
	corruptPart(t, fs, idx.Metadata().Segments[1].Info, segment.SuffixForward)
	// Counts the BP graph builder's checks: validation comes before it.
	ctx := &cancelInside{Context: context.Background(), cancel: func() {}, in: "forwardGraph", n: -1}
	_, err := idx.ReorderSegment(ctx, victim, ReorderOptions{})
	if !errors.Is(err, ErrSourceQuarantined) {
		t.Fatalf("reorder of a corrupt source: %v", err)
	}
	if n := ctx.seen.Load(); n != 0 {
		t.Fatalf("the BP graph of a corrupt source was built (%d checks) before its validation", n)
	}
	if !idx.IsQuarantined(victim) || !idx.Manager().OwnersOf(victim).Live {
		t.Fatal("the corrupt source is not quarantined, or left metadata")
	}
	if st := idx.Status(); len(st.Quarantined) != 1 || st.Quarantined[0].Segment != victim {
		t.Fatalf("status quarantine %+v", st.Quarantined)
	}
	results, err := idx.Reorder(context.Background(), ReorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Sources[0] == victim {
			t.Fatal("a quarantined segment was reordered")
		}
	}
	checkOwned(t, fs, idx)
}

// failSuffix fails every write of files ending in suffix while armed.
// failNthWrite counts the writes (and creates) of seg_ files and fails
// the nth one while armed (n counts from 1; 0 only counts).
type failNthWrite struct {
	mu    sync.Mutex
	armed bool
	n, at int
}

func (f *failNthWrite) arm(at int) { f.mu.Lock(); f.armed, f.n, f.at = true, 0, at; f.mu.Unlock() }

func (f *failNthWrite) disarm() int { f.mu.Lock(); defer f.mu.Unlock(); f.armed = false; return f.n }

func (f *failNthWrite) MaybeError(op errorfs.Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.armed && (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpCreate) &&
		strings.HasPrefix(op.Path[strings.LastIndex(op.Path, "/")+1:], "seg_") {
		f.n++
		if f.n == f.at {
			return errorfs.ErrInjected
		}
	}
	return nil
}

func (f *failNthWrite) String() string { return "failNthWrite" }

// TestQ11_ReorderRebuildsEveryFileAndAnyWriteFailureFailsTheOutput: this
// engine's reorder copies no file: it rebuilds the complete set of parts
// from the source reader (docs/engine.md), so no optional part can be
// silently skipped. The nearest behaviour: the output has exactly the
// source's files and parts, and a storage error on any one of its writes
// (together they carry every part: the parts share the compound file's
// buffered writes, so there are fewer writes than parts) fails the
// output: nothing published, no output file left, the source intact.
func TestQ11_ReorderRebuildsEveryFileAndAnyWriteFailureFailsTheOutput(t *testing.T) {
	inj := &failNthWrite{}
	mem := vfs.NewMem()
	idx := oneSegment(t, errorfs.Wrap(mem, inj), testOptions(), 200)
	defer mustClose(t, idx)
	src := idx.Metadata().Segments[0]
	layout := func(info segment.Info) string {
		var files, parts []string
		for _, f := range info.Files {
			files = append(files, f.Suffix)
		}
		for _, p := range info.PartSizes() {
			parts = append(parts, p.Suffix)
		}
		sort.Strings(parts)
		return fmt.Sprint(files, parts)
	}
	// Count the output's writes in a reorder that is then discarded by a
	// failure at its last write.
	inj.arm(1 << 30)
	if _, err := idx.ReorderSegment(context.Background(), src.ID, ReorderOptions{}); err != nil {
		t.Fatal(err)
	}
	writes := inj.disarm()
	if writes < 2 {
		// The create and at least one write of the parts.
		t.Fatalf("a reorder output of %d parts took %d creates and writes", len(src.PartSizes()), writes)
	}
	src = idx.Metadata().Segments[0]
	before := segFiles(t, mem)
	for at := 1; at <= writes; at++ {
		inj.arm(at)
		_, err := idx.ReorderSegment(context.Background(), src.ID, ReorderOptions{})
		inj.disarm()
		if err == nil {
			t.Fatalf("a reorder whose write %d of %d failed published", at, writes)
		}
		if after := segFiles(t, mem); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("failed write %d left files: %v", at, after)
		}
		if idx.Metadata().Segments[0].ID != src.ID || idx.IsQuarantined(src.ID) {
			t.Fatalf("a storage error on the output's write %d replaced or quarantined the source", at)
		}
	}
	res, err := idx.ReorderSegment(context.Background(), src.ID, ReorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := idx.Metadata().Segments[0]
	if layout(out.Info) != layout(src.Info) {
		t.Fatalf("output %s layout %s, source %s", res.Output, layout(out.Info), layout(src.Info))
	}
	var disk []string
	for _, f := range out.Files {
		disk = append(disk, f.Suffix)
	}
	if sufs := segFiles(t, mem)[res.Output]; fmt.Sprint(sufs) != fmt.Sprint(disk) {
		t.Fatalf("output files on disk %v, metadata %v", sufs, disk)
	}
}

// corruptOutput flips a byte in the middle of the first seg_*.cmp file
// other than skip that is opened or synced while armed: an output damaged
// after its writer closed it, before it is first read back (validated, or
// only opened) for publication.
type corruptOutput struct {
	mu    sync.Mutex
	mem   *vfs.MemFS
	skip  string
	armed bool
	hit   string
}

func (c *corruptOutput) MaybeError(op errorfs.Op) error {
	if op.Kind != errorfs.OpOpen && op.Kind != errorfs.OpFileSync || !strings.HasSuffix(op.Path, "."+segment.SuffixCompound) || op.Path == c.skip {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.armed {
		return nil
	}
	c.armed = false
	c.hit = op.Path
	f, err := c.mem.OpenReadWrite(op.Path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	b := make([]byte, 1)
	off := st.Size() / 2
	if _, err := f.ReadAt(b, off); err != nil {
		return err
	}
	b[0] ^= 0xff
	_, err = f.WriteAt(b, off)
	return err
}

func (c *corruptOutput) String() string { return "corruptOutput" }

// TestQ12_OutputFullyValidatedBeforePublication: an output whose bytes
// are damaged after they were written (its sizes and headers intact, so
// the cheap open check passes) is never published: the rewrite fails, the
// source stays, the output's files are deleted.
func TestQ12_OutputFullyValidatedBeforePublication(t *testing.T) {
	mem := vfs.NewMem()
	inj := &corruptOutput{mem: mem}
	idx := oneSegment(t, errorfs.Wrap(mem, inj), testOptions(), 300)
	defer mustClose(t, idx)
	src := idx.Metadata().Segments[0]
	inj.skip = mem.PathJoin(testDir, segid.FileName(src.ID, segment.SuffixCompound))
	gen := idx.Metadata().Generation
	before := segFiles(t, mem)
	inj.mu.Lock()
	inj.armed = true
	inj.mu.Unlock()
	_, err := idx.ReorderSegment(context.Background(), src.ID, ReorderOptions{})
	if inj.hit == "" {
		t.Fatal("setup: the output .cmp file was never opened or synced")
	}
	if err == nil {
		t.Fatalf("an output damaged after its write (%s) was published", inj.hit)
	}
	if idx.Metadata().Generation != gen || idx.Metadata().Segments[0].ID != src.ID {
		t.Fatal("metadata switched to an unvalidated output")
	}
	if after := segFiles(t, mem); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the damaged output's files were left: %v", after)
	}
	if idx.IsQuarantined(src.ID) {
		t.Fatal("a damaged output quarantined its healthy source")
	}
}
