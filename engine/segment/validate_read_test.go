package segment

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/segid"
)

// openValidate is Validate through Open (the segment's files mapped or
// read as Open loads them): the reference openForValidate must agree with.
func openValidate(fs vfs.FS, dir string, info Info) error {
	r, err := Open(fs, dir, testSchema(), info)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Validate(context.Background())
}

// errText is err's message, or "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestValidateReadsCompoundFile: Validate reads a compound segment on the
// operating system's file system into a buffer, not a mapping, and reports
// exactly what Open and Reader.Validate report for the same file: nothing
// for the intact file, the same error for a byte flipped anywhere in any
// part, and for a truncated or grown file.
func TestValidateReadsCompoundFile(t *testing.T) {
	fs := vfs.Default
	dir := t.TempDir()
	s, info := compoundSegment(t, fs, dir, 300)
	path := fs.PathJoin(dir, segid.FileName(corruptID, SuffixCompound))
	orig := readFile(t, fs, path)
	if info.Files[0].Size <= compoundReadLimit {
		t.Fatalf("segment of %d bytes: Open reads it too", info.Files[0].Size)
	}

	r, release, err := openForValidate(fs, dir, s, info)
	if err != nil {
		t.Fatal(err)
	}
	if r.container.mapped || !bytes.Equal(r.container.data, orig) {
		t.Fatalf("container mapped=%v, %d bytes equal to the file: %v", r.container.mapped, len(r.container.data), bytes.Equal(r.container.data, orig))
	}
	if err := r.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	release()

	check := func(what string, data []byte) {
		t.Helper()
		writeFile(t, fs, path, data)
		got, want := Validate(context.Background(), fs, dir, s, info), openValidate(fs, dir, info)
		if errText(got) != errText(want) {
			t.Fatalf("%s: Validate says %v, Open and Validate say %v", what, got, want)
		}
		if bytes.Equal(data, orig) != (got == nil) {
			t.Fatalf("%s: Validate says %v", what, got)
		}
	}
	eachFlippedByte(t, info, orig, func(suffix string, off int64, bad []byte) {
		check(fmt.Sprintf("%s byte %d", suffix, off), bad)
	})
	check("truncated by a byte", orig[:len(orig)-1])
	check("grown by a byte", append(append([]byte(nil), orig...), 0))
	check("intact", orig)
}
