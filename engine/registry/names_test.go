package registry

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
)

// nameLimit is the longest legal index name.
const nameLimit = 253

// fileNameLimit is the longest file name of common Linux file systems.
const fileNameLimit = 255

// dottedName returns a legal name of n characters made of labels of
// label characters (label 1: a name full of dots).
func dottedName(n, label int) string {
	b := []byte(strings.Repeat("q", n))
	for i := label; i < n-1; i += label + 1 {
		b[i] = '.'
	}
	return string(b)
}

// hostileNames are legal names at the limits of DNS-1123.
func hostileNames() []string {
	return []string{
		strings.Repeat("a", nameLimit),
		dottedName(nameLimit, 1),
		dottedName(nameLimit, 63),
		strings.Repeat("b", 223), // the first length whose old trash name was too long
		"c",
	}
}

// openDisk opens a registry over a real data directory, where the file
// system enforces its name limits.
func openDisk(t *testing.T, dir string) *Registry {
	t.Helper()
	r, err := Open(vfs.Default, dir, Options{Index: indexOptions()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fill creates name with committed documents.
func fill(t *testing.T, r *Registry, name string) {
	t.Helper()
	h := mustCreate(t, r, name)
	defer h.Release()
	if err := h.Add(context.Background(), docs(t, 0, 15)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// requireFresh requires name to be a new, empty index.
func requireFresh(t *testing.T, r *Registry, name string) {
	t.Helper()
	created, err := r.Create(context.Background(), name, testSchema)
	if err != nil || !created {
		t.Fatalf("create %.30s... (%d chars) again: created %v, %v", name, len(name), created, err)
	}
	h, err := r.Acquire(name)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if st := h.Status(); st.Documents != 0 || len(st.Segments) != 0 {
		t.Fatalf("re-created %.30s... holds %d documents in %d segments: deleted data came back",
			name, st.Documents, len(st.Segments))
	}
}

// listTrash returns the trash entries of a data directory.
func listTrash(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if isTrash(n) {
			out = append(out, n)
		}
	}
	return out
}

func TestD01_TrashNameFitsEveryLegalName(t *testing.T) {
	for n := 1; n <= nameLimit; n++ {
		for _, name := range []string{strings.Repeat("x", n), dottedName(n, 1)} {
			if !ValidIndexName(name) {
				t.Fatalf("test name %q is not legal", name)
			}
			trash, err := trashName(name)
			if err != nil {
				t.Fatal(err)
			}
			if len(trash) != trashNameLen || len(trash) > fileNameLimit {
				t.Fatalf("trash name of a %d-char name has %d bytes (want %d, at most %d)", n, len(trash), trashNameLen, fileNameLimit)
			}
			if !isTrash(trash) || ValidIndexName(trash) {
				t.Fatalf("trash name %q: isTrash %v, ValidIndexName %v", trash, isTrash(trash), ValidIndexName(trash))
			}
		}
	}
	a, _ := trashName("same")
	b, _ := trashName("same")
	if a == b {
		t.Fatalf("two deletions of one name share the trash name %s", a)
	}
}

func TestD01_DeleteLegalNamesOfEveryLength(t *testing.T) {
	dir := t.TempDir()
	r := openDisk(t, dir)
	defer r.Close(context.Background())
	for _, name := range hostileNames() {
		fill(t, r, name)
		if err := r.Delete(context.Background(), name); err != nil {
			t.Fatalf("delete %.30s... (%d chars): %v", name, len(name), err)
		}
		if err := r.WaitDeleted(context.Background(), name); err != nil {
			t.Fatal(err)
		}
		if exists(vfs.Default, vfs.Default.PathJoin(dir, name)) {
			t.Fatalf("directory of %.30s... (%d chars) survived its deletion", name, len(name))
		}
		requireFresh(t, r, name)
	}
	if left := listTrash(t, vfs.Default, dir); len(left) > 0 {
		t.Fatalf("trash left behind: %v", left)
	}
}

func TestD03_StartupFinishesLongNamesAndOldTrash(t *testing.T) {
	dir := t.TempDir()
	fs := vfs.Default
	r := openDisk(t, dir)
	for _, name := range hostileNames() {
		fill(t, r, name)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, name := range hostileNames() {
		if err := writeMarker(fs, fs.PathJoin(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	// Half-removed trash of this version and of an older one.
	for _, trash := range []string{trashPrefix + "0123456789abcdef-0011223344556677", trashPrefix + "articles-1752570000000000000"} {
		if err := fs.MkdirAll(fs.PathJoin(dir, trash), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeMarker(fs, fs.PathJoin(dir, trash)); err != nil {
			t.Fatal(err)
		}
	}
	r = openDisk(t, dir)
	defer r.Close(context.Background())
	if names := r.Names(); len(names) != 0 {
		t.Fatalf("indexes marked .deleting are served after startup: %d", len(names))
	}
	if left := listTrash(t, fs, dir); len(left) > 0 {
		t.Fatalf("startup left trash: %v", left)
	}
	for _, name := range hostileNames() {
		requireFresh(t, r, name)
	}
}

func TestR01_DoctorFinishesLongNameDeletions(t *testing.T) {
	dir := t.TempDir()
	fs := vfs.Default
	r := openDisk(t, dir)
	for _, name := range hostileNames() {
		fill(t, r, name)
	}
	fill(t, r, "kept")
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, name := range hostileNames() {
		if err := writeMarker(fs, fs.PathJoin(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.MkdirAll(fs.PathJoin(dir, trashPrefix+"kept-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	rep, err := Doctor(context.Background(), fs, dir, Options{Index: indexOptions()})
	if err != nil {
		t.Fatalf("doctor: %v", err)
	}
	if len(rep.Indexes) != 1 || rep.Indexes[0].Name != "kept" {
		t.Fatalf("doctor report: %+v", rep)
	}
	for _, name := range hostileNames() {
		if exists(fs, fs.PathJoin(dir, name)) {
			t.Fatalf("doctor left the marked directory of %.30s... (%d chars)", name, len(name))
		}
	}
	if left := listTrash(t, fs, dir); len(left) > 0 {
		t.Fatalf("doctor left trash: %v", left)
	}
}

// trashRenameFails fails every rename into the trash while fail is set.
type trashRenameFails struct {
	vfs.FS
	fail atomic.Bool
}

// Rename fails with an injected error for trash targets while fail is set.
func (f *trashRenameFails) Rename(oldname, newname string) error {
	if f.fail.Load() && isTrash(f.PathBase(newname)) {
		return errors.New("injected: rename into the trash failed")
	}
	return f.FS.Rename(oldname, newname)
}

func TestD01_FailedRemovalNeverResurrectsDeletedDocuments(t *testing.T) {
	fs := &trashRenameFails{FS: vfs.Default}
	dir := t.TempDir()
	r, err := Open(fs, dir, Options{Index: indexOptions()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	name := strings.Repeat("r", nameLimit)
	fill(t, r, name)
	fs.fail.Store(true)
	if err := r.Delete(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitDeleted(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	if !exists(fs, fs.PathJoin(dir, name, DeletingMarker)) {
		t.Fatal("the injected failure did not leave the marked directory (test is void)")
	}
	// While the removal cannot finish, the name is still being deleted.
	if _, err := r.Create(context.Background(), name, testSchema); !errors.Is(err, ErrIndexDeleting) {
		t.Fatalf("create over an unfinished deletion: %v, want ErrIndexDeleting", err)
	}
	if _, err := r.Acquire(name); !errors.Is(err, ErrIndexNotFound) {
		t.Fatalf("acquire after a refused create: %v, want ErrIndexNotFound", err)
	}
	// Once it can, the create finishes the deletion and starts empty.
	fs.fail.Store(false)
	requireFresh(t, r, name)
	if exists(fs, fs.PathJoin(dir, name, DeletingMarker)) {
		t.Fatal("the re-created index still carries the deletion marker")
	}
}

// indexOptions are the index options of the tests over a real directory.
func indexOptions() index.Options { return index.Options{IndexingWorkers: 2} }
