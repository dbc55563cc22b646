package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/internal/corpus/corpustest"
)

var testSchema = schema.MustNew(
	schema.Field{Name: "id", Type: schema.Text, Primary: true},
	schema.Field{Name: "body", Type: schema.Text},
)

func pk(i int) string { return fmt.Sprintf("p%04d", i) }

func docs(t *testing.T, from, to int) []*schema.Document {
	t.Helper()
	ps := corpustest.Paragraphs(t)
	var out []*schema.Document
	for i := from; i < to; i++ {
		d, err := testSchema.ParseDocument([]byte(fmt.Sprintf(`{"id":%q,"body":%q}`, pk(i), ps[i%len(ps)])))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func registryOptions() registry.Options {
	return registry.Options{Index: index.Options{IndexingWorkers: 2, CommitFlushTimeout: time.Minute}}
}

// fixture is a closed data directory: index "articles" with three
// commits (200 documents, then 10 of them deleted: a deletion mask),
// index "doomed" marked .deleting, trash of a removed index, an orphan
// seg_ file and a torn metadata.json.tmp in "articles".
type fixture struct {
	src     string
	live    []string // primary keys committed and live
	deleted []string // primary keys committed, then deleted
	orphan  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{src: filepath.Join(t.TempDir(), "data")}
	r, err := registry.Open(vfs.Default, f.src, registryOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"articles", "doomed"} {
		if _, err := r.Create(ctx, name, testSchema); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(name string, add []*schema.Document, del []string) {
		t.Helper()
		h, err := r.Acquire(name)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Release()
		idx, err := h.Index()
		if err != nil {
			t.Fatal(err)
		}
		if len(add) > 0 {
			if err := idx.Add(add); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range del {
			if ok, err := idx.Delete(k); err != nil || !ok {
				t.Fatalf("delete %s: %v %v", k, ok, err)
			}
		}
		if _, err := h.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	commit("articles", docs(t, 0, 100), nil)
	commit("articles", docs(t, 100, 200), nil)
	for i := 0; i < 200; i++ {
		if i%20 == 3 {
			f.deleted = append(f.deleted, pk(i))
		} else {
			f.live = append(f.live, pk(i))
		}
	}
	commit("articles", nil, f.deleted)
	commit("doomed", docs(t, 0, 10), nil)
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}

	meta, err := metadata.Load(vfs.Default, filepath.Join(f.src, "articles"))
	if err != nil {
		t.Fatal(err)
	}
	masks := 0
	for _, s := range meta.Segments {
		if s.Deletes != nil {
			masks++
		}
	}
	if len(meta.Segments) == 0 || masks == 0 {
		t.Fatalf("fixture: %d segments, %d deletion masks; want both", len(meta.Segments), masks)
	}
	f.orphan = fmt.Sprintf("seg_%x.store", uint64(meta.NextID)+5)
	write(t, filepath.Join(f.src, "articles", f.orphan), "orphan")
	write(t, filepath.Join(f.src, "articles", metadata.TempFileName), "{torn")
	write(t, filepath.Join(f.src, "doomed", registry.DeletingMarker), "")
	write(t, filepath.Join(f.src, ".summa-trash-gone-1", "metadata.json"), "{}")
	return f
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestBackupCopiesCommittedState: the copy holds exactly metadata.json and
// the files it references, byte for byte; the engine opens it and finds
// every committed document and none of the deleted ones; orphans, the
// torn temporary metadata, lock files, the index being deleted and trash
// are not copied; the source is left as it was.
func TestBackupCopiesCommittedState(t *testing.T) {
	f := newFixture(t)
	dst := filepath.Join(t.TempDir(), "backup")
	rep, err := Run(context.Background(), vfs.Default, f.src, dst, Options{})
	if err != nil {
		t.Fatal(err)
	}

	if got := names(t, dst); !slices.Equal(got, []string{"articles"}) {
		t.Fatalf("backup holds %v, want only [articles]", got)
	}
	srcDir, dstDir := filepath.Join(f.src, "articles"), filepath.Join(dst, "articles")
	meta, err := metadata.Load(vfs.Default, srcDir)
	if err != nil {
		t.Fatal(err)
	}
	want := append(referencedFiles(meta), metadata.FileName)
	sort.Strings(want)
	got := names(t, dstDir)
	if !slices.Equal(got, want) {
		t.Fatalf("copied files %v, want %v", got, want)
	}
	var size int64
	for _, name := range want {
		a, err := os.ReadFile(filepath.Join(srcDir, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dstDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from the source", name)
		}
		size += int64(len(a))
	}
	wantRep := Report{Indexes: []IndexReport{{Name: "articles", Files: len(want), Bytes: size, Generation: meta.Generation}}, Bytes: size}
	if !slices.Equal(rep.Indexes, wantRep.Indexes) || rep.Bytes != wantRep.Bytes {
		t.Errorf("report %+v, want %+v", rep, wantRep)
	}

	// The source still has what a backup must not touch.
	for _, p := range []string{filepath.Join(srcDir, f.orphan), filepath.Join(srcDir, metadata.TempFileName),
		filepath.Join(f.src, "doomed", registry.DeletingMarker)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("source lost %s: %v", p, err)
		}
	}

	// The engine opens the copy and finds every committed document.
	idx, err := index.Open(vfs.Default, dstDir, index.Options{IndexingWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	st := idx.Status()
	if st.Generation != meta.Generation || st.Documents != uint64(len(f.live)) || len(st.Quarantined) != 0 {
		t.Fatalf("copy status: generation %d documents %d quarantined %v; want %d, %d, none",
			st.Generation, st.Documents, st.Quarantined, meta.Generation, len(f.live))
	}
	snap, err := idx.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range f.live {
		if ok, err := snap.LookupPrimaryKey(k); err != nil || !ok {
			t.Errorf("copy lacks committed document %s (%v)", k, err)
		}
	}
	for _, k := range f.deleted {
		if ok, err := snap.LookupPrimaryKey(k); err != nil || ok {
			t.Errorf("copy has deleted document %s (%v)", k, err)
		}
	}
	snap.Close()
	if bad, err := idx.Validate(context.Background()); err != nil || len(bad) != 0 {
		t.Errorf("full validation of the copy: %v %v", bad, err)
	}
	if err := idx.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A registry opens the copy as a data directory.
	r, err := registry.Open(vfs.Default, dst, registryOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); !slices.Equal(got, []string{"articles"}) {
		t.Errorf("registry on the copy: %v", got)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestBackupIntoEmptyDirectory: an existing empty destination is used.
func TestBackupIntoEmptyDirectory(t *testing.T) {
	f := newFixture(t)
	dst := t.TempDir()
	rep, err := Run(context.Background(), vfs.Default, f.src, dst, Options{})
	if err != nil || len(rep.Indexes) != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
}

// snapshot returns every path under dir with its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		data := "dir"
		if !info.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			data = fmt.Sprintf("%d %v %s", info.Size(), info.ModTime().UnixNano(), b)
		}
		out[p] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if len(before) != len(after) {
		t.Errorf("%s changed: %d entries before, %d after", what, len(before), len(after))
	}
	for p, b := range before {
		if after[p] != b {
			t.Errorf("%s changed: %s", what, p)
		}
	}
}

// TestBackupRefusesNonEmptyDestination: a destination that holds anything
// (an earlier backup) or is a file is refused; neither it nor the source
// is touched.
func TestBackupRefusesNonEmptyDestination(t *testing.T) {
	f := newFixture(t)
	earlier := filepath.Join(t.TempDir(), "earlier")
	if _, err := Run(context.Background(), vfs.Default, f.src, earlier, Options{}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	write(t, file, "not a directory")
	for _, dst := range []string{earlier, file} {
		srcBefore, dstBefore := snapshot(t, f.src), snapshot(t, dst)
		_, err := Run(context.Background(), vfs.Default, f.src, dst, Options{})
		if !errors.Is(err, ErrDestinationNotEmpty) {
			t.Fatalf("backup into %s: %v, want ErrDestinationNotEmpty", dst, err)
		}
		sameTree(t, "source", srcBefore, snapshot(t, f.src))
		sameTree(t, "destination", dstBefore, snapshot(t, dst))
	}
	if _, err := Run(context.Background(), vfs.Default, f.src, filepath.Join(f.src, "backup"), Options{}); err == nil {
		t.Fatal("a destination inside the data directory was accepted")
	}
}

// TestBackupRefusesLockedSource: while a registry (a server) holds the
// data directory, or a writer holds one index, the backup fails with the
// lock error and creates no destination.
func TestBackupRefusesLockedSource(t *testing.T) {
	f := newFixture(t)
	dst := filepath.Join(t.TempDir(), "backup")
	r, err := registry.Open(vfs.Default, f.src, registryOptions())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), vfs.Default, f.src, dst, Options{})
	if !errors.Is(err, registry.ErrDataDirLocked) {
		t.Fatalf("backup beside a registry: %v, want ErrDataDirLocked", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("the refused backup created %s", dst)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	lock, err := index.LockDir(vfs.Default, filepath.Join(f.src, "articles"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), vfs.Default, f.src, dst, Options{})
	lock.Close()
	if !errors.Is(err, index.ErrLocked) {
		t.Fatalf("backup beside an index writer: %v, want index.ErrLocked", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("the refused backup created %s", dst)
	}
}

// TestBackupFailureRemovesPartialCopy: when a referenced file cannot be
// copied, the backup fails and removes what it wrote, so that it can be
// retried; an existing empty destination is left empty.
func TestBackupFailureRemovesPartialCopy(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.src, "articles")
	meta, err := metadata.Load(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	files := referencedFiles(meta)
	if err := os.Remove(filepath.Join(dir, files[len(files)-1])); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "backup")
	if _, err := Run(context.Background(), vfs.Default, f.src, dst, Options{}); err == nil {
		t.Fatal("backup of an index with a missing file succeeded")
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("the failed backup left %s", dst)
	}
	empty := t.TempDir()
	if _, err := Run(context.Background(), vfs.Default, f.src, empty, Options{}); err == nil {
		t.Fatal("backup of an index with a missing file succeeded")
	}
	if got := names(t, empty); len(got) != 0 {
		t.Fatalf("the failed backup left %v in %s", got, empty)
	}
}
