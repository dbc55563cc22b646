package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Floor is the physical floor of the disk the indexes are written to.
type Floor struct {
	// SeqWriteMBps is the sequential write throughput of one large file,
	// write plus the final fsync.
	SeqWriteMBps float64
	// FsyncSmall is the latency of write(4 KiB) + fsync of a new small file.
	FsyncSmall Dist
	// RenameDirSync is the latency of rename plus an fsync of the directory.
	RenameDirSync Dist
}

// CommitFloor is the least a durable atomic publication can cost: fsync
// one small file, rename it into place and fsync the directory (p50s).
func (f Floor) CommitFloor() time.Duration {
	return f.FsyncSmall.P50 + f.RenameDirSync.P50
}

// MeasureFloor measures the disk under dir: a seqMB sequential write with
// one fsync at the end, then n small-file fsyncs and n rename+dir-fsyncs.
func MeasureFloor(dir string, seqMB, n int) (Floor, error) {
	var fl Floor
	d, err := os.MkdirTemp(dir, "floor-")
	if err != nil {
		return fl, err
	}
	defer os.RemoveAll(d)

	// Sequential write of seqMB MiB in 1 MiB writes, then fsync.
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i*131 + i>>8) // not all zeros, in case the fs compresses
	}
	p := filepath.Join(d, "seq")
	f, err := os.Create(p)
	if err != nil {
		return fl, err
	}
	start := time.Now()
	if err := writeSynced(f, buf, seqMB); err != nil {
		return fl, err
	}
	el := time.Since(start)
	f.Close()
	os.Remove(p)
	fl.SeqWriteMBps = float64(seqMB) * float64(1<<20) / 1e6 / el.Seconds()

	dirf, err := os.Open(d)
	if err != nil {
		return fl, err
	}
	defer dirf.Close()
	small := make([]byte, 4096)
	var fsyncs, renames []time.Duration
	for i := 0; i < n; i++ {
		tmp := filepath.Join(d, fmt.Sprintf("small-%d.tmp", i))
		t0 := time.Now()
		f, err := os.Create(tmp)
		if err != nil {
			return fl, err
		}
		if err := writeSynced(f, small, 1); err != nil {
			return fl, err
		}
		fsyncs = append(fsyncs, time.Since(t0))
		f.Close()
		t1 := time.Now()
		if err := os.Rename(tmp, filepath.Join(d, "current")); err != nil {
			return fl, err
		}
		if err := dirf.Sync(); err != nil {
			return fl, err
		}
		renames = append(renames, time.Since(t1))
	}
	fl.FsyncSmall = NewDist(fsyncs)
	fl.RenameDirSync = NewDist(renames)
	return fl, nil
}

// writeSynced writes buf n times to f and fsyncs it; on failure it closes
// f.
func writeSynced(f *os.File, buf []byte, n int) error {
	for i := 0; i < n; i++ {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return nil
}
