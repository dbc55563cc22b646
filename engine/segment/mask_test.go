package segment

import (
	"errors"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

func TestMaskRoundTrip(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("idx", 0o755); err != nil {
		t.Fatal(err)
	}
	all := roaring.New()
	all.AddRange(0, 5000)
	sparse := roaring.BitmapOf(0, 17, 4095, 4096, 4999)
	cases := map[string]*roaring.Bitmap{"nil": nil, "empty": roaring.New(), "sparse": sparse, "all": all}
	id := segid.ID(100)
	for name, bm := range cases {
		id++
		fi, err := WriteMask(fs, "idx", id, bm, 5000)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fi.Suffix != MaskSuffix || fi.Size < frameSize {
			t.Fatalf("%s: FileInfo %+v", name, fi)
		}
		got, err := ReadMask(fs, "idx", id, 5000)
		if err != nil {
			t.Fatalf("%s: ReadMask: %v", name, err)
		}
		want := bm
		if want == nil {
			want = roaring.New()
		}
		if !got.Equals(want) {
			t.Fatalf("%s: read %v, want %v", name, got, want)
		}
		if _, err := ReadMask(fs, "idx", id, 4999); err == nil {
			t.Fatalf("%s: ReadMask with another doc count succeeded", name)
		}
	}
}

func TestMaskRejectsBadBits(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("idx", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteMask(fs, "idx", 1, roaring.BitmapOf(3, 10), 10); err == nil {
		t.Fatal("WriteMask accepted doc 10 of 10")
	}
	// Craft a well-framed mask claiming 10 documents that deletes doc 10.
	data, err := roaring.BitmapOf(3, 10).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	w, err := createFile(fs, "idx", 2, MaskSuffix)
	if err != nil {
		t.Fatal(err)
	}
	w.write(data)
	w.beginDirectory()
	w.uvarint(10)
	w.uvarint(2)
	w.uvarint(uint64(len(data)))
	if _, err := w.finish(); err != nil {
		t.Fatal(err)
	}
	_, err = ReadMask(fs, "idx", 2, 10)
	wantCorruption(t, err, "bit past the doc count")
}

func TestMaskCorruption(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("idx", 0o755); err != nil {
		t.Fatal(err)
	}
	bm := roaring.BitmapOf(1, 2, 3, 500, 900)
	fi, err := WriteMask(fs, "idx", 5, bm, 1000)
	if err != nil {
		t.Fatal(err)
	}
	path := "idx/" + segid.FileName(5, MaskSuffix)
	orig := readFile(t, fs, path)
	for off := int64(0); off < fi.Size; off++ {
		bad := append([]byte(nil), orig...)
		bad[off] ^= 0x10
		writeFile(t, fs, path, bad)
		_, err := ReadMask(fs, "idx", 5, 1000)
		wantCorruption(t, err, "flipped mask byte")
	}
	for n := int64(0); n < fi.Size; n += 7 {
		writeFile(t, fs, path, orig[:n])
		_, err := ReadMask(fs, "idx", 5, 1000)
		wantCorruption(t, err, "truncated mask")
	}
	// A mask is named by its own ID: reading it under another fails.
	writeFile(t, fs, path, orig)
	if err := fs.Rename(path, "idx/"+segid.FileName(6, MaskSuffix)); err != nil {
		t.Fatal(err)
	}
	_, err = ReadMask(fs, "idx", 6, 1000)
	wantCorruption(t, err, "renamed mask")
	if _, err := ReadMask(fs, "idx", 5, 1000); !errors.Is(err, ErrMissingFile) {
		t.Fatalf("missing mask: %v", err)
	}
}
