package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	iofs "io/fs"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// File framing: every segment file is
//
//	header  = "SUMMASEG" | kind [4]byte | version uint32 LE | segment id uint64 LE   (24 bytes)
//	payload = file-kind specific bytes
//	footer  = payload length uint64 LE | CRC32-C(header+payload) uint32 LE | "SUMMAEND" (20 bytes)
const (
	headerSize = 24
	footerSize = 20
	// frameSize is the number of bytes the framing adds to a payload.
	frameSize = headerSize + footerSize
	// FormatVersion is the segment format version written in every
	// header, except for the file kinds listed in kindVersions.
	FormatVersion uint32 = 1
	// writeBufferSize is the buffer of a fileWriter.
	writeBufferSize = 256 << 10
)

var (
	headerMagic = [8]byte{'S', 'U', 'M', 'M', 'A', 'S', 'E', 'G'}
	footerMagic = [8]byte{'S', 'U', 'M', 'M', 'A', 'E', 'N', 'D'}
	crcTable    = crc32.MakeTable(crc32.Castagnoli)
)

// ErrMissingFile is wrapped by errors about a segment file that does not exist.
var ErrMissingFile = errors.New("segment file does not exist")

// CorruptionError reports bytes of a segment file that fail validation.
type CorruptionError struct {
	// Segment is the ID of the segment (or deletion mask) holding the file.
	Segment segid.ID
	// File is the file's name, seg_<id>.<suffix>.
	File string
	// Reason says what is wrong.
	Reason string
}

// Error describes the corruption.
func (e *CorruptionError) Error() string {
	return fmt.Sprintf("segment: %s (segment %s) is corrupt: %s", e.File, e.Segment, e.Reason)
}

// corruptf returns a *CorruptionError for file suffix of segment id.
func corruptf(id segid.ID, suffix, format string, args ...any) *CorruptionError {
	return &CorruptionError{Segment: id, File: segid.FileName(id, suffix), Reason: fmt.Sprintf(format, args...)}
}

// isNotExist reports whether err says a file does not exist.
func isNotExist(err error) bool { return errors.Is(err, iofs.ErrNotExist) }

// fileWriter streams one framed file: it writes the header on creation,
// buffers payload writes while updating the CRC, and appends the footer,
// syncs and closes in finish.
type fileWriter struct {
	f      vfs.File
	id     segid.ID
	suffix string
	buf    []byte
	crc    uint32
	n      uint64 // payload bytes written so far
	dirOff uint64 // payload offset of the directory (see beginDirectory)
	err    error
	tmp    [binary.MaxVarintLen64]byte
	// shared is set for a part of a compound file: closing the part
	// leaves the file open for the next part, and buf is the compound
	// writer's buffer, which seal leaves unflushed and the compound
	// writer recycles (see compoundWriter).
	shared bool
}

// writeBuffers recycles fileWriter buffers: a segment has ten parts, and
// allocating and zeroing 256 KiB for each was most of the CPU of writing a
// small segment.
var writeBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, writeBufferSize)
	return &b
}}

// closeFile closes the file and recycles the buffer; the writer is unusable
// afterwards. A part of a compound file leaves both to the compound writer.
func (w *fileWriter) closeFile() error {
	if w.shared {
		w.buf = nil
		return nil
	}
	err := w.f.Close()
	if w.buf != nil {
		b := w.buf[:0]
		writeBuffers.Put(&b)
		w.buf = nil
	}
	return err
}

// createFile creates dir/seg_<id>.<suffix> and writes its header.
func createFile(fs vfs.FS, dir string, id segid.ID, suffix string) (*fileWriter, error) {
	if _, ok := fileKinds[suffix]; !ok {
		return nil, fmt.Errorf("segment: unknown file suffix %q", suffix)
	}
	path := fs.PathJoin(dir, segid.FileName(id, suffix))
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("segment: create %s: %w", path, err)
	}
	return newFileWriter(f, id, suffix, (*writeBuffers.Get().(*[]byte))[:0])
}

// newFileWriter starts a framed file of kind suffix at f's current end,
// buffering in buf (bytes already in it go to the file first), and writes
// its header.
func newFileWriter(f vfs.File, id segid.ID, suffix string, buf []byte) (*fileWriter, error) {
	kind, ok := fileKinds[suffix]
	if !ok {
		return nil, fmt.Errorf("segment: unknown file suffix %q", suffix)
	}
	w := &fileWriter{f: f, id: id, suffix: suffix, buf: buf}
	var h [headerSize]byte
	copy(h[0:8], headerMagic[:])
	copy(h[8:12], kind)
	binary.LittleEndian.PutUint32(h[12:16], kindVersion(suffix))
	binary.LittleEndian.PutUint64(h[16:24], uint64(id))
	w.crc = crc32.Update(0, crcTable, h[:])
	w.copyOut(h[:])
	return w, nil
}

// offset returns the payload offset of the next byte written.
func (w *fileWriter) offset() uint64 { return w.n }

// write appends p to the payload. The bytes are always copied into the
// writer's own buffer (vfs.File.Write may modify the slice it is given).
func (w *fileWriter) write(p []byte) {
	if w.err != nil {
		return
	}
	w.crc = crc32.Update(w.crc, crcTable, p)
	w.n += uint64(len(p))
	w.copyOut(p)
}

// copyOut buffers p without counting it in the CRC or the payload length.
func (w *fileWriter) copyOut(p []byte) {
	for len(p) > 0 && w.err == nil {
		if len(w.buf) == cap(w.buf) {
			w.flush()
		}
		k := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf = w.buf[:len(w.buf)+k]
		p = p[k:]
	}
}

func (w *fileWriter) uvarint(x uint64) {
	k := binary.PutUvarint(w.tmp[:], x)
	w.write(w.tmp[:k])
}

// uvarints writes each of xs as a uvarint, in order.
func (w *fileWriter) uvarints(xs ...uint64) {
	for _, x := range xs {
		w.uvarint(x)
	}
}

func (w *fileWriter) u8(x byte) {
	w.tmp[0] = x
	w.write(w.tmp[:1])
}

func (w *fileWriter) u64(x uint64) {
	binary.LittleEndian.PutUint64(w.tmp[:8], x)
	w.write(w.tmp[:8])
}

// flush hands the buffered bytes to the file.
func (w *fileWriter) flush() {
	if w.err != nil || len(w.buf) == 0 {
		return
	}
	if _, err := w.f.Write(w.buf); err != nil {
		w.err = fmt.Errorf("segment: write %s: %w", segid.FileName(w.id, w.suffix), err)
	}
	w.buf = w.buf[:0]
}

// beginDirectory marks the start of the payload's directory: the bytes
// written from now on until finish.
func (w *fileWriter) beginDirectory() { w.dirOff = w.n }

// entryDirectory writes the directory of a file of per-field entries: the
// document count, the entry count, then the values of each entry, all as
// uvarints.
func (w *fileWriter) entryDirectory(numDocs uint32, entries [][]uint64) {
	w.beginDirectory()
	w.uvarint(uint64(numDocs))
	w.uvarint(uint64(len(entries)))
	for _, e := range entries {
		for _, x := range e {
			w.uvarint(x)
		}
	}
}

// finish writes the directory offset trailer and the footer, syncs and
// closes the file, and returns its FileInfo. On error the partial file is
// left in place for the caller's owner-based cleanup.
func (w *fileWriter) finish() (FileInfo, error) {
	fi, err := w.seal()
	if err != nil {
		w.abort()
		return FileInfo{}, err
	}
	if err := w.syncClose(); err != nil {
		return FileInfo{}, err
	}
	return fi, nil
}

// seal writes the directory offset and the footer and flushes the buffer
// (a compound part leaves it to the compound writer), leaving the file
// open and unsynced.
func (w *fileWriter) seal() (FileInfo, error) {
	w.u64(w.dirOff)
	payloadLen := w.n
	var ft [footerSize]byte
	binary.LittleEndian.PutUint64(ft[0:8], payloadLen)
	binary.LittleEndian.PutUint32(ft[8:12], w.crc)
	copy(ft[12:20], footerMagic[:])
	// The footer is not covered by the CRC.
	w.copyOut(ft[:])
	if !w.shared {
		w.flush()
	}
	if w.err != nil {
		return FileInfo{}, w.err
	}
	return FileInfo{Suffix: w.suffix, Size: int64(headerSize + payloadLen + footerSize)}, nil
}

// syncClose fsyncs and closes a sealed file.
func (w *fileWriter) syncClose() error {
	name := segid.FileName(w.id, w.suffix)
	// Sync before the index may reference this file from metadata.json:
	// without it a power loss after the metadata commit could leave a
	// published segment whose file is empty or torn.
	if err := w.f.Sync(); err != nil {
		w.err = fmt.Errorf("segment: sync %s: %w", name, err)
	}
	if err := w.closeFile(); err != nil && w.err == nil {
		w.err = fmt.Errorf("segment: close %s: %w", name, err)
	}
	return w.err
}

// syncCloseAll fsyncs and closes sealed files. On a real disk (files with
// descriptors) the fsyncs run concurrently, so a segment costs about one
// fsync of latency instead of one per file; elsewhere (the in-memory test
// filesystem) they run in order, which keeps crash tests deterministic.
func syncCloseAll(ws []*fileWriter) error {
	concurrent := len(ws) > 1
	for _, w := range ws {
		concurrent = concurrent && w.f.Fd() != vfs.InvalidFd
	}
	errs := make([]error, len(ws))
	if concurrent {
		var wg sync.WaitGroup
		for i, w := range ws {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = w.syncClose() }()
		}
		wg.Wait()
	} else {
		for i, w := range ws {
			errs[i] = w.syncClose()
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// closeAll closes sealed files without syncing them.
func closeAll(ws []*fileWriter) error {
	var first error
	for _, w := range ws {
		if err := w.closeFile(); err != nil && first == nil {
			first = fmt.Errorf("segment: close %s: %w", segid.FileName(w.id, w.suffix), err)
		}
	}
	return first
}

// abort closes the file after an error, leaving it for cleanup.
func (w *fileWriter) abort() { _ = w.closeFile() }

// checkFrame performs the cheap check of one file's bytes: header magic,
// kind (unless kind is empty), version, segment id, footer magic and payload
// length. It returns the payload.
func checkFrame(data []byte, id segid.ID, suffix, kind string) ([]byte, error) {
	if len(data) < frameSize {
		return nil, corruptf(id, suffix, "file of %d bytes is shorter than its framing", len(data))
	}
	if [8]byte(data[0:8]) != headerMagic {
		return nil, corruptf(id, suffix, "bad header magic")
	}
	if kind != "" && string(data[8:12]) != kind {
		return nil, corruptf(id, suffix, "file kind %q, want %q", data[8:12], kind)
	}
	if v, want := binary.LittleEndian.Uint32(data[12:16]), kindVersion(suffix); v != want && !legacyVersion(suffix, v) {
		return nil, corruptf(id, suffix, "format version %d, want %d", v, want)
	}
	if got := segid.ID(binary.LittleEndian.Uint64(data[16:24])); got != id {
		return nil, corruptf(id, suffix, "header names segment %s", got)
	}
	ft := data[len(data)-footerSize:]
	if [8]byte(ft[12:20]) != footerMagic {
		return nil, corruptf(id, suffix, "bad footer magic")
	}
	if n := binary.LittleEndian.Uint64(ft[0:8]); n != uint64(len(data)-frameSize) {
		return nil, corruptf(id, suffix, "footer payload length %d, file holds %d", n, len(data)-frameSize)
	}
	return data[headerSize : len(data)-footerSize], nil
}

// checkCRC recomputes a framed file's CRC.
func checkCRC(data []byte, id segid.ID, suffix string) error {
	if len(data) < frameSize {
		return corruptf(id, suffix, "file of %d bytes is shorter than its framing", len(data))
	}
	ft := data[len(data)-footerSize:]
	want := binary.LittleEndian.Uint32(ft[8:12])
	if got := crc32.Checksum(data[:len(data)-footerSize], crcTable); got != want {
		return corruptf(id, suffix, "CRC mismatch: computed %08x, footer says %08x", got, want)
	}
	return nil
}

// splitDirectory returns the directory of a payload: the last 8 bytes of
// every payload give the directory's offset; the directory runs to them.
func splitDirectory(payload []byte, id segid.ID, suffix string) ([]byte, error) {
	if len(payload) < 8 {
		return nil, corruptf(id, suffix, "payload of %d bytes has no directory offset", len(payload))
	}
	end := uint64(len(payload) - 8)
	off := binary.LittleEndian.Uint64(payload[end:])
	if off > end {
		return nil, corruptf(id, suffix, "directory offset %d past payload end %d", off, end)
	}
	return payload[off:end], nil
}

// The suffixes of a data segment's files.
const (
	// SuffixTerms names the term dictionary file.
	SuffixTerms = "terms"
	// SuffixPostings names the postings file.
	SuffixPostings = "post"
	// SuffixNorms names the field-length file.
	SuffixNorms = "norms"
	// SuffixStore names the stored-document file.
	SuffixStore = "store"
	// SuffixPrimaryKey names the primary-key column file.
	SuffixPrimaryKey = "pk"
	// SuffixNumbers names the numeric column file.
	SuffixNumbers = "num"
	// SuffixForward names the forward term-list file used by BP reordering.
	SuffixForward = "fwd"
	// SuffixVectors names the dense and sparse vector file.
	SuffixVectors = "vec"
	// SuffixSeismic names the Seismic index of the sparse vector fields.
	SuffixSeismic = "seis"
	// SuffixRowStats names the per-field statistics file.
	SuffixRowStats = "rowstats"
	// SuffixBlockMax names the block-max file used by block-max pruning.
	SuffixBlockMax = "bmp"
	// MaskSuffix names a deletion-mask generation file.
	MaskSuffix = "del"
)

// fileKinds maps each suffix to the kind tag of its header (four bytes).
var fileKinds = map[string]string{
	SuffixTerms:      "term",
	SuffixPostings:   "post",
	SuffixNorms:      "norm",
	SuffixStore:      "stor",
	SuffixPrimaryKey: "pkey",
	SuffixNumbers:    "nums",
	SuffixForward:    "fwdl",
	SuffixVectors:    "vecs",
	SuffixSeismic:    "seis",
	SuffixRowStats:   "rows",
	SuffixBlockMax:   "bmax",
	MaskSuffix:       "dmsk",
	SuffixIVF:        "ivfb",
}

// kindVersions holds the format version of the file kinds whose format
// changed since FormatVersion; the others are at FormatVersion.
var kindVersions = map[string]uint32{
	// 2: docs sections in bit-packed blocks of 128 (codec/docs.go).
	SuffixPostings: 2,
	// 2: record offsets of 4 bytes when they fit, the width in the
	// directory (blockmax.go, bmTableWidth). 3: tokenized fields' mix
	// codes and their reference in the directory (blockmax_mix.go). 4:
	// superblock tables (blockmax_super.go).
	SuffixBlockMax: superVersion,
	// 2: no values of fields that are not stored (store.go,
	// recordKinds).
	SuffixStore: 2,
}

// legacyBlockMaxVersion is the older bmp format still read: record
// offsets always 8 bytes, no width in the directory. Merges and reorders
// rewrite such segments in the current format.
const legacyBlockMaxVersion = 1

// mixBlockMaxVersion is the bmax format whose tokenized entries carry mix
// codes; version 2 files (no mix codes) are still read, and merges and
// reorders rewrite them in the current format, as version 3 files (no
// superblocks).
const mixBlockMaxVersion = 3

// legacyVersion reports whether v is an older format version of a file
// kind that is still read.
func legacyVersion(suffix string, v uint32) bool {
	return suffix == SuffixPostings && v == legacyPostVersion || suffix == SuffixBlockMax && v >= legacyBlockMaxVersion && v < superVersion ||
		suffix == SuffixStore && v == legacyStoreVersion
}

// legacyPostVersion is the older post format still read: docs sections of
// uvarint(delta<<1 | freqIsOne) per document (see doc.go). Merges rewrite
// such segments in the current format.
const legacyPostVersion = 1

// fileVersion returns the format version in a framed file's header.
func fileVersion(data []byte) uint32 { return binary.LittleEndian.Uint32(data[12:16]) }

// kindVersion returns the format version written in a file's header.
func kindVersion(suffix string) uint32 {
	if v, ok := kindVersions[suffix]; ok {
		return v
	}
	return FormatVersion
}

// dataSuffixes lists a data segment's files in the order Write creates them.
var dataSuffixes = []string{
	SuffixPostings, SuffixTerms, SuffixNorms, SuffixStore, SuffixPrimaryKey,
	SuffixNumbers, SuffixForward, SuffixVectors, SuffixSeismic, SuffixRowStats, SuffixBlockMax,
}

// hasSparseFields reports whether s has a sparse vector field (the seis
// file's only content).
func hasSparseFields(s *schema.Schema) bool {
	for i := range s.Fields {
		if s.Fields[i].Type == schema.SparseVector {
			return true
		}
	}
	return false
}

// segmentSuffixes lists the files Write creates for a segment of s: every
// data file, the Seismic file only when s has a sparse vector field (one
// file and one fsync less per segment of every other schema; the reader
// treats an absent seis file as holding no Seismic index), and the ivf
// file only when s has a binary dense field.
func segmentSuffixes(s *schema.Schema) []string {
	out := make([]string, 0, len(dataSuffixes)+1)
	sparse := hasSparseFields(s)
	for _, suffix := range dataSuffixes {
		if suffix != SuffixSeismic || sparse {
			out = append(out, suffix)
		}
	}
	if hasIVFFields(s) {
		out = append(out, SuffixIVF)
	}
	return out
}

// DataSuffixes returns the suffixes of every file of a data segment.
func DataSuffixes() []string { return append([]string(nil), dataSuffixes...) }
