package segment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// compoundSegment writes n Opticks documents as a compound segment (the
// layout Write produces) to fs/dir.
func compoundSegment(t testing.TB, fs vfs.FS, dir string, n int) (*schema.Schema, Info) {
	t.Helper()
	s := testSchema()
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(s)
	for _, d := range opticksDocs(t, s, n) {
		b.Add(d)
	}
	info, err := b.Write(context.Background(), fs, dir, corruptID)
	if err != nil {
		t.Fatal(err)
	}
	return s, info
}

// partOffset returns the offset of part suffix in the compound file.
func partOffset(t *testing.T, info Info, suffix string) int64 {
	off := int64(0)
	for _, p := range info.Parts {
		if p.Suffix == suffix {
			return off
		}
		off += p.Size
	}
	t.Fatalf("no part %s", suffix)
	return 0
}

// TestCompoundSegmentIsOneFile: Write creates the one cmp file, listing
// its parts in Info.Parts; each part holds exactly the bytes the same
// documents give as a separate file, and the segment opens and validates.
func TestCompoundSegmentIsOneFile(t *testing.T) {
	fs := vfs.NewMem()
	s, info := compoundSegment(t, fs, "idx", 150)
	names, err := fs.List("idx")
	if err != nil {
		t.Fatal(err)
	}
	if want := segid.FileName(corruptID, SuffixCompound); len(names) != 1 || names[0] != want {
		t.Fatalf("directory holds %v, want only %s", names, want)
	}
	if len(info.Files) != 1 || info.Files[0].Suffix != SuffixCompound {
		t.Fatalf("Files = %v, want the one compound file", info.Files)
	}
	var got []string
	for _, p := range info.Parts {
		got = append(got, p.Suffix)
	}
	if want := segmentSuffixes(s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("parts %v, want %v", got, want)
	}
	sepFS := vfs.NewMem()
	sep := buildSegment(t, sepFS, "idx", s, corruptID, opticksDocs(t, s, 150))
	for _, suffix := range segmentSuffixes(s) {
		if a, b := partBytes(t, fs, "idx", info, suffix), partBytes(t, sepFS, "idx", sep, suffix); !bytes.Equal(a, b) {
			t.Errorf("part %s of the compound file differs from the separate file", suffix)
		}
	}
	if err := Validate(context.Background(), fs, "idx", s, info); err != nil {
		t.Fatal(err)
	}
	r, err := Open(fs, "idx", s, info)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if doc, err := r.Document(149); err != nil || doc == nil {
		t.Fatalf("Document(149) = %v, %v", doc, err)
	}
}

// TestCompoundValidateDetectsFlippedBytes flips bytes in every part of
// the compound file (header, payload, directory, footer): Validate reports
// a *CorruptionError naming the part's file kind each time.
func TestCompoundValidateDetectsFlippedBytes(t *testing.T) {
	fs := vfs.NewMem()
	s, info := compoundSegment(t, fs, "idx", 120)
	path := "idx/" + segid.FileName(corruptID, SuffixCompound)
	orig := readFile(t, fs, path)
	eachFlippedByte(t, info, orig, func(suffix string, off int64, bad []byte) {
		writeFile(t, fs, path, bad)
		err := Validate(context.Background(), fs, "idx", s, info)
		wantCorruption(t, err, fmt.Sprintf("%s byte %d", suffix, off))
		var ce *CorruptionError
		if errors.As(err, &ce) && ce.File != segid.FileName(corruptID, suffix) {
			t.Fatalf("%s byte %d: corruption reported in %s", suffix, off, ce.File)
		}
	})
	writeFile(t, fs, path, orig)
	if err := Validate(context.Background(), fs, "idx", s, info); err != nil {
		t.Fatal(err)
	}
}

// eachFlippedByte calls fn with a copy of the compound file orig in which
// one byte of a part (at flipOffsets of its size: header, payload,
// directory, footer) has its high bit flipped, for every part of info.
func eachFlippedByte(t *testing.T, info Info, orig []byte, fn func(suffix string, off int64, bad []byte)) {
	t.Helper()
	for _, p := range info.Parts {
		base := partOffset(t, info, p.Suffix)
		for _, off := range flipOffsets(p.Size) {
			if off < 0 || off >= p.Size {
				continue
			}
			bad := append([]byte(nil), orig...)
			bad[base+off] ^= 0x80
			fn(p.Suffix, off, bad)
		}
	}
}

// TestCompoundOpenDetectsDamage: a truncated, grown or missing compound
// file, and metadata whose parts disagree with the file, fail Open with a
// *CorruptionError (ErrMissingFile for the missing file).
func TestCompoundOpenDetectsDamage(t *testing.T) {
	fs := vfs.NewMem()
	s, info := compoundSegment(t, fs, "idx", 60)
	path := "idx/" + segid.FileName(corruptID, SuffixCompound)
	orig := readFile(t, fs, path)
	size := int64(len(orig))
	for _, n := range []int64{0, 1, headerSize, frameSize, size / 2, size - footerSize, size - 1} {
		writeFile(t, fs, path, orig[:n])
		_, err := Open(fs, "idx", s, info)
		wantCorruption(t, err, fmt.Sprintf("truncated to %d", n))
	}
	writeFile(t, fs, path, append(append([]byte(nil), orig...), 0))
	_, err := Open(fs, "idx", s, info)
	wantCorruption(t, err, "grown by a byte")
	if err := fs.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(fs, "idx", s, info); !errors.Is(err, ErrMissingFile) {
		t.Fatalf("missing compound file: %v, want ErrMissingFile", err)
	}
	writeFile(t, fs, path, orig)

	edit := func(what string, change func(i *Info)) {
		t.Helper()
		bad := info
		bad.Files = append([]FileInfo(nil), info.Files...)
		bad.Parts = append([]FileInfo(nil), info.Parts...)
		change(&bad)
		_, err := Open(fs, "idx", s, bad)
		wantCorruption(t, err, what)
	}
	edit("parts larger than the file", func(i *Info) { i.Parts[0].Size++ })
	edit("file larger than the parts", func(i *Info) { i.Files[0].Size++ })
	edit("two parts' sizes swapped", func(i *Info) {
		i.Parts[0].Size, i.Parts[1].Size = i.Parts[1].Size, i.Parts[0].Size
	})
	edit("two parts' order swapped", func(i *Info) { i.Parts[0], i.Parts[1] = i.Parts[1], i.Parts[0] })
	edit("a part listed twice", func(i *Info) { i.Parts[1].Suffix = i.Parts[0].Suffix })
	edit("a part missing", func(i *Info) {
		i.Files[0].Size -= i.Parts[len(i.Parts)-1].Size
		i.Parts = i.Parts[:len(i.Parts)-1]
		i.Parts[0], i.Parts[len(i.Parts)-1] = i.Parts[len(i.Parts)-1], i.Parts[0]
	})
	edit("a required part not listed", func(i *Info) { i.Parts = i.Parts[1:]; i.Files[0].Size -= info.Parts[0].Size })
	edit("a part below the framing", func(i *Info) { i.Parts[0].Size = frameSize - 1 })
	edit("a mask listed as a part", func(i *Info) { i.Parts[0].Suffix = MaskSuffix })
	edit("parts with a second file", func(i *Info) { i.Files = append(i.Files, FileInfo{Suffix: SuffixPostings, Size: 1}) })
	edit("parts with a separate file", func(i *Info) { i.Files[0].Suffix = SuffixPostings })
	if _, err := Open(fs, "idx", s, info); err != nil {
		t.Fatalf("undamaged: %v", err)
	}
}

// TestCompoundOnDisk writes compound segments to the real filesystem, one
// read into memory and one past compoundReadLimit (mapped): both open,
// validate and answer.
func TestCompoundOnDisk(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{30, 3000} {
		fs := vfs.Default
		sub := fmt.Sprintf("%s/n%d", dir, n)
		s, info := compoundSegment(t, fs, sub, n)
		if n == 3000 && info.Files[0].Size <= compoundReadLimit {
			t.Fatalf("segment of %d bytes does not exercise the mapped path", info.Files[0].Size)
		}
		if err := Validate(context.Background(), fs, sub, s, info); err != nil {
			t.Fatal(err)
		}
		r, err := Open(fs, sub, s, info)
		if err != nil {
			t.Fatal(err)
		}
		if r.container.data == nil || r.container.mapped != (info.Files[0].Size > compoundReadLimit) {
			t.Fatalf("%d documents: container mapped=%v for %d bytes", n, r.container.mapped, info.Files[0].Size)
		}
		if _, err := r.Document(info.Documents - 1); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// countWrites counts the write calls to files whose name contains name.
type countWrites struct {
	name   string
	writes int
}

func (c *countWrites) MaybeError(op errorfs.Op) error {
	if op.Kind == errorfs.OpFileWrite && strings.Contains(op.Path, c.name) {
		c.writes++
	}
	return nil
}

func (c *countWrites) String() string { return "countWrites" }

// TestCompoundSmallSegmentOneWrite: a small segment's parts are gathered
// into one write call (a one-document commit wrote one per part); a large
// one's parts still reach the file whole, and both read back to what the
// documents give (TestCompoundWritesAlignedChunks checks the chunks).
func TestCompoundSmallSegmentOneWrite(t *testing.T) {
	for _, n := range []int{1, 3, 700} {
		mem := vfs.NewMem()
		count := &countWrites{name: "." + SuffixCompound}
		fs := errorfs.Wrap(mem, count)
		s := testSchema()
		b := NewBuilder(s)
		docs := opticksDocs(t, s, n)
		for _, d := range docs {
			b.Add(d)
		}
		info, err := b.WriteUnsynced(context.Background(), fs, "", corruptID)
		if err != nil {
			t.Fatal(err)
		}
		size := info.Files[0].Size
		if size <= compoundBufferSize && count.writes != 1 {
			t.Fatalf("%d documents: a compound file of %d bytes took %d writes, want 1", n, size, count.writes)
		}
		t.Logf("%d documents: %d bytes in %d writes", len(docs), size, count.writes)
		if size > 2*writeBufferSize && count.writes < 2 {
			t.Fatalf("%d documents: a compound file of %d bytes in %d writes", n, size, count.writes)
		}
		r, err := Open(mem, "", s, info)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Validate(context.Background()); err != nil {
			t.Fatalf("%d documents (%d writes): %v", n, count.writes, err)
		}
		if got := r.NumDocs(); got != uint32(len(docs)) {
			t.Fatalf("%d documents read back as %d", len(docs), got)
		}
		r.Close()
	}
}
