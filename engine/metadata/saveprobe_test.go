package metadata

import (
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// badFd is a descriptor number that is never open: an fsync of it, direct
// or asynchronous, fails with EBADF.
const badFd = uintptr(1<<31 - 1)

// probeFS is a filesystem whose files named in bad fail their fsync (a
// descriptor the kernel refuses, and Sync failing with EIO), and which
// calls onRename before each rename.
type probeFS struct {
	vfs.FS
	bad      map[string]bool
	onRename func(from, to string)
}

// failingFile is a file whose fsync fails, by either route.
type failingFile struct{ vfs.File }

func (failingFile) Fd() uintptr { return badFd }
func (failingFile) Sync() error { return syscall.EIO }
func (p *probeFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err == nil && p.bad[p.PathBase(name)] {
		return failingFile{f}, nil
	}
	return f, err
}

func (p *probeFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := p.FS.Open(name, opts...)
	return p.wrap(name, f, err)
}

func (p *probeFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, c)
	return p.wrap(name, f, err)
}

func (p *probeFS) OpenDir(name string) (vfs.File, error) {
	f, err := p.FS.OpenDir(name)
	return p.wrap(name, f, err)
}

func (p *probeFS) Rename(from, to string) error {
	if p.onRename != nil {
		p.onRename(from, to)
	}
	return p.FS.Rename(from, to)
}

// writeFiles writes each named file of dir with its name as content,
// unsynced.
func writeFiles(t *testing.T, fs vfs.FS, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		f, err := fs.Create(fs.PathJoin(dir, name), vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(f, "content of "+name); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// generation returns a valid generation numbered g.
func generation(g uint64) *Metadata {
	m := sample()
	m.Generation = g
	return m
}

// TestC02_SaveSyncsEveryFileBeforeTheRename: at the moment of the rename,
// a crash image that keeps only synced data holds the whole metadata
// file, every unsynced file the save was given and every file whose sync
// was started, each with all its bytes and its directory entry; after the
// save, the image holds the new generation (the directory synced after
// the rename).
func TestC02_SaveSyncsEveryFileBeforeTheRename(t *testing.T) {
	mem := vfs.NewCrashableMem()
	const dir = "/idx"
	if err := mem.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(mem, "/"); err != nil {
		t.Fatal(err)
	}
	unsynced := []string{"seg_1.cmp", "seg_2.cmp", "seg_3.msk"}
	startedNames := []string{"seg_4.cmp", "seg_5.msk"}
	writeFiles(t, mem, dir, append(append([]string{}, unsynced...), startedNames...)...)
	renames := 0
	p := &probeFS{FS: mem, onRename: func(from, to string) {
		renames++
		image := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
		for _, name := range append(append([]string{}, unsynced...), startedNames...) {
			checkContent(t, image, dir, name, "content of "+name)
		}
		data, err := readFile(image, mem.PathJoin(dir, TempFileName))
		if err != nil {
			t.Fatalf("metadata file at the rename: %v", err)
		}
		if m, err := Decode(data); err != nil || m.Generation != 2 {
			t.Fatalf("metadata file at the rename not whole: %v (%q)", err, data)
		}
	}}
	var started []*FileSync
	for _, name := range startedNames {
		started = append(started, StartFileSync(p, dir, name))
	}
	if err := SaveSyncing(p, dir, generation(2), unsynced, started); err != nil {
		t.Fatal(err)
	}
	if renames != 1 {
		t.Fatalf("%d renames, want 1", renames)
	}
	image := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	if m, err := Load(image, dir); err != nil || m.Generation != 2 {
		t.Fatalf("after the save, a crash image reads generation %v, %v; want 2", m, err)
	}
	if _, err := image.Stat(image.PathJoin(dir, TempFileName)); err == nil {
		t.Fatal("the metadata file's temporary name is still there after the save")
	}
}

// TestC02_NoRenameUnlessEveryFsyncSucceeds: on a real disk (the
// asynchronous batch on Linux) and in memory, a save in which any one
// fsync fails (an unsynced file, the directory, the metadata file)
// renames nothing, reports which one failed (a *SyncError for an
// unsynced file), leaves the previous generation in place and removes
// its temporary file.
func TestC02_NoRenameUnlessEveryFsyncSucceeds(t *testing.T) {
	unsynced := []string{"seg_1.cmp", "seg_2.cmp", "seg_3.msk"}
	for _, fsys := range []struct {
		name string
		fs   vfs.FS
		dir  func(t *testing.T) string
	}{
		{"disk", vfs.Default, func(t *testing.T) string { return t.TempDir() }},
		{"mem", vfs.NewMem(), func(t *testing.T) string { return "/idx-" + strings.ReplaceAll(t.Name(), "/", "-") }},
	} {
		for _, bad := range append(append([]string{}, unsynced...), TempFileName, "dir") {
			t.Run(fsys.name+"/"+bad, func(t *testing.T) {
				fs, dir := fsys.fs, fsys.dir(t)
				if err := fs.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := Save(fs, dir, generation(1)); err != nil {
					t.Fatal(err)
				}
				writeFiles(t, fs, dir, unsynced...)
				name := bad
				if bad == "dir" {
					name = fs.PathBase(dir)
				}
				p := &probeFS{FS: fs, bad: map[string]bool{name: true}, onRename: func(from, to string) {
					t.Errorf("renamed %s over %s although the fsync of %s failed", from, to, bad)
				}}
				err := SaveSyncing(p, dir, generation(2), unsynced, nil)
				if err == nil {
					t.Fatal("the save succeeded")
				}
				var se *SyncError
				if isFile := bad != TempFileName && bad != "dir"; isFile != errors.As(err, &se) || (isFile && se.Name != bad) {
					t.Fatalf("error %v: want a *SyncError of %s only for an unsynced file", err, bad)
				}
				if !strings.Contains(err.Error(), map[bool]string{true: "directory", false: bad}[bad == "dir"]) {
					t.Fatalf("error %v does not name %s", err, bad)
				}
				if m, err := Load(fs, dir); err != nil || m.Generation != 1 {
					t.Fatalf("after the failed save: generation %v, %v; want 1", m, err)
				}
				if _, err := fs.Stat(fs.PathJoin(dir, TempFileName)); err == nil {
					t.Fatal("the temporary metadata file was left behind")
				}
			})
		}
	}
}

// checkContent fails t unless dir/name of fs holds want.
func checkContent(t *testing.T, fs vfs.FS, dir, name, want string) {
	t.Helper()
	got, err := readFile(fs, fs.PathJoin(dir, name))
	if err != nil || string(got) != want {
		t.Fatalf("%s in the crash image: %q, %v; want %q", name, got, err, want)
	}
}

// readFile reads a whole file of fs.
func readFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// renamedDirFS fails every fsync of a directory made after the first
// rename (the descriptor stays valid: only Sync fails).
type renamedDirFS struct {
	vfs.FS
	renamed bool
}

// syncFailsAfterRename is a directory whose Sync fails once fs renamed.
type syncFailsAfterRename struct {
	vfs.File
	fs *renamedDirFS
}

func (d syncFailsAfterRename) Sync() error {
	if d.fs.renamed {
		return syscall.EIO
	}
	return d.File.Sync()
}

func (r *renamedDirFS) OpenDir(name string) (vfs.File, error) {
	f, err := r.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return syncFailsAfterRename{f, r}, nil
}

func (r *renamedDirFS) Rename(from, to string) error {
	r.renamed = true
	return r.FS.Rename(from, to)
}

// TestC04_DirectoryFsyncAfterTheRenameIsDegradedDurability: on a real
// disk (the directory's descriptor kept open from before the rename) and
// in memory (opened anew), a failed directory fsync after the rename
// reports a *DurabilityError: the generation is committed and read back.
func TestC04_DirectoryFsyncAfterTheRenameIsDegradedDurability(t *testing.T) {
	onDiskAndInMemory(t, func(t *testing.T, fs vfs.FS, dir string) {
		writeFiles(t, fs, dir, "seg_1.cmp")
		err := SaveSyncing(&renamedDirFS{FS: fs}, dir, generation(3), []string{"seg_1.cmp"}, nil)
		if !IsDurabilityError(err) || !errors.Is(err, syscall.EIO) {
			t.Fatalf("save with the directory fsync failing after the rename: %v, want a *DurabilityError", err)
		}
		if m, err := Load(fs, dir); err != nil || m.Generation != 3 {
			t.Fatalf("after the degraded save: generation %v, %v; want 3", m, err)
		}
	})
}
