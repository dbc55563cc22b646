package segment

import (
	"fmt"
	"io"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

// WriteMask writes deletion-mask generation id, file seg_<id>.del, holding
// the deleted doc ids of a data segment of numDocs documents, and syncs it.
// Its payload is the portable roaring serialization of deleted followed by
// the directory: numDocs, cardinality, bitmap length (uvarints).
func WriteMask(fs vfs.FS, dir string, id segid.ID, deleted *roaring.Bitmap, numDocs uint32) (FileInfo, error) {
	return writeMask(fs, dir, id, deleted, numDocs, true)
}

// WriteMaskUnsynced is WriteMask without the fsync: the file is written
// and closed, and the caller must sync it before any metadata references
// it (metadata.SaveSyncing does, together with the metadata file). A
// commit that writes masks then pays one round of concurrent fsyncs
// instead of one fsync per mask followed by the metadata's.
func WriteMaskUnsynced(fs vfs.FS, dir string, id segid.ID, deleted *roaring.Bitmap, numDocs uint32) (FileInfo, error) {
	return writeMask(fs, dir, id, deleted, numDocs, false)
}

func writeMask(fs vfs.FS, dir string, id segid.ID, deleted *roaring.Bitmap, numDocs uint32, sync bool) (FileInfo, error) {
	if deleted == nil {
		deleted = roaring.New()
	}
	if !deleted.IsEmpty() && deleted.Maximum() >= numDocs {
		return FileInfo{}, fmt.Errorf("segment: mask %s: deleted doc %d out of %d documents", id, deleted.Maximum(), numDocs)
	}
	data, err := deleted.ToBytes()
	if err != nil {
		return FileInfo{}, fmt.Errorf("segment: mask %s: serialize: %w", id, err)
	}
	w, err := createFile(fs, dir, id, MaskSuffix)
	if err != nil {
		return FileInfo{}, err
	}
	w.write(data)
	w.beginDirectory()
	w.uvarint(uint64(numDocs))
	w.uvarint(deleted.GetCardinality())
	w.uvarint(uint64(len(data)))
	if !sync {
		fi, err := w.seal()
		if err == nil {
			if err = w.closeFile(); err != nil {
				err = fmt.Errorf("segment: close mask %s: %w", id, err)
			}
		} else {
			w.abort()
		}
		return fi, err
	}
	fi, err := w.finish()
	if err != nil {
		return FileInfo{}, err
	}
	// No directory sync here: the new entries become durable with the
	// directory sync that metadata.Save performs before the rename that
	// could reference them; an entry lost before that is an orphan anyway.
	return fi, nil
}

// ReadMask reads and fully checks deletion-mask generation id (framing,
// CRC, structure) for a data segment of numDocs documents: every deleted
// doc id must be below numDocs.
func ReadMask(fs vfs.FS, dir string, id segid.ID, numDocs uint32) (*roaring.Bitmap, error) {
	path := fs.PathJoin(dir, segid.FileName(id, MaskSuffix))
	f, err := openFile(fs, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("segment: stat %s: %w", path, err)
	}
	data := make([]byte, st.Size())
	if n, err := f.ReadAt(data, 0); n != len(data) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("segment: read %s: %w", path, err)
	}
	return decodeMask(data, id, numDocs)
}

// decodeMask checks and decodes a mask file's bytes.
func decodeMask(data []byte, id segid.ID, numDocs uint32) (*roaring.Bitmap, error) {
	payload, err := checkFrame(data, id, MaskSuffix, fileKinds[MaskSuffix])
	if err != nil {
		return nil, err
	}
	if err := checkCRC(data, id, MaskSuffix); err != nil {
		return nil, err
	}
	dir, err := splitDirectory(payload, id, MaskSuffix)
	if err != nil {
		return nil, err
	}
	d := decoder{b: dir}
	n, card, size := d.uvarint(), d.uvarint(), d.uvarint()
	d.done()
	if d.err != nil {
		return nil, corruptf(id, MaskSuffix, "directory: %v", d.err)
	}
	if n != uint64(numDocs) {
		return nil, corruptf(id, MaskSuffix, "mask for %d documents, segment has %d", n, numDocs)
	}
	if size != uint64(len(payload)-8-len(dir)) {
		return nil, corruptf(id, MaskSuffix, "bitmap of %d bytes, payload holds %d", size, len(payload)-8-len(dir))
	}
	bm, err := unmarshalBitmap(payload[:size])
	if err != nil {
		return nil, corruptf(id, MaskSuffix, "bitmap: %v", err)
	}
	if bm.GetCardinality() != card {
		return nil, corruptf(id, MaskSuffix, "bitmap holds %d ids, directory says %d", bm.GetCardinality(), card)
	}
	if !bm.IsEmpty() && bm.Maximum() >= numDocs {
		return nil, corruptf(id, MaskSuffix, "deleted doc %d out of %d documents", bm.Maximum(), numDocs)
	}
	return bm, nil
}

// unmarshalBitmap decodes a portable roaring bitmap, turning any panic of
// the library on hostile bytes into an error, and validates it.
func unmarshalBitmap(b []byte) (bm *roaring.Bitmap, err error) {
	defer func() {
		if p := recover(); p != nil {
			bm, err = nil, fmt.Errorf("malformed roaring bitmap: %v", p)
		}
	}()
	bm = roaring.New()
	n, err := bm.ReadFrom(&byteReader{b: b})
	if err != nil {
		return nil, err
	}
	if n != int64(len(b)) {
		return nil, fmt.Errorf("bitmap uses %d of %d bytes", n, len(b))
	}
	if err := bm.Validate(); err != nil {
		return nil, err
	}
	return bm, nil
}

// byteReader is a minimal io.Reader over a byte slice (the roaring library
// copies what it reads from a plain reader, so the bitmap owns its memory).
type byteReader struct {
	b []byte
}

// Read implements io.Reader.
func (r *byteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
