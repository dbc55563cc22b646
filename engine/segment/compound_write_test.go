package segment

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/schema"
	"github.com/summadev/summa/engine/segid"
)

// writeLogFS records the size of every Write to the files it creates.
type writeLogFS struct {
	vfs.FS
	writes map[string][]int
}

// writeLogFile is a file of a writeLogFS.
type writeLogFile struct {
	vfs.File
	name string
	fs   *writeLogFS
}

func (fs *writeLogFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	return &writeLogFile{File: f, name: fs.PathBase(name), fs: fs}, nil
}

func (f *writeLogFile) Write(p []byte) (int, error) {
	f.fs.writes[f.name] = append(f.fs.writes[f.name], len(p))
	return f.File.Write(p)
}

// TestCompoundWritesAlignedChunks: a compound file is written in writes
// of compoundBufferSize at multiples of it, plus the rest at the end, so
// a segment smaller than the buffer is one write (the page cache keeps it
// in large folios; see compoundBufferSize), and the segment is intact.
func TestCompoundWritesAlignedChunks(t *testing.T) {
	s := testSchema()
	ps := opticksParagraphs(t)
	for _, tc := range []struct {
		name string
		n    int // documents: the paragraphs in order, again and again
	}{
		{"small", 150},
		{"large", len(ps)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &writeLogFS{FS: vfs.NewMem(), writes: map[string][]int{}}
			if err := fs.MkdirAll("idx", 0o755); err != nil {
				t.Fatal(err)
			}
			b := NewBuilder(s)
			var added []*schema.Document
			for i := range tc.n {
				d, err := s.ParseDocument(opticksJSON(i, ps[i%len(ps)]))
				if err != nil {
					t.Fatal(err)
				}
				b.Add(d)
				added = append(added, d)
			}
			info, err := b.Write(context.Background(), fs, "idx", corruptID)
			if err != nil {
				t.Fatal(err)
			}
			ws := fs.writes[segid.FileName(corruptID, SuffixCompound)]
			size := info.Files[0].Size
			if wantChunks := int((size + compoundBufferSize - 1) / compoundBufferSize); len(ws) != wantChunks {
				t.Fatalf("file of %d bytes written in %d writes %v, want %d", size, len(ws), ws, wantChunks)
			}
			sum := int64(0)
			for i, w := range ws {
				if i < len(ws)-1 && w != compoundBufferSize {
					t.Fatalf("write %d of %d bytes (writes %v), want %d", i, w, ws, compoundBufferSize)
				}
				sum += int64(w)
			}
			if sum != size {
				t.Fatalf("writes add up to %d bytes, file has %d", sum, size)
			}
			if tc.name == "large" && len(ws) < 3 {
				t.Fatalf("segment of %d bytes does not span three buffers", size)
			}
			if err := Validate(context.Background(), fs, "idx", s, info); err != nil {
				t.Fatal(err)
			}
			r, err := Open(fs, "idx", s, info)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			last := uint32(len(added) - 1)
			got, err := r.StoredDocument(last)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(added[last].Stored) {
				t.Fatalf("document %d stored as %s, want %s", last, got, added[last].Stored)
			}
		})
	}
}
