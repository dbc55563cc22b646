package index

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/ivf/ivftest"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
	"github.com/summadev/summa/internal/corpus"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

const testDir = "data/articles"

var testSchema = schema.MustNew(
	schema.Field{Name: "id", Type: schema.Text, Primary: true},
	schema.Field{Name: "title", Type: schema.Text},
	schema.Field{Name: "body", Type: schema.Text, Reorder: true},
	schema.Field{Name: "n", Type: schema.U64},
	// emb is a binary IVF field (M08): every segment has an ivf file, and
	// rewrites concatenate or coalesce its runs.
	schema.Field{Name: "emb", Type: schema.DenseVector, Dims: testDims, Binary: true},
)

// testDims is the dimension count of emb.
const testDims = 16

// embJSON is the JSON of p's vector.
func embJSON(p string) string {
	raw, _ := json.Marshal(ivftest.TextVector(p, testDims))
	return string(raw)
}

// paragraphs returns n real paragraphs of Opticks.
func paragraphs(t testing.TB, n int) []string {
	t.Helper()
	ps := corpustest.Paragraphs(t)
	if n > len(ps) {
		t.Fatalf("corpus has %d paragraphs, want %d", len(ps), n)
	}
	return ps[:n]
}

// doc builds document pk with paragraph p as body, version v in field n.
func doc(t testing.TB, pk string, p string, v int) *schema.Document {
	t.Helper()
	raw := fmt.Sprintf(`{"id":%q,"title":%q,"body":%q,"n":%d,"emb":%s}`, pk, corpus.Title(p), p, v, embJSON(p))
	d, err := testSchema.ParseDocument([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func docs(t testing.TB, from, to, version int) []*schema.Document {
	ps := paragraphs(t, to)
	var out []*schema.Document
	for i := from; i < to; i++ {
		out = append(out, doc(t, fmt.Sprintf("p%04d", i), ps[i], version))
	}
	return out
}

func testOptions() Options {
	return Options{IndexingWorkers: 2, CommitFlushTimeout: time.Minute}
}

func createMem(t testing.TB) (*vfs.MemFS, *Index) {
	t.Helper()
	fs := vfs.NewMem()
	idx, err := Create(fs, testDir, testSchema, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	return fs, idx
}

// hangDeadline bounds each wait of the helpers below (a commit's answer,
// its retired files' release, Close's drain of snapshots). It is no speed
// assertion: it only turns a hang (a leaked snapshot, a lost answer) into
// a failure, so that -failfast and make mutate end such a run in seconds
// rather than at the test binary's timeout.
const hangDeadline = 30 * time.Second

// mustCommit commits, fails the test unless the answer arrives within
// hangDeadline, and waits (as long at most) for the retired files'
// release that follows the answer.
func mustCommit(t testing.TB, idx *Index) CommitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangDeadline)
	defer cancel()
	res, err := idx.Commit(ctx)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	// The files the commit retired are deleted after it answered.
	if idx.w != nil {
		waitBounded(t, "the commit's release of its retired files", idx.w.releases.Wait)
	}
	return res
}

// waitBounded runs wait and fails the test if it has not returned within
// hangDeadline (the goroutine running it is left behind).
func waitBounded(t testing.TB, what string, wait func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait()
	}()
	timer := time.NewTimer(hangDeadline)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("%s did not end within %v", what, hangDeadline)
	}
}

// mustClose closes idx and fails the test if Close fails or has not
// drained within hangDeadline (a snapshot never released).
func mustClose(t testing.TB, idx *Index) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangDeadline)
	defer cancel()
	if err := idx.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// visible returns primary key -> stored JSON of every live document, and
// fails on a key visible twice.
func visible(t testing.TB, idx *Index) map[string]string {
	t.Helper()
	snap, err := idx.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	out := make(map[string]string)
	for i, seg := range snap.Segments {
		for d := uint32(0); d < seg.Reader.NumDocs(); d++ {
			if !snap.isLive(i, d) {
				continue
			}
			pk, err := seg.Reader.PrimaryKey(d)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := seg.Reader.StoredDocument(d)
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := out[pk]; dup {
				t.Fatalf("primary key %s visible twice", pk)
			}
			out[pk] = string(stored)
		}
	}
	return out
}

// segFiles returns the IDs of every seg_ file in the index directory.
func segFiles(t testing.TB, fs vfs.FS) map[segid.ID][]string {
	t.Helper()
	names, err := fs.List(testDir)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	out := make(map[segid.ID][]string)
	for _, n := range names {
		if id, suf, ok := segid.ParseFileName(n); ok {
			out[id] = append(out[id], suf)
		}
	}
	return out
}

// checkOwned fails when a seg_ file has no owner.
func checkOwned(t testing.TB, fs vfs.FS, idx *Index) {
	t.Helper()
	// A commit deletes the files it retired after it answered.
	if idx.w != nil {
		idx.w.releases.Wait()
	}
	for id, sufs := range segFiles(t, fs) {
		if !idx.Manager().OwnersOf(id).Owned() {
			t.Fatalf("files %v of segment %s have no owner", sufs, id)
		}
	}
}

func fmtSscan(pk string, i *int) (int, error) { return fmt.Sscanf(pk, "p%d", i) }

// corruptFile flips one byte in the middle of a file of the index.
func corruptFile(t testing.TB, fs vfs.FS, name string) {
	t.Helper()
	flipByteAt(t, fs, name, -1)
}

// partSpan returns the file holding part suffix of segment seg (the
// compound file, or the part's own file in the older layout), and the
// part's offset and size in it.
func partSpan(t testing.TB, seg segment.Info, suffix string) (name string, off, size int64) {
	t.Helper()
	for _, p := range seg.PartSizes() {
		if p.Suffix == suffix {
			if !seg.Compound() {
				return segid.FileName(seg.ID, suffix), 0, p.Size
			}
			return segid.FileName(seg.ID, segment.SuffixCompound), off, p.Size
		}
		off += p.Size
	}
	t.Fatalf("segment %s has no %s part", seg.ID, suffix)
	return "", 0, 0
}

// corruptPart flips a byte in the middle of part suffix of segment seg.
func corruptPart(t testing.TB, fs vfs.FS, seg segment.Info, suffix string) {
	t.Helper()
	name, off, size := partSpan(t, seg, suffix)
	flipByteAt(t, fs, name, off+size/2)
}

// flipByteAt flips the byte at off of file name (its middle byte when off
// is negative).
func flipByteAt(t testing.TB, fs vfs.FS, name string, off int64) {
	t.Helper()
	path := fs.PathJoin(testDir, name)
	f, err := fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if off < 0 {
		off = st.Size() / 2
	}
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// createMemWith creates an index in memory with opts.
func createMemWith(t testing.TB, opts Options) (*vfs.MemFS, *Index) {
	t.Helper()
	fs := vfs.NewMem()
	idx, err := Create(fs, testDir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	return fs, idx
}
