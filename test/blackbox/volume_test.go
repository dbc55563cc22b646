package blackbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// loopVolume is a small ext4 filesystem on a loop device, mounted for one
// test: the full-disk tests fill it for real. It needs root and the
// e2fsprogs and util-linux tools; without them the test is skipped.
type loopVolume struct {
	// dir is the mount point.
	dir string
}

// mountLoopVolume makes and mounts an ext4 volume of size bytes (no
// blocks reserved for root, so that root fills it as anyone would). The
// test's cleanup unmounts it after the servers it started are killed.
func mountLoopVolume(t *testing.T, size int64) *loopVolume {
	t.Helper()
	needBinary(t)
	if os.Geteuid() != 0 {
		t.Skip("full-disk test: needs root to mount a loop device")
	}
	for _, tool := range []string{"mkfs.ext4", "losetup", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("full-disk test: %s not found: %v", tool, err)
		}
	}
	base := t.TempDir()
	image, mnt := filepath.Join(base, "volume.img"), filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(image, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(image, size); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) error {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Logf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return err
	}
	if err := run("mkfs.ext4", "-q", "-F", "-m", "0", image); err != nil {
		t.Fatalf("mkfs.ext4: %v", err)
	}
	if err := run("mount", "-o", "loop", image, mnt); err != nil {
		t.Skipf("full-disk test: cannot mount a loop device here: %v", err)
	}
	t.Cleanup(func() {
		for i := 0; i < 50; i++ {
			if exec.Command("umount", mnt).Run() == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := run("umount", "-l", mnt); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	return &loopVolume{dir: mnt}
}

// free returns the volume's free bytes.
func (v *loopVolume) free(t *testing.T) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(v.dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// fill allocates a filler file so that about leave bytes stay free, and
// returns its path. The filler lives outside the data directory.
func (v *loopVolume) fill(t *testing.T, name string, leave int64) string {
	t.Helper()
	path := filepath.Join(v.dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for size := v.free(t) - leave; size > 0; size = v.free(t) - leave {
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Fallocate(int(f.Fd()), 0, st.Size(), size); err != nil {
			t.Fatalf("fill %s: %v", path, err)
		}
	}
	return path
}

// unfill deletes a filler file: space returns.
func unfill(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// storageStatus is the "storage" object of STATUS.
type storageStatus struct {
	FreeBytes int64 `json:"freeBytes"`
	UsedBytes int64 `json:"usedBytes"`
	Full      bool  `json:"full"`
}

// storage returns the storage object of an index's STATUS.
func storage(s *Server, name string) storageStatus {
	s.t.Helper()
	var st struct {
		Storage *storageStatus `json:"storage"`
	}
	s.Expect(http.StatusOK, "GET", "/v1/indexes/"+name, nil, &st)
	if st.Storage == nil {
		s.t.Fatalf("GET /v1/indexes/%s has no storage object", name)
	}
	return *st.Storage
}

// metric returns the value of the first /metrics sample whose line starts
// with prefix (a name with its labels), or -1.
func metric(s *Server, prefix string) float64 {
	s.t.Helper()
	r := s.Expect(http.StatusOK, "GET", "/metrics", nil, nil)
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, prefix+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				s.t.Fatalf("metric %s: %q", prefix, line)
			}
			return v
		}
	}
	return -1
}

// requireStorageFull requires a 507 StorageFull, retryable, with Retry-After.
func requireStorageFull(t *testing.T, what string, r *Response) {
	t.Helper()
	var e ErrorBody
	if r.Status != http.StatusInsufficientStorage || json.Unmarshal(r.Body, &e) != nil ||
		e.Error.Code != "StorageFull" || !e.Error.Retryable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("%s: want 507 StorageFull (retryable, Retry-After), got %s", what, r)
	}
}

// eventually polls cond every 50 ms until it holds or the deadline passes.
func eventually(t *testing.T, what string, deadline time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not reached within %v", what, deadline)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
