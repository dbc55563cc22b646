package metadata

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segment"
)

// fakeFile is a file that reads from r, counting the bytes read, and whose
// Stat reports size, or fails with statErr.
type fakeFile struct {
	vfs.File // nil: only Read and Stat are used
	r        io.Reader
	read     int64
	size     int64
	statErr  error
}

func (f *fakeFile) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	f.read += int64(n)
	return n, err
}

func (f *fakeFile) Stat() (vfs.FileInfo, error) {
	if f.statErr != nil {
		return nil, f.statErr
	}
	return liedInfo{nil, f.size}, nil
}

// statLiesFS opens every file as one whose Stat says size bytes.
type statLiesFS struct {
	vfs.FS
	size int64
}

func (s statLiesFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := s.FS.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	return statLies{f, s.size}, nil
}

// TestLoadLimitIsExact: a metadata.json of exactly the limit loads, one
// byte more is refused as corrupt, whether Stat tells the file's size or
// says it is empty (the file is then read past the first byte).
func TestLoadLimitIsExact(t *testing.T) {
	text, err := sample().appendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 4096
	for _, size := range []int{limit, limit + 1} {
		// Padded in front: a text cut short loses its closing brace.
		data := strings.Repeat(" ", size-len(text)) + string(text)
		mem := vfs.NewMem()
		writeRaw(t, mem, "/idx", data)
		for _, fs := range []vfs.FS{mem, statLiesFS{mem, 0}} {
			m, err := load(fs, "/idx", limit)
			if size <= limit && (err != nil || m.Generation != sample().Generation) {
				t.Fatalf("%d bytes, limit %d: %v", size, limit, err)
			}
			if size > limit && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%d bytes, limit %d: %v, want ErrCorrupt", size, limit, err)
			}
		}
	}
}

// writeRaw writes data as dir's metadata.json.
func writeRaw(t *testing.T, fs vfs.FS, dir, data string) {
	t.Helper()
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create(fs.PathJoin(dir, FileName), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReadAllReadsAtMostLimitPlusOne: a file longer than the limit is
// read for limit+1 bytes and no more (the byte that shows it is too long),
// whatever its Stat says: a huge corrupt file costs no more memory than
// the limit.
func TestReadAllReadsAtMostLimitPlusOne(t *testing.T) {
	const limit = 1000
	for _, size := range []int64{0, 10, limit, 1 << 62} {
		f := &fakeFile{r: strings.NewReader(strings.Repeat("x", 10*limit)), size: size}
		got, err := readAll(f, limit)
		if err != nil || len(got) != limit+1 || f.read != limit+1 {
			t.Fatalf("Stat says %d: got %d bytes (%d read), %v; want %d", size, len(got), f.read, err, limit+1)
		}
	}
}

// TestReadAllIgnoresAWrongStat: Stat's size is a hint only; a failed
// Stat, a negative size or one beyond the limit still reads the whole
// file.
func TestReadAllIgnoresAWrongStat(t *testing.T) {
	const want = "the whole content"
	for _, f := range []*fakeFile{
		{statErr: syscall.EIO},
		{size: -5},
		{size: 1 << 62},
		{size: MaxFileBytes + 1},
	} {
		f.r = strings.NewReader(want)
		got, err := readAll(f, MaxFileBytes)
		if err != nil || string(got) != want {
			t.Fatalf("Stat %d, %v: read %q, %v", f.size, f.statErr, got, err)
		}
	}
}

// TestCloneKeepsIVFRecords: a clone holds every IVF record of each
// segment, with its own list of models.
func TestCloneKeepsIVFRecords(t *testing.T) {
	m := sample()
	m.Segments[0].IVF = []segment.IVFInfo{
		{Field: "v", Runs: 2, Vectors: 300, Models: []string{"0123456789abcdef", "fedcba9876543210"}, Fragmented: true},
		{Field: "w", Runs: 1, Vectors: 5, Models: []string{"00000000000000ff"}},
	}
	c := m.Clone()
	if !reflect.DeepEqual(c.Segments[0].IVF, m.Segments[0].IVF) {
		t.Fatalf("clone's IVF %+v, want %+v", c.Segments[0].IVF, m.Segments[0].IVF)
	}
	c.Segments[0].IVF[0].Models[0] = "changed"
	c.Segments[0].IVF[1].Runs = 9
	if m.Segments[0].IVF[0].Models[0] != "0123456789abcdef" || m.Segments[0].IVF[1].Runs != 1 {
		t.Fatal("editing the clone's IVF records changed the original")
	}
	m.Segments[0].IVF = nil
	if c := m.Clone(); c.Segments[0].IVF != nil {
		t.Fatalf("a segment without IVF records cloned as %#v, want nil", c.Segments[0].IVF)
	}
}

// TestIDsOfAnEmptyGeneration: a generation without segments references
// nothing.
func TestIDsOfAnEmptyGeneration(t *testing.T) {
	if ids := (&Metadata{}).IDs(); len(ids) != 0 {
		t.Fatalf("IDs of an empty generation: %v", ids)
	}
}
