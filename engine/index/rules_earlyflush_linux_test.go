package index

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// TestC05_AbandonedOutputUnmapsItsFiles: on a real disk an output's
// reader maps its files; the output a failed generation gives up is
// closed before its claim deletes it, so no mapping of its deleted files
// stays in the process (a leaked reader would keep their disk space
// allocated until the process exits, which the in-memory filesystem of
// the other tests cannot show).
func TestC05_AbandonedOutputUnmapsItsFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "articles")
	inj := &failSegmentCreate{}
	fs := errorfs.Wrap(vfs.Default, inj)
	opts := testOptions()
	opts.WorkerBufferBytes = 1
	idx, err := Create(fs, dir, testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, idx)
	oneEarlyFlush(t, idx)
	if mapped := mappedUnder(t, dir); len(mapped) == 0 {
		t.Fatal("the buffer-full output maps none of its files: this test cannot see a leaked reader")
	}
	failGeneration(t, idx, inj)
	if mapped := mappedUnder(t, dir); len(mapped) != 0 {
		t.Fatalf("the abandoned output's reader still maps %v", mapped)
	}
}

// mappedUnder returns the lines of /proc/self/maps that map a file under
// dir.
func mappedUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, dir+"/") {
			out = append(out, line)
		}
	}
	return out
}
