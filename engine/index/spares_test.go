package index

import (
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/internal/rawfile"
	"github.com/summadev/summa/engine/metadata"
)

// checkNoSpares fails when a spare file is in the index directory: the
// writer open removes every leftover.
func checkNoSpares(t testing.TB, fs vfs.FS, label string) {
	t.Helper()
	for i := range spareSlots {
		if _, err := fs.Stat(fs.PathJoin(testDir, spareName(i))); err == nil {
			t.Fatalf("%s: spare file %s left after the writer open", label, spareName(i))
		}
	}
}

// spareHarness is the crash and fault scenario with spare files, refilled
// inline so that every run performs the same operations: a crash or an
// I/O error hits the spares' creation, their rename into a segment, mask
// or metadata.json.tmp, and their removal at close.
var spareHarness = harness{schema: testSchema, extra: textHarness.extra, opts: func() Options {
	o := harnessOptions()
	o.SpareFiles = spareSlots
	o.Hooks.SpareRefill = func(refill func()) { refill() }
	return o
}}

// TestSpareFiles_CrashHarness: with spares, a crash or an I/O error at any
// filesystem operation loses no acknowledged document, shows no partial
// generation, leaves no file the metadata references missing, and the
// reopen removes every spare and sweeps every unowned seg_ file.
func TestSpareFiles_CrashHarness(t *testing.T) {
	runHarness(t, spareHarness, scenarioSteps(t), 2)
}

// TestSpareFiles_CommitUsesSpares: once refilled, a commit's new files are
// the spares renamed (the spares are gone, nothing else is created), the
// commit is durable and readable, and Close removes the unused spares.
func TestSpareFiles_CommitUsesSpares(t *testing.T) {
	fs := vfs.NewMem()
	counter := &createCounter{FS: fs}
	opts := testOptions()
	opts.SpareFiles = 3
	opts.Hooks.SpareRefill = func(refill func()) { refill() }
	idx, err := Create(counter, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(docs(t, 0, 20, 1)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx) // creates its files, then the spares
	if got := idx.spares.ready(); got != 3 {
		t.Fatalf("%d spares ready after the first commit, want 3", got)
	}
	// A one-document upsert: segment, mask of the old segment, metadata
	// tmp: three spares renamed, and the refill creates three again.
	if err := idx.Add(docs(t, 5, 6, 2)); err != nil {
		t.Fatal(err)
	}
	before := counter.creates
	mustCommit(t, idx)
	if got := counter.creates - before; got != 3 {
		t.Fatalf("the upsert commit created %d files (the refill's three expected)", got)
	}
	if counter.renamedSpares < 3 {
		t.Fatalf("%d spares renamed into place, want at least 3", counter.renamedSpares)
	}
	// The published metadata.json is held open for the next rename.
	idx.spares.mu.Lock()
	held := idx.spares.mu.held != nil
	idx.spares.mu.Unlock()
	if !held {
		t.Fatal("metadata.json of the published generation is not held open after a commit")
	}
	want := expectedStates([]step{{adds: docs(t, 0, 20, 1)}, {adds: docs(t, 5, 6, 2)}})[1]
	if got := visible(t, idx); !maps.Equal(got, want) {
		t.Fatalf("visible documents differ after the upsert: %d, want %d", len(got), len(want))
	}
	names, _ := fs.List(testDir)
	spares := 0
	for _, n := range names {
		if filepath.Ext(n) != "" && n[:len("spare.")] == "spare." {
			spares++
		}
	}
	if spares != 3 {
		t.Fatalf("%d spare files on disk while open (%v), want 3", spares, names)
	}
	mustClose(t, idx)
	checkNoSpares(t, fs, "after close")
	if idx.spares.mu.held != nil || idx.spares.mu.release != nil {
		t.Fatal("a metadata file is still held open after Close")
	}
	idx, err = Open(fs, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if got := visible(t, idx); !maps.Equal(got, want) {
		t.Fatalf("reopened: %d documents, want %d", len(got), len(want))
	}
}

// createCounter counts Create calls and the renames of spares.
type createCounter struct {
	vfs.FS
	creates, renamedSpares int
}

func (c *createCounter) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	c.creates++
	return c.FS.Create(name, cat)
}

func (c *createCounter) Rename(from, to string) error {
	if n := filepath.Base(from); len(n) > 6 && n[:6] == "spare." {
		c.renamedSpares++
	}
	return c.FS.Rename(from, to)
}

// TestSpareFiles_KillAfterCommit is kill -9 on a real disk right after a
// commit returned: the directory as the process left it (spares ready, a
// refill possibly running, the replaced mask retired) opens with every
// committed document, no spare, and no file the metadata references
// missing.
func TestSpareFiles_KillAfterCommit(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live")
	idx, err := Create(vfs.Default, live, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	if idx.spares.slots != spareSlots {
		t.Fatalf("spares on the default filesystem: %d slots, want %d", idx.spares.slots, spareSlots)
	}
	steps := []step{{adds: docs(t, 0, 20, 1)}}
	if err := idx.Add(steps[0].adds); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	for v := 2; v < 6; v++ {
		s := step{adds: docs(t, v, v+1, v)}
		steps = append(steps, s)
		if err := idx.Add(s.adds); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	settledSpares(t, idx.spares)
	idx.spares.mu.Lock()
	adopted := idx.spares.mu.adopted
	idx.spares.mu.Unlock()
	if adopted == 0 {
		t.Fatal("no upsert's retired mask was adopted into a spare slot")
	}
	// The image a kill leaves: the files as they are (the page cache
	// survives a process kill), without the lock.
	image := filepath.Join(dir, "image")
	copyDir(t, live, image)
	if _, err := os.Stat(filepath.Join(image, spareName(0))); err != nil {
		t.Fatalf("no spare in the image (the test would prove nothing): %v", err)
	}
	re, err := Open(vfs.Default, image, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, re)
	if st := re.Status(); len(st.Quarantined) > 0 {
		t.Fatalf("metadata references a missing or broken file: %+v", st.Quarantined)
	}
	states := expectedStates(steps)
	if got := visible(t, re); !maps.Equal(got, states[len(states)-1]) {
		t.Fatalf("reopened image: %d documents, want %d", len(got), len(states[len(states)-1]))
	}
	for i := range spareSlots {
		if _, err := os.Stat(filepath.Join(image, spareName(i))); err == nil {
			t.Fatalf("spare %s left after the writer open", spareName(i))
		}
	}
	meta, err := metadata.Load(vfs.Default, image)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Generation != idx.Status().Generation {
		t.Fatalf("image generation %d, live %d", meta.Generation, idx.Status().Generation)
	}
}

// copyDir copies the regular files of src into a new directory dst, except
// the lock file.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == LockFileName {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		out.Close()
	}
}

// refillDuringRename runs the spares' refill, as its goroutine would,
// just before each rename of a spare into place.
type refillDuringRename struct {
	vfs.FS
	spares func() *spareFS
}

func (r *refillDuringRename) Rename(from, to string) error {
	if s := r.spares(); s != nil && strings.HasPrefix(filepath.Base(from), "spare.") {
		s.mu.Lock()
		start := s.startRefillLocked()
		s.mu.Unlock()
		if start {
			s.refill()
		}
	}
	return r.FS.Rename(from, to)
}

// TestSpareFiles_RefillLeavesTakenSpare: a refill running while a commit
// renames a spare into place does not create that slot's spare anew (which
// would replace the file the commit writes through its held descriptor,
// leaving the renamed name empty): every commit's files hold their bytes
// and the documents are visible, in this index and reopened.
func TestSpareFiles_RefillLeavesTakenSpare(t *testing.T) {
	var idx *Index
	fs := &refillDuringRename{FS: vfs.NewMem(), spares: func() *spareFS {
		if idx == nil {
			return nil
		}
		return idx.spares
	}}
	opts := testOptions()
	opts.SpareFiles = spareSlots
	opts.Hooks.SpareRefill = func(refill func()) { refill() }
	var err error
	if idx, err = Create(fs, testDir, testSchema, opts); err != nil {
		t.Fatal(err)
	}
	steps := []step{{adds: docs(t, 0, 20, 1)}}
	for v := 2; v < 6; v++ {
		steps = append(steps, step{adds: docs(t, v, v+1, v)})
	}
	for _, s := range steps {
		if err := idx.Add(s.adds); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	want := expectedStates(steps)[len(steps)-1]
	if got := visible(t, idx); !maps.Equal(got, want) {
		t.Fatalf("visible documents: %d, want %d", len(got), len(want))
	}
	mustClose(t, idx)
	idx = nil
	re, err := Open(fs.FS, testDir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, re)
	if st := re.Status(); len(st.Quarantined) > 0 {
		t.Fatalf("a committed file is empty or broken: %+v", st.Quarantined)
	}
	if got := visible(t, re); !maps.Equal(got, want) {
		t.Fatalf("reopened: %d documents, want %d", len(got), len(want))
	}
}

// TestSpareFiles_MergeHoldsItsMetadata: a merge publishes through the
// commit path's filesystem too: afterwards the file held open is the
// merge's metadata.json (so the next commit's rename does not free an
// inode inside its critical path), and the merge's metadata.json.tmp was
// a spare.
func TestSpareFiles_MergeHoldsItsMetadata(t *testing.T) {
	mem := vfs.NewMem()
	counter := &createCounter{FS: mem}
	opts := testOptions()
	opts.SpareFiles = spareSlots
	opts.Hooks.SpareRefill = func(refill func()) { refill() }
	idx, err := Create(counter, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	for v := range 3 {
		if err := idx.Add(docs(t, 10*v, 10*v+10, 1)); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
	}
	renamed := counter.renamedSpares
	if _, err := idx.ForceMerge(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if n := len(idx.Metadata().Segments); n != 1 {
		t.Fatalf("%d segments after the merge", n)
	}
	if counter.renamedSpares == renamed {
		t.Fatal("the merge's metadata.json.tmp was created, not renamed from a spare")
	}
	idx.spares.mu.Lock()
	held := idx.spares.mu.held
	idx.spares.mu.Unlock()
	if held == nil {
		t.Fatal("no metadata.json held open after the merge")
	}
	want := readAllFile(t, mem, mem.PathJoin(testDir, metadata.FileName))
	got := make([]byte, len(want)+1)
	n, _ := held.ReadAt(got, 0)
	if string(got[:n]) != string(want) {
		t.Fatalf("the held file is not the merge's metadata.json (%d bytes, want %d)", n, len(want))
	}
}

// readAllFile reads a file of fs whole.
func readAllFile(t *testing.T, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// settledSpares waits until the refill left no slot empty, being filled
// or stale, and returns the slot states.
func settledSpares(t *testing.T, s *spareFS) [spareSlots]spareState {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		states, busy := s.mu.state, s.mu.filling
		s.mu.Unlock()
		if !busy {
			return states
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refill did not settle: %v", states)
		}
		time.Sleep(time.Millisecond)
	}
}

// inode returns the inode number of path.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// TestSpareFiles_RecycleReplacedMetadata (a real disk): the refill links
// an empty slot to the published metadata.json; the commit point leaves
// the replaced generation's inode under that name, and the refill empties
// it into a ready spare (no inode freed, one fewer created). No ready
// spare is ever the published metadata.json, which stays whole, and the
// index reopens with every document, from the live directory and from a
// kill's image.
func TestSpareFiles_RecycleReplacedMetadata(t *testing.T) {
	if !rawfile.Supported(vfs.Default) {
		t.Skip("no raw filesystem here: spares are created only")
	}
	dir := t.TempDir()
	live := filepath.Join(dir, "live")
	idx, err := Create(vfs.Default, live, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	steps := []step{{adds: docs(t, 0, 20, 1)}}
	if err := idx.Add(steps[0].adds); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, idx)
	meta := filepath.Join(live, metadata.FileName)
	recycled := 0
	for v := 2; v < 8; v++ {
		settledSpares(t, idx.spares)
		old := inode(t, meta)
		s := step{adds: docs(t, v, v+1, v)}
		steps = append(steps, s)
		if err := idx.Add(s.adds); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, idx)
		settledSpares(t, idx.spares)
		if inode(t, meta) == old {
			t.Fatal("the commit did not replace metadata.json")
		}
		// The replaced generation's inode is a ready spare now; no ready
		// spare is the published metadata.json.
		for i := range spareSlots {
			idx.spares.mu.Lock()
			ready := idx.spares.mu.state[i] == spareReady
			idx.spares.mu.Unlock()
			if ready && inode(t, filepath.Join(live, spareName(i))) == inode(t, meta) {
				t.Fatalf("commit %d: ready spare %d is the published metadata.json", v, i)
			}
			if ready && inode(t, filepath.Join(live, spareName(i))) == old {
				recycled++
				if st, _ := os.Stat(filepath.Join(live, spareName(i))); st.Size() != 0 {
					t.Fatalf("recycled spare of %d bytes", st.Size())
				}
			}
		}
		if _, err := metadata.Load(vfs.Default, live); err != nil {
			t.Fatalf("commit %d: metadata.json: %v", v, err)
		}
	}
	t.Logf("%d of 6 replaced generations recycled", recycled)
	if recycled < 3 {
		t.Fatalf("%d of 6 replaced metadata.json recycled into a spare", recycled)
	}
	want := expectedStates(steps)[len(steps)-1]
	image := filepath.Join(dir, "image")
	copyDir(t, live, image)
	mustClose(t, idx)
	for _, d := range []string{live, image} {
		re, err := Open(vfs.Default, d, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if got := visible(t, re); !maps.Equal(got, want) {
			t.Fatalf("%s reopened: %d documents, want %d", d, len(got), len(want))
		}
		mustClose(t, re)
	}
}

// TestSpareFiles_RecycleWaitsForDirectorySync: the replaced generation of
// metadata.json is emptied into a spare only after a directory fsync that
// began after the rename over it. Emptied before, a crash of the machine
// that lost the rename's directory entry would leave metadata.json naming
// an empty file: the index lost.
func TestSpareFiles_RecycleWaitsForDirectorySync(t *testing.T) {
	if !rawfile.Supported(vfs.Default) {
		t.Skip("no raw filesystem here: spares are created only")
	}
	dir := t.TempDir()
	meta := filepath.Join(dir, metadata.FileName)
	tmp := filepath.Join(dir, metadata.TempFileName)
	if err := os.WriteFile(meta, []byte("generation one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newSpareFS(vfs.Default, dir, spareSlots, logr.Discard(), func(refill func()) { refill() })
	defer s.close()
	s.startRefill()
	k := s.mu.linkSlot
	if k < 0 || s.mu.state[k] != spareLinked {
		t.Fatalf("no slot linked to metadata.json (slot %d)", k)
	}
	linked := filepath.Join(dir, spareName(k))
	if err := os.WriteFile(tmp, []byte("generation two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory fsync that began before the rename does not cover it.
	s.mu.Lock()
	before := s.mu.renames
	s.mu.Unlock()
	if err := s.Rename(tmp, meta); err != nil {
		t.Fatal(err)
	}
	s.renameDurable(before)
	if got, err := os.ReadFile(linked); err != nil || string(got) != "generation one\n" {
		t.Fatalf("replaced generation before the directory fsync: %q, %v (want it kept)", got, err)
	}
	if st := s.mu.state[k]; st != spareReplaced {
		t.Fatalf("slot %d state %d before the directory fsync, want spareReplaced", k, st)
	}
	d, err := s.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(linked)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 0 || s.mu.state[k] != spareReady {
		t.Fatalf("after the directory fsync: spare of %d bytes, state %d; want an empty ready spare", st.Size(), s.mu.state[k])
	}
	if got, err := os.ReadFile(meta); err != nil || string(got) != "generation two\n" {
		t.Fatalf("metadata.json %q, %v", got, err)
	}
}

// TestSpareFiles_AdoptRetiredMask: a retired deletion mask is renamed into
// the slot the refill keeps empty, and emptied only after a directory
// fsync that began after the last rename over metadata.json: until then a
// crash could bring back a generation that names the mask, so its bytes
// stay. Files other than masks, a second mask with no empty slot, and any
// file after close are left to the caller's removal.
func TestSpareFiles_AdoptRetiredMask(t *testing.T) {
	if !rawfile.Supported(vfs.Default) {
		t.Skip("no raw filesystem here: nothing is adopted")
	}
	dir := t.TempDir()
	meta := filepath.Join(dir, metadata.FileName)
	tmp := filepath.Join(dir, metadata.TempFileName)
	if err := os.WriteFile(meta, []byte("generation one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newSpareFS(vfs.Default, dir, spareSlots, logr.Discard(), func(refill func()) { refill() })
	defer s.close()
	s.startRefill()
	empty := 0
	for i := range s.slots {
		if s.mu.state[i] == spareEmpty {
			empty++
		}
	}
	if empty != 1 || s.ready() != spareSlots-2 {
		t.Fatalf("after the refill: %d empty slots and %d ready, want 1 kept empty and %d ready", empty, s.ready(), spareSlots-2)
	}
	// The generation that retired the mask is renamed in first.
	if err := os.WriteFile(tmp, []byte("generation two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename(tmp, meta); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	before := s.mu.renames - 1 // a directory fsync begun before that rename
	s.mu.Unlock()
	for _, name := range []string{"seg_7.del", "seg_8.cmp", "seg_9.del"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("bytes of "+name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if s.Adopt("seg_8.cmp") {
		t.Fatal("a segment's data file was adopted")
	}
	if !s.Adopt("seg_7.del") {
		t.Fatal("the retired mask was not adopted into the empty slot")
	}
	if s.Adopt("seg_9.del") {
		t.Fatal("a second mask was adopted with no empty slot")
	}
	if _, err := os.Stat(filepath.Join(dir, "seg_7.del")); !os.IsNotExist(err) {
		t.Fatalf("the adopted mask still has its segment name: %v", err)
	}
	k := -1
	for i := range s.slots {
		if s.mu.state[i] == spareReplaced && i != s.mu.linkSlot {
			k = i
		}
	}
	if k < 0 {
		t.Fatal("no slot holds the adopted mask")
	}
	adopted := filepath.Join(dir, spareName(k))
	s.renameDurable(before)
	if got, err := os.ReadFile(adopted); err != nil || string(got) != "bytes of seg_7.del" || s.mu.state[k] != spareReplaced {
		t.Fatalf("before a directory fsync that covers the rename: %q, %v, state %d (want the mask's bytes kept)", got, err, s.mu.state[k])
	}
	d, err := s.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(adopted)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 0 || s.mu.state[k] != spareReady {
		t.Fatalf("after the directory fsync: spare of %d bytes, state %d; want an empty ready spare", st.Size(), s.mu.state[k])
	}
	s.close()
	if s.Adopt("seg_9.del") {
		t.Fatal("a mask was adopted after close")
	}
	if _, err := os.Stat(filepath.Join(dir, "seg_9.del")); err != nil {
		t.Fatalf("a refused mask was touched: %v", err)
	}
}
