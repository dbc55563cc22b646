package index

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segment"
)

// TestQ06_MergePreflightQuarantinesCorruptBlockMax flips a byte in the
// middle of a source's block-max file and recomputes the file's CRC, so
// that only Validate's rebuild of the block maxima from the postings can
// tell: the merge preflight must still quarantine the source.
func TestQ06_MergePreflightQuarantinesCorruptBlockMax(t *testing.T) {
	fs, idx := threeSegments(t, testOptions())
	defer mustClose(t, idx)
	victimSeg := idx.Metadata().Segments[1]
	victim := victimSeg.ID
	flipAndReframe(t, fs, victimSeg.Info, segment.SuffixBlockMax)
	_, err := idx.ForceMerge(context.Background(), 1)
	if !errors.Is(err, ErrSourceQuarantined) {
		t.Fatalf("merge over a source with corrupt block maxima: %v", err)
	}
	st := idx.Status()
	if len(st.Quarantined) != 1 || st.Quarantined[0].Segment != victim {
		t.Fatalf("quarantine %+v", st.Quarantined)
	}
	if n := idx.QuarantinedCount(); n != 1 || !idx.IsQuarantined(victim) {
		t.Fatalf("QuarantinedCount %d, IsQuarantined(%s) %v: want the status's 1 and true", n, victim, idx.IsQuarantined(victim))
	}
	checkOwned(t, fs, idx)
}

// flipAndReframe flips the middle payload byte of part suffix of segment
// seg and rewrites the part's footer CRC to match.
func flipAndReframe(t *testing.T, fs vfs.FS, seg segment.Info, suffix string) {
	t.Helper()
	name, off, size := partSpan(t, seg, suffix)
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
	file := make([]byte, st.Size())
	if _, err := f.ReadAt(file, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	data := file[off : off+size]
	const header, footer = 24, 20
	data[header+(len(data)-header-footer)/2] ^= 0x21
	crc := crc32.Checksum(data[:len(data)-footer], crc32.MakeTable(crc32.Castagnoli))
	binary.LittleEndian.PutUint32(data[len(data)-footer+8:], crc)
	if _, err := f.WriteAt(file, 0); err != nil {
		t.Fatal(err)
	}
}
