package segment

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

// Compound layout: a segment written by this version is one file,
// seg_<id>.cmp, holding every part (post, terms, norms, ...) back to back,
// each a complete framed file (header, payload, CRC, footer) exactly as it
// would be on its own. The segment's Info lists the one physical file in
// Files and the parts, in file order, in Parts; a part's offset is the sum
// of the sizes before it. Creating a file costs more than writing a small
// one on the disks we measured (about 0.9 ms per create on ext4 here), so
// one file instead of ten makes small commits, opening many segments and
// ingest cheaper, and a segment costs one fsync instead of ten. Segments
// written before (Parts empty) keep one file per part and stay readable.
const (
	// SuffixCompound names the compound file holding every part of a segment.
	SuffixCompound = "cmp"
	// compoundReadLimit is the size up to which a compound file is read
	// into memory instead of mapped. Reading copies (and first zeroes)
	// every byte, the row parts included, which Open no longer reads
	// (rows.go): past a few pages a map, whose pages are touched only
	// when used, opens faster (80 segments of about 120 KiB: Open plus a
	// first query 3.3 -> 2.3 ms at 8 x readLimit -> 2 x readLimit, one of
	// 1,000 one-document segments unchanged).
	compoundReadLimit = 2 * readLimit
	// compoundBufferSize is the buffer the parts of a compound file share,
	// written out only when full and at the end: a segment smaller than
	// it is one write, a larger one is written in chunks at multiples of
	// it. The page cache keeps what one large aligned write brings in
	// large folios (on Linux file systems that have them), and mapping a
	// large folio costs one fault and one accounting step where 4 KiB
	// pages cost one per page; small writes at a part's unaligned offset
	// leave small folios behind. Touching every page of a 717 KB segment
	// took 28-36 us written in 4 KiB writes and 8 us written in 256 KiB
	// or larger ones (1 and 2 MiB gave the same), so the buffer is the
	// fileWriter's 256 KiB from the same pool: a segment writer holds one
	// buffer instead of one per part.
	compoundBufferSize = writeBufferSize
)

// parts returns the segment's parts: Parts for a compound segment, Files
// for one written as separate files.
func (i *Info) parts() []FileInfo {
	if len(i.Parts) > 0 {
		return i.Parts
	}
	return i.Files
}

// Compound reports whether the segment is one compound file.
func (i *Info) Compound() bool { return len(i.Parts) > 0 }

// PartSizes returns each part's suffix and size, in file order (the
// separate files of a segment written before the compound layout).
func (i *Info) PartSizes() []FileInfo { return append([]FileInfo(nil), i.parts()...) }

// compoundWriter writes the parts of one segment into a single file: each
// part is a fileWriter sharing the file and the buffer, written and sealed
// one after the other.
type compoundWriter struct {
	f    vfs.File
	path string
	id   segid.ID
	size int64
	// buf holds the bytes not yet written, between parts (a part's
	// fileWriter holds it while the part is written).
	// INVARIANT: the file offset of buf[0] is a multiple of cap(buf).
	buf []byte
}

// createCompound creates dir/seg_<id>.cmp.
func createCompound(fs vfs.FS, dir string, id segid.ID) (*compoundWriter, error) {
	path := fs.PathJoin(dir, segid.FileName(id, SuffixCompound))
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("segment: create %s: %w", path, err)
	}
	return &compoundWriter{f: f, path: path, id: id, buf: (*writeBuffers.Get().(*[]byte))[:0]}, nil
}

// part starts the next part, of kind suffix, at the end of the file; the
// part writes into the shared buffer until sealed.
func (c *compoundWriter) part(suffix string) (*fileWriter, error) {
	w, err := newFileWriter(c.f, c.id, suffix, c.buf)
	if err != nil {
		return nil, err
	}
	w.shared = true
	return w, nil
}

// sealed takes back the shared buffer from sealed part w and records the
// part's size.
func (c *compoundWriter) sealed(w *fileWriter, fi FileInfo) {
	c.buf = w.buf
	c.size += fi.Size
}

// finish syncs (when sync is set) and closes the file, and returns its
// FileInfo. On error the file is left in place for the caller's
// owner-based cleanup.
func (c *compoundWriter) finish(sync bool) (FileInfo, error) {
	if err := c.flush(); err != nil {
		c.abort()
		return FileInfo{}, err
	}
	c.recycle()
	if sync {
		// Sync before the index may reference this file from
		// metadata.json: without it a power loss after the metadata commit
		// could leave a published segment whose file is empty or torn.
		if err := c.f.Sync(); err != nil {
			_ = c.f.Close()
			return FileInfo{}, fmt.Errorf("segment: sync %s: %w", c.path, err)
		}
	}
	if err := c.f.Close(); err != nil {
		return FileInfo{}, fmt.Errorf("segment: close %s: %w", c.path, err)
	}
	return FileInfo{Suffix: SuffixCompound, Size: c.size}, nil
}

// flush writes the buffered bytes (the buffer is empty afterwards, also
// on error).
func (c *compoundWriter) flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.f.Write(c.buf)
	c.buf = c.buf[:0]
	if err != nil {
		return fmt.Errorf("segment: write %s: %w", c.path, err)
	}
	return nil
}

// abort closes the file after an error, leaving it for cleanup.
func (c *compoundWriter) abort() {
	c.recycle()
	_ = c.f.Close()
}

// recycle returns the shared buffer to the pool (once).
func (c *compoundWriter) recycle() {
	if c.buf != nil {
		b := c.buf[:0]
		writeBuffers.Put(&b)
		c.buf = nil
	}
}

// checkCompound checks a compound segment's Info: Files is the one
// compound file, whose size is the sum of the parts', and no part is
// listed twice or has a size below the framing.
func checkCompound(info *Info) error {
	if len(info.Files) != 1 || info.Files[0].Suffix != SuffixCompound {
		return corruptf(info.ID, SuffixCompound, "segment metadata lists parts but files %v, want the one %s file", info.Files, SuffixCompound)
	}
	var sum int64
	for i, p := range info.Parts {
		for _, q := range info.Parts[:i] {
			if q.Suffix == p.Suffix {
				return corruptf(info.ID, p.Suffix, "listed twice in segment metadata")
			}
		}
		if p.Suffix == SuffixCompound || p.Suffix == MaskSuffix {
			return corruptf(info.ID, p.Suffix, "listed as a part of the compound file")
		}
		if p.Size < frameSize || p.Size > info.Files[0].Size {
			return corruptf(info.ID, p.Suffix, "part of %d bytes in a compound file of %d", p.Size, info.Files[0].Size)
		}
		sum += p.Size
	}
	if sum != info.Files[0].Size {
		return corruptf(info.ID, SuffixCompound, "parts add up to %d bytes, metadata records a file of %d", sum, info.Files[0].Size)
	}
	return nil
}

// loadCompound loads the compound file of r's segment and slices it into
// its parts.
func (r *Reader) loadCompound(fs vfs.FS, dir string) error {
	if err := checkCompound(&r.info); err != nil {
		return err
	}
	lf := loadedFile{suffix: SuffixCompound, data: r.container.data} // read by the caller (openWith)
	if lf.data == nil {
		var err error
		if lf, err = loadFileLimit(fs, dir, r.id, SuffixCompound, r.info.Files[0].Size, compoundReadLimit); err != nil {
			return err
		}
	}
	r.container = lf
	off := int64(0)
	for _, p := range r.info.Parts {
		r.files = append(r.files, loadedFile{suffix: p.Suffix, data: lf.data[off : off+p.Size : off+p.Size]})
		off += p.Size
	}
	return nil
}
