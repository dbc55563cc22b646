package metadata

import (
	"errors"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// tmpFS is a filesystem whose metadata file (TempFileName) cannot be
// created (failCreate) or has no descriptor and the given Sync outcome.
type tmpFS struct {
	vfs.FS
	failCreate bool
	syncErr    error
}

// noFdFile is a file without a descriptor whose Sync returns err.
type noFdFile struct {
	vfs.File
	err error
}

func (noFdFile) Fd() uintptr { return vfs.InvalidFd }

func (f noFdFile) Sync() error {
	if f.err != nil {
		return f.err
	}
	return f.File.Sync()
}

func (t *tmpFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if t.PathBase(name) != TempFileName {
		return t.FS.Create(name, c)
	}
	if t.failCreate {
		return nil, syscall.ENOSPC
	}
	f, err := t.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	return noFdFile{f, t.syncErr}, nil
}

// TestC02_FailedMetadataWriteAbandonsTheSyncRound: when the metadata file
// cannot be created, the save fails before any rename, on disk (the
// started batch is waited for and its context returned) and in memory,
// and a later save succeeds.
func TestC02_FailedMetadataWriteAbandonsTheSyncRound(t *testing.T) {
	onDiskAndInMemory(t, func(t *testing.T, fs vfs.FS, dir string) {
		writeFiles(t, fs, dir, "seg_1.cmp")
		b, aio := startFsyncs(nil)
		if aio {
			b.wait()
		}
		for range 100 { // more than the asynchronous contexts: one kept per failure would run out
			err := SaveSyncing(&tmpFS{FS: fs, failCreate: true}, dir, generation(1), []string{"seg_1.cmp"}, nil)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("save with the metadata file not created: %v", err)
			}
		}
		if _, err := Load(fs, dir); !errors.Is(err, ErrNotFound) {
			t.Fatalf("after the failed saves: %v, want no generation", err)
		}
		if b, ok := startFsyncs(nil); aio && !ok {
			t.Fatal("the failed saves kept their asynchronous contexts")
		} else if ok {
			b.wait()
		}
		if err := SaveSyncing(fs, dir, generation(1), []string{"seg_1.cmp"}, nil); err != nil {
			t.Fatal(err)
		}
	})
}

// TestC02_MetadataFileWithoutDescriptorIsSyncedBeforeTheRename: on a
// real disk, with the unsynced files and the directory in the
// asynchronous batch but a metadata file without a descriptor, the
// metadata file is synced the ordinary way before the rename: its failure
// commits nothing, its success commits.
func TestC02_MetadataFileWithoutDescriptorIsSyncedBeforeTheRename(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, vfs.Default, dir, "seg_1.cmp")
	err := SaveSyncing(&tmpFS{FS: vfs.Default, syncErr: syscall.EIO}, dir, generation(1), []string{"seg_1.cmp"}, nil)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("save with the metadata file's fsync failing: %v, want EIO", err)
	}
	if _, err := Load(vfs.Default, dir); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after the failed save: %v, want no generation", err)
	}
	if err := SaveSyncing(&tmpFS{FS: vfs.Default}, dir, generation(2), []string{"seg_1.cmp"}, nil); err != nil {
		t.Fatal(err)
	}
	if m, err := Load(vfs.Default, dir); err != nil || m.Generation != 2 {
		t.Fatalf("after the save: %v, %v", m, err)
	}
}

// TestValidatePartSizes: a part of a compound file may be empty, never of
// negative size; likewise a file.
func TestValidatePartSizes(t *testing.T) {
	for _, size := range []int64{0, -1} {
		m := fullSample()
		m.Segments[1].Parts[0].Size = size
		if err := m.Validate(); (err == nil) != (size >= 0) {
			t.Errorf("part of size %d: %v", size, err)
		}
		m = fullSample()
		m.Segments[1].Files[0].Size = size
		if err := m.Validate(); (err == nil) != (size >= 0) {
			t.Errorf("file of size %d: %v", size, err)
		}
	}
}
