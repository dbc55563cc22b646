package segment

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

const corruptID segid.ID = 0xc0ffee

// smallSegment builds a segment of n Opticks documents in a MemFS.
func smallSegment(t testing.TB, n int) (vfs.FS, *schema.Schema, Info) {
	s := testSchema()
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "idx", s, corruptID, opticksDocs(t, s, n))
	return fs, s, info
}

func wantCorruption(t *testing.T, err error, what string) {
	t.Helper()
	var ce *CorruptionError
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	if !errors.As(err, &ce) {
		t.Fatalf("%s: error %v is not a *CorruptionError", what, err)
	}
}

// flipOffsets returns byte offsets covering the header, the start, middle
// and end of the payload, the directory offset and the footer.
func flipOffsets(size int64) []int64 {
	offs := []int64{0, 7, 8, 11, 12, 16, 23, headerSize}
	payload := size - frameSize
	for k := int64(1); k < 16; k++ {
		offs = append(offs, headerSize+payload*k/16)
	}
	offs = append(offs, size-footerSize-9, size-footerSize-8, size-footerSize-1,
		size-footerSize, size-footerSize+8, size-footerSize+12, size-1)
	return offs
}

func TestValidateDetectsFlippedBytes(t *testing.T) {
	fs, s, info := smallSegment(t, 120)
	if err := Validate(context.Background(), fs, "idx", s, info); err != nil {
		t.Fatal(err)
	}
	for _, fi := range info.Files {
		path := "idx/" + segid.FileName(corruptID, fi.Suffix)
		orig := readFile(t, fs, path)
		for _, off := range flipOffsets(fi.Size) {
			if off < 0 || off >= fi.Size {
				continue
			}
			for _, mask := range []byte{0x01, 0x80, 0xff} {
				bad := append([]byte(nil), orig...)
				bad[off] ^= mask
				writeFile(t, fs, path, bad)
				err := Validate(context.Background(), fs, "idx", s, info)
				wantCorruption(t, err, fmt.Sprintf("%s byte %d ^ %#x", fi.Suffix, off, mask))
			}
		}
		writeFile(t, fs, path, orig)
	}
}

func TestValidateDetectsTruncation(t *testing.T) {
	fs, s, info := smallSegment(t, 60)
	for i, fi := range info.Files {
		path := "idx/" + segid.FileName(corruptID, fi.Suffix)
		orig := readFile(t, fs, path)
		for _, n := range []int64{0, 1, headerSize, frameSize - 1, frameSize, fi.Size / 2, fi.Size - footerSize, fi.Size - 1} {
			if n < 0 || n >= fi.Size {
				continue
			}
			writeFile(t, fs, path, orig[:n])
			err := Validate(context.Background(), fs, "idx", s, info)
			wantCorruption(t, err, fmt.Sprintf("%s truncated to %d (metadata size)", fi.Suffix, n))
			// Even when the metadata agrees with the truncated size.
			shrunk := info
			shrunk.Files = append([]FileInfo(nil), info.Files...)
			shrunk.Files[i].Size = n
			err = Validate(context.Background(), fs, "idx", s, shrunk)
			wantCorruption(t, err, fmt.Sprintf("%s truncated to %d", fi.Suffix, n))
		}
		writeFile(t, fs, path, orig)
	}
}

func TestOpenCheapChecks(t *testing.T) {
	fs, s, info := smallSegment(t, 40)
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	for _, fi := range info.Files {
		path := "idx/" + segid.FileName(corruptID, fi.Suffix)
		orig := readFile(t, fs, path)
		damage := map[string]int64{
			"header magic":   2,
			"kind":           9,
			"version":        12,
			"segment id":     16,
			"footer length":  fi.Size - footerSize + 1,
			"footer magic":   fi.Size - 3,
			"directory offs": fi.Size - footerSize - 8,
		}
		for what, off := range damage {
			bad := append([]byte(nil), orig...)
			bad[off] ^= 0x40
			writeFile(t, fs, path, bad)
			_, err := Open(fs, "idx", s, info)
			wantCorruption(t, err, fi.Suffix+" "+what)
		}
		// A file longer than recorded.
		writeFile(t, fs, path, append(append([]byte(nil), orig...), 0))
		_, err := Open(fs, "idx", s, info)
		wantCorruption(t, err, fi.Suffix+" grown")
		// A missing file.
		if err := fs.Remove(path); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(fs, "idx", s, info); !errors.Is(err, ErrMissingFile) {
			t.Fatalf("%s missing: got %v, want ErrMissingFile", fi.Suffix, err)
		}
		if err := Validate(context.Background(), fs, "idx", s, info); !errors.Is(err, ErrMissingFile) {
			t.Fatalf("%s missing: Validate got %v, want ErrMissingFile", fi.Suffix, err)
		}
		writeFile(t, fs, path, orig)
	}
	// A file missing from the metadata.
	partial := info
	partial.Files = info.Files[1:]
	_, err = Open(fs, "idx", s, partial)
	wantCorruption(t, err, "unlisted file")
	// Wrong document count.
	wrong := info
	wrong.Documents++
	_, err = Open(fs, "idx", s, wrong)
	wantCorruption(t, err, "wrong document count")
	// Damage inside compressed stored data passes the cheap check only.
	path := "idx/" + segid.FileName(corruptID, SuffixStore)
	orig := readFile(t, fs, path)
	bad := append([]byte(nil), orig...)
	bad[headerSize+20] ^= 0x55
	writeFile(t, fs, path, bad)
	r, err = Open(fs, "idx", s, info)
	if err != nil {
		t.Fatalf("Open should not read stored blocks: %v", err)
	}
	r.Close()
	wantCorruption(t, Validate(context.Background(), fs, "idx", s, info), "store payload")
	writeFile(t, fs, path, orig)
}

func TestOpenWrongSchema(t *testing.T) {
	fs, _, info := smallSegment(t, 10)
	other := schema.MustNew(
		schema.Field{Name: "id", Type: schema.Text, Primary: true},
		schema.Field{Name: "title", Type: schema.Keyword},
	)
	_, err := Open(fs, "idx", other, info)
	wantCorruption(t, err, "other schema")
}

func TestHandBuiltDocumentKeepsStrings(t *testing.T) {
	s := testSchema()
	docs := opticksDocs(t, s, 5)
	for _, d := range docs {
		d.Stored = nil // not the JSON ParseDocument builds
	}
	fs := vfs.NewMem()
	info := buildSegment(t, fs, "idx", s, 9, docs)
	if err := Validate(context.Background(), fs, "idx", s, info); err != nil {
		t.Fatal(err)
	}
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i, d := range docs {
		got, err := r.Document(uint32(i))
		if err != nil {
			t.Fatal(err)
		}
		if want := keptDocument(s, d); !sameDocument(got, want) {
			t.Fatalf("doc %d: %+v, want %+v", i, got, want)
		}
	}
}
