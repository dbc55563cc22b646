// Package backup copies the committed state of a data directory offline,
// into a new directory that a server (or a doctor) can open as it is.
//
// Run holds the locks a server holds (the data-directory lock, then every
// index's single-writer lock) for the whole copy, so it fails fast beside
// a running server or doctor and nothing changes under it. Of every index
// not being deleted it copies metadata.json and exactly the seg_ files that
// metadata.json references (segment files and current deletion masks): no
// orphan, no metadata.json.tmp, no lock file. Each file is checksummed
// while it is copied, fsynced, and read back against its size and
// checksum; metadata.json is written last in each index (as a temporary
// file, fsynced, renamed, directory fsynced), so a copy cut short is never
// an index with missing segments: an index directory of the copy either
// has a complete metadata.json with every file it names, or no
// metadata.json at all.
package backup

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-logr/logr"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/metadata"
	"github.com/summadev/summa/engine/registry"
	"github.com/summadev/summa/engine/segid"
	"github.com/summadev/summa/engine/segment"
)

// ErrDestinationNotEmpty: the destination exists and is not an empty
// directory. A backup never writes into an earlier backup.
var ErrDestinationNotEmpty = errors.New("backup: destination is not an empty directory")

// Options configure a backup.
type Options struct {
	// Logger receives one line per copied or skipped index.
	Logger logr.Logger
}

// Report is what a backup copied.
type Report struct {
	// Indexes has one entry per copied index, sorted by name.
	Indexes []IndexReport
	// Bytes is the total size of the copied files.
	Bytes int64
}

// IndexReport is one copied index.
type IndexReport struct {
	// Name is the index name.
	Name string
	// Files counts the copied files, metadata.json included.
	Files int
	// Bytes is the size of the copied files.
	Bytes int64
	// Generation is the copied metadata generation.
	Generation uint64
}

// CheckDestination returns ErrDestinationNotEmpty (wrapped) when dst
// exists and is not an empty directory. It changes nothing.
func CheckDestination(fs vfs.FS, dst string) error {
	st, err := fs.Stat(dst)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("backup: destination %s: %w", dst, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: %s is a file", ErrDestinationNotEmpty, dst)
	}
	names, err := fs.List(dst)
	if err != nil {
		return fmt.Errorf("backup: list destination %s: %w", dst, err)
	}
	if len(names) > 0 {
		sort.Strings(names)
		return fmt.Errorf("%w: %s holds %d entries (first %q); refusing to overwrite an earlier backup",
			ErrDestinationNotEmpty, dst, len(names), names[0])
	}
	return nil
}

// source is one index to copy, locked.
type source struct {
	name, dir string
	meta      *metadata.Metadata
}

// Run copies the data directory src into dst, which must not exist or be
// empty. It fails with registry.ErrDataDirLocked or index.ErrLocked
// (wrapped) while another process uses src, and with
// ErrDestinationNotEmpty when dst holds anything; in both cases nothing
// was written. When the copy fails later, Run removes what it created in
// dst, so that the backup can be retried.
func Run(ctx context.Context, fs vfs.FS, src, dst string, opts Options) (rep Report, err error) {
	log := opts.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	rep = Report{Indexes: []IndexReport{}}
	if err := checkDisjoint(src, dst); err != nil {
		return rep, err
	}
	if err := CheckDestination(fs, dst); err != nil {
		return rep, err
	}
	if st, err := fs.Stat(src); err != nil {
		return rep, fmt.Errorf("backup: source data directory: %w", err)
	} else if !st.IsDir() {
		return rep, fmt.Errorf("backup: source data directory %s is not a directory", src)
	}

	// Lock as the server does, data directory first, and hold every lock
	// until the copy is complete.
	var locks []io.Closer
	defer func() {
		for i := len(locks) - 1; i >= 0; i-- {
			locks[i].Close()
		}
	}()
	lock, err := registry.LockDataDir(fs, src)
	if err != nil {
		return rep, fmt.Errorf("backup: %w", err)
	}
	locks = append(locks, lock)
	sources, err := lockIndexes(fs, src, log, &locks)
	if err != nil {
		return rep, err
	}

	c := &copier{fs: fs, dst: dst}
	defer func() {
		if err != nil {
			if cerr := c.cleanup(); cerr != nil {
				err = errors.Join(err, cerr)
			}
			rep = Report{Indexes: []IndexReport{}}
		}
	}()
	if err := c.createRoot(); err != nil {
		return rep, err
	}
	for _, s := range sources {
		ir, err := c.copyIndex(ctx, s)
		if err != nil {
			return rep, fmt.Errorf("backup: index %s: %w", s.name, err)
		}
		rep.Indexes = append(rep.Indexes, ir)
		rep.Bytes += ir.Bytes
		log.Info("Index backed up", "index", ir.Name, "generation", ir.Generation, "files", ir.Files, "bytes", ir.Bytes)
	}
	return rep, nil
}

// checkDisjoint refuses a destination that is the source or inside it.
func checkDisjoint(src, dst string) error {
	a, err1 := filepath.Abs(src)
	b, err2 := filepath.Abs(dst)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if b == a || strings.HasPrefix(b, a+string(filepath.Separator)) {
		return fmt.Errorf("backup: destination %s must not be the data directory %s or inside it", dst, src)
	}
	return nil
}

// lockIndexes takes the single-writer lock of every index directory of src
// that is not being deleted, appending each to locks, and loads its
// metadata. Trash of removed indexes and other names are not indexes.
func lockIndexes(fs vfs.FS, src string, log logr.Logger, locks *[]io.Closer) ([]source, error) {
	names, err := fs.List(src)
	if err != nil {
		return nil, fmt.Errorf("backup: list %s: %w", src, err)
	}
	sort.Strings(names)
	var out []source
	for _, name := range names {
		if !registry.ValidIndexName(name) {
			continue // the lock file, trash of removed indexes (D03)
		}
		dir := fs.PathJoin(src, name)
		if st, err := fs.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		if _, err := fs.Stat(fs.PathJoin(dir, registry.DeletingMarker)); err == nil {
			log.Info("Skipping an index being deleted", "index", name)
			continue
		}
		lock, err := index.LockDir(fs, dir)
		if err != nil {
			return nil, fmt.Errorf("backup: index %s: %w", name, err)
		}
		*locks = append(*locks, lock)
		meta, err := metadata.Load(fs, dir)
		if errors.Is(err, metadata.ErrNotFound) {
			log.Info("Skipping a directory without metadata.json", "dir", dir)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("backup: index %s: %w", name, err)
		}
		out = append(out, source{name: name, dir: dir, meta: meta})
	}
	return out, nil
}

// copier writes the copy and remembers what it created.
type copier struct {
	fs  vfs.FS
	dst string
	// createdRoot is set when dst did not exist.
	createdRoot bool
	// created lists the index directories made in dst.
	created []string
	// buf is the copy buffer.
	buf []byte
}

// createRoot creates dst if missing and makes its entry durable.
func (c *copier) createRoot() error {
	if _, err := c.fs.Stat(c.dst); errors.Is(err, os.ErrNotExist) {
		if err := c.fs.MkdirAll(c.dst, 0o755); err != nil {
			return fmt.Errorf("backup: create %s: %w", c.dst, err)
		}
		c.createdRoot = true
		if err := metadata.SyncDir(c.fs, c.fs.PathDir(c.dst)); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
	}
	return nil
}

// cleanup removes what the copy created.
func (c *copier) cleanup() error {
	if c.createdRoot {
		if err := c.fs.RemoveAll(c.dst); err != nil {
			return fmt.Errorf("backup: remove the partial copy %s: %w", c.dst, err)
		}
		return nil
	}
	var errs []error
	for _, dir := range c.created {
		if err := c.fs.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("backup: remove the partial copy %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// copyIndex copies one index: every referenced seg_ file, then
// metadata.json through a temporary file and a rename.
func (c *copier) copyIndex(ctx context.Context, s source) (IndexReport, error) {
	ir := IndexReport{Name: s.name, Generation: s.meta.Generation}
	dir := c.fs.PathJoin(c.dst, s.name)
	if err := c.fs.MkdirAll(dir, 0o755); err != nil {
		return ir, fmt.Errorf("create %s: %w", dir, err)
	}
	c.created = append(c.created, dir)
	if err := metadata.SyncDir(c.fs, c.dst); err != nil {
		return ir, err
	}
	for _, name := range referencedFiles(s.meta) {
		if err := ctx.Err(); err != nil {
			return ir, err
		}
		n, err := c.copyFile(c.fs.PathJoin(s.dir, name), c.fs.PathJoin(dir, name))
		if err != nil {
			return ir, err
		}
		ir.Files++
		ir.Bytes += n
	}
	// Every referenced file's entry is durable before metadata.json names
	// them (the order metadata.Save keeps).
	if err := metadata.SyncDir(c.fs, dir); err != nil {
		return ir, err
	}
	tmp := c.fs.PathJoin(dir, metadata.TempFileName)
	n, err := c.copyFile(c.fs.PathJoin(s.dir, metadata.FileName), tmp)
	if err != nil {
		return ir, err
	}
	if err := c.fs.Rename(tmp, c.fs.PathJoin(dir, metadata.FileName)); err != nil {
		return ir, fmt.Errorf("rename %s: %w", tmp, err)
	}
	if err := metadata.SyncDir(c.fs, dir); err != nil {
		return ir, err
	}
	ir.Files++
	ir.Bytes += n
	// The copy must load as the same generation.
	got, err := metadata.Load(c.fs, dir)
	if err != nil {
		return ir, fmt.Errorf("verify the copied metadata: %w", err)
	}
	if got.Generation != s.meta.Generation || !slices.Equal(got.IDs(), s.meta.IDs()) {
		return ir, fmt.Errorf("verify the copied metadata: generation %d with IDs %v, want %d with %v",
			got.Generation, got.IDs(), s.meta.Generation, s.meta.IDs())
	}
	return ir, nil
}

// referencedFiles returns the names of every seg_ file meta references:
// each live segment's files and its current deletion mask.
func referencedFiles(meta *metadata.Metadata) []string {
	var out []string
	for _, s := range meta.Segments {
		for _, f := range s.Files {
			out = append(out, segid.FileName(s.ID, f.Suffix))
		}
		if s.Deletes != nil {
			out = append(out, segid.FileName(s.Deletes.ID, segment.MaskSuffix))
		}
	}
	return out
}

// castagnoli is the checksum of copied bytes.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// copyFile copies src to the new file dst, checksumming the bytes read,
// fsyncs dst, and reads it back to verify its size and checksum. It
// returns the size.
func (c *copier) copyFile(src, dst string) (int64, error) {
	in, err := c.fs.Open(src)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", src, err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", src, err)
	}
	out, err := c.fs.Create(dst, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", dst, err)
	}
	sum, n, err := c.copyData(out, in)
	if err != nil {
		out.Close()
		return 0, fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	if n != st.Size() {
		out.Close()
		return 0, fmt.Errorf("copy %s: read %d bytes, the file has %d", src, n, st.Size())
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return 0, fmt.Errorf("fsync %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		return 0, fmt.Errorf("close %s: %w", dst, err)
	}
	back, err := c.fs.Open(dst)
	if err != nil {
		return 0, fmt.Errorf("verify %s: %w", dst, err)
	}
	defer back.Close()
	bsum, bn, err := c.copyData(nil, back)
	if err != nil {
		return 0, fmt.Errorf("verify %s: %w", dst, err)
	}
	if bn != n || bsum != sum {
		return 0, fmt.Errorf("verify %s: %d bytes with checksum %08x, %s has %d bytes with checksum %08x",
			dst, bn, bsum, src, n, sum)
	}
	return n, nil
}

// copyData reads r to the end, checksumming it, and writes it to w unless
// w is nil.
func (c *copier) copyData(w io.Writer, r io.Reader) (sum uint32, n int64, err error) {
	if c.buf == nil {
		c.buf = make([]byte, 1<<20)
	}
	for {
		k, rerr := r.Read(c.buf)
		if k > 0 {
			// Checksum first: a vfs.File's Write may modify its argument.
			sum = crc32.Update(sum, castagnoli, c.buf[:k])
			n += int64(k)
			if w != nil {
				if _, err := w.Write(c.buf[:k]); err != nil {
					return sum, n, err
				}
			}
		}
		if rerr == io.EOF {
			return sum, n, nil
		}
		if rerr != nil {
			return sum, n, rerr
		}
	}
}
