package s3backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/minio/minio-go/v7"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/registry"
)

// ErrDataDirNotEmpty: restore writes only into an empty data directory.
var ErrDataDirNotEmpty = errors.New("s3backup: restore: the data directory is not empty")

// LostFound is the directory mkfs.ext4 makes at the root of a new
// filesystem. A data directory that is the root of a fresh volume (the
// operator's restore Job mounts a new PersistentVolumeClaim there) holds
// it: restore counts such a directory as empty and leaves lost+found
// alone (the server ignores it too: it is not a valid index name).
const LostFound = "lost+found"

// isDir reports whether path is a directory.
func isDir(fs vfs.FS, path string) bool {
	st, err := fs.Stat(path)
	return err == nil && st.IsDir()
}

// RestoreRequest is one restore.
type RestoreRequest struct {
	// FS and DataDir are the data directory to fill: absent or empty
	// (the data-directory lock file and a lost+found directory aside).
	FS      vfs.FS
	DataDir string
	// Index names the restored index (its directory under DataDir).
	Index string
	// SourceIndex names the backed-up index whose backups are read; empty
	// means Index. A backup restores under another name as it is: neither
	// metadata.json nor a segment file records the index's name.
	SourceIndex string
	// ID is the backup to restore; empty means the newest.
	ID string
	// Logger receives a line per step.
	Logger logr.Logger
}

// Restore fills an empty data directory with one backup: it takes the
// data-directory lock (a server or doctor on it makes it fail, touching
// nothing), downloads every file of the manifest into DataDir/<index>,
// checks each against the manifest's size and SHA-256 as it arrives,
// then fully validates every segment and mask against the format (the
// doctor's check), and only then writes metadata.json through the
// metadata commit point (temporary file, fsync, rename, directory
// fsync). Any failure removes the index directory: no index is left
// behind, and a server started on the directory serves nothing of it.
// An interrupted restore (the process killed) leaves at most an index
// directory without metadata.json, which a server does not open.
func (s *Store) Restore(ctx context.Context, req RestoreRequest) (m *Manifest, err error) {
	log := req.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	source, err := req.source()
	if err != nil {
		return nil, err
	}
	release, err := lockEmptyDataDir(req.FS, req.DataDir)
	if err != nil {
		return nil, err
	}
	defer func() { release(err != nil) }()

	cl, err := newClient(s.cfg)
	if err != nil {
		return nil, err
	}
	m, meta, err := s.restorable(ctx, cl, source, req.ID)
	if err != nil {
		return nil, err
	}
	log.Info("Restoring a backup", "index", req.Index, "sourceIndex", source, "backup", m.ID, "generation", m.Generation,
		"files", len(m.Files), "bytes", m.TotalBytes(), "documents", m.Documents)
	if err := s.restoreIndex(ctx, cl, req, source, m, meta); err != nil {
		return nil, err
	}
	log.Info("Restored", "index", req.Index, "backup", m.ID, "generation", m.Generation, "documents", m.Documents)
	return m, nil
}

// source checks the request's names and returns the index whose backups
// are read: SourceIndex, or Index when it is empty.
func (req RestoreRequest) source() (string, error) {
	if !registry.ValidIndexName(req.Index) {
		return "", fmt.Errorf("s3backup: restore: %w: %q", registry.ErrInvalidIndexName, req.Index)
	}
	source := req.SourceIndex
	if source == "" {
		source = req.Index
	}
	if !registry.ValidIndexName(source) {
		return "", fmt.Errorf("s3backup: restore: source index: %w: %q", registry.ErrInvalidIndexName, source)
	}
	if req.ID != "" && !ValidID(req.ID) {
		return "", fmt.Errorf("%w: %q", ErrInvalidID, req.ID)
	}
	return source, nil
}

// lockEmptyDataDir creates dataDir if needed, refuses it unless it is
// empty (its lock file and an empty-volume lost+found aside) and takes
// its lock. release(failed) drops the lock and, after a failure, removes
// what this call created.
func lockEmptyDataDir(fs vfs.FS, dataDir string) (release func(failed bool), err error) {
	createdRoot := false
	if _, statErr := fs.Stat(dataDir); errors.Is(statErr, os.ErrNotExist) {
		createdRoot = true
	}
	if err := fs.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("s3backup: restore: create the data directory: %w", err)
	}
	names, err := fs.List(dataDir)
	if err != nil {
		return nil, fmt.Errorf("s3backup: restore: list the data directory: %w", err)
	}
	lockExisted := slices.Contains(names, registry.LockFileName)
	for _, n := range names {
		if n == registry.LockFileName || n == LostFound && isDir(fs, fs.PathJoin(dataDir, n)) {
			continue
		}
		return nil, fmt.Errorf("%w: %s holds %q (restore fills an empty data directory only; nothing was touched)",
			ErrDataDirNotEmpty, dataDir, n)
	}
	lock, err := registry.LockDataDir(fs, dataDir)
	if err != nil {
		return nil, fmt.Errorf("s3backup: restore: %w", err)
	}
	return func(failed bool) {
		_ = lock.Close()
		if failed && !lockExisted {
			_ = fs.Remove(fs.PathJoin(dataDir, registry.LockFileName))
			if createdRoot {
				_ = fs.Remove(dataDir)
			}
		}
	}, nil
}

// restorable reads the manifest of backup id of source (the latest when
// id is empty) and checks it against the metadata it carries.
func (s *Store) restorable(ctx context.Context, cl *minio.Client, source, id string) (*Manifest, *metadata.Metadata, error) {
	var m *Manifest
	var err error
	if id == "" {
		m, err = s.latest(ctx, cl, source)
	} else {
		m, err = s.get(ctx, cl, source, id)
	}
	if err != nil {
		return nil, nil, err
	}
	meta, err := metadata.Decode(m.Metadata)
	if err != nil {
		return nil, nil, fmt.Errorf("s3backup: restore %s: the manifest's metadata: %w", m.ID, err)
	}
	if meta.Generation != m.Generation {
		return nil, nil, fmt.Errorf("s3backup: restore %s: the manifest says generation %d, its metadata %d", m.ID, m.Generation, meta.Generation)
	}
	if err := s.checkFileList(m, meta); err != nil {
		return nil, nil, err
	}
	return m, meta, nil
}

// restoreIndex downloads every file of m into the index directory,
// validates them as the doctor does and publishes the metadata last. On
// failure the index directory is removed.
func (s *Store) restoreIndex(ctx context.Context, cl *minio.Client, req RestoreRequest, source string, m *Manifest, meta *metadata.Metadata) (err error) {
	fs := req.FS
	dir := fs.PathJoin(req.DataDir, req.Index)
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("s3backup: restore: create %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			if rmErr := fs.RemoveAll(dir); rmErr != nil {
				err = fmt.Errorf("%w (and removing %s failed: %v)", err, dir, rmErr)
			}
			_ = metadata.SyncDir(fs, req.DataDir)
		}
	}()
	if err := forEach(ctx, len(m.Files), func(ctx context.Context, i int) error {
		return downloadFile(ctx, cl, s.cfg.Bucket, fs, dir, m.Files[i], make([]byte, 1<<20))
	}); err != nil {
		return fmt.Errorf("s3backup: restore %s of index %s: %w", m.ID, source, err)
	}
	if err := metadata.SyncDir(fs, dir); err != nil {
		return fmt.Errorf("s3backup: restore: %w", err)
	}
	// The doctor's full check of every segment and mask (checksums,
	// format, document counts), before anything is published.
	if err := index.ValidateCommitted(ctx, fs, dir, meta); err != nil {
		return fmt.Errorf("s3backup: restore %s of index %s: validation failed: %w", m.ID, source, err)
	}
	// The commit point, last (C02).
	if err := metadata.Save(fs, dir, meta); err != nil {
		return fmt.Errorf("s3backup: restore: write metadata.json: %w", err)
	}
	if err := metadata.SyncDir(fs, req.DataDir); err != nil {
		return fmt.Errorf("s3backup: restore: %w", err)
	}
	got, err := metadata.Load(fs, dir)
	if err != nil || got.Generation != meta.Generation {
		return fmt.Errorf("s3backup: restore: the written metadata.json does not load back as generation %d: %v", meta.Generation, err)
	}
	return nil
}

// checkFileList checks that the manifest lists exactly the files the
// metadata names, with their sizes, under the keys of this layout.
func (s *Store) checkFileList(m *Manifest, meta *metadata.Metadata) error {
	want := index.CommittedFiles(meta)
	if len(want) != len(m.Files) {
		return fmt.Errorf("s3backup: restore %s: the manifest lists %d files, its metadata names %d", m.ID, len(m.Files), len(want))
	}
	byName := make(map[string]File, len(m.Files))
	for _, f := range m.Files {
		byName[f.Name] = f
	}
	for _, w := range want {
		f, ok := byName[w.Name]
		switch {
		case !ok:
			return fmt.Errorf("s3backup: restore %s: the manifest does not list %s", m.ID, w.Name)
		case f.Size != w.Size:
			return fmt.Errorf("s3backup: restore %s: %s has %d bytes in the manifest, %d in its metadata", m.ID, w.Name, f.Size, w.Size)
		case len(f.SHA256) != 64 || f.Key != s.layout.fileKey(m.Index, f.Name, f.SHA256):
			return fmt.Errorf("s3backup: restore %s: %s: bad checksum %q or key %q", m.ID, w.Name, f.SHA256, f.Key)
		}
	}
	return nil
}

// downloadFile writes one object as dir/f.Name, checking its size and
// SHA-256 against the manifest, and fsyncs it.
func downloadFile(ctx context.Context, cl *minio.Client, bucket string, fs vfs.FS, dir string, f File, buf []byte) error {
	obj, err := cl.GetObject(ctx, bucket, f.Key, minio.GetObjectOptions{})
	if err != nil {
		return fmt.Errorf("object %s (file %s): %w", f.Key, f.Name, err)
	}
	defer obj.Close()
	out, err := fs.Create(fs.PathJoin(dir, f.Name), vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("create %s: %w", f.Name, err)
	}
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(h, out), io.LimitReader(obj, f.Size+1), buf)
	if err != nil {
		out.Close()
		if isNoSuchKey(err) {
			return fmt.Errorf("object %s (file %s) is missing from the bucket", f.Key, f.Name)
		}
		return fmt.Errorf("download %s (file %s): %w", f.Key, f.Name, err)
	}
	if n != f.Size {
		out.Close()
		return fmt.Errorf("object %s (file %s) has %d bytes, the manifest says %d: damaged", f.Key, f.Name, n, f.Size)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != f.SHA256 {
		out.Close()
		return fmt.Errorf("object %s (file %s) has SHA-256 %s, the manifest says %s: damaged", f.Key, f.Name, sum, f.SHA256)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("fsync %s: %w", f.Name, err)
	}
	return out.Close()
}
