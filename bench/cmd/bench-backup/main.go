// Command bench-backup measures online backups to object storage and
// restore on the real summa-server binary against a real S3 server
// (SeaweedFS's weed, make s3) on loopback (make bench-backup): the rate of
// a full backup of an index of -index-mb, the bytes a second backup
// uploads after 1% of the documents changed (upserted, spread over every
// segment) as a share of the whole index, and the rate of
// `summa-server restore` (download, SHA-256 check, full format validation,
// metadata.json last) into an empty directory. Each rate is printed beside
// the disk's sequential write rate measured in the same run on the same
// filesystem:
//
//	backup MB/s: N (disk sequential write MB/s: D, ...)
//	incremental backup bytes after 1% change: P% (...)
//	restore MB/s: N (disk sequential write MB/s: D, ...)
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/summadev/summa/bench/internal/cmdmain"
	"github.com/summadev/summa/bench/serverproc"
	"github.com/summadev/summa/internal/corpus"
	"github.com/summadev/summa/internal/testing/s3test"
)

func main() {
	indexMB := flag.Int("index-mb", 512, "size of the backed-up index, in MiB")
	work := flag.String("dir", "", "work directory (default: a temporary directory, removed at the end)")
	flag.Parse()
	cmdmain.Run("bench-backup", func(ctx context.Context) error { return run(ctx, *indexMB, *work) })
}

// backupStatus is the engine's backup object.
type backupStatus struct {
	ID          string `json:"id"`
	State       string `json:"state"`
	Bytes       int64  `json:"bytes"`
	ReusedBytes int64  `json:"reusedBytes"`
	Error       string `json:"error"`
}

// run is the whole benchmark; it stops early, its processes stopped and
// its work directory removed, when ctx ends.
func run(ctx context.Context, indexMB int, work string) (err error) {
	work, remove, err := serverproc.WorkDir(work, "bench-backup-")
	if err != nil {
		return err
	}
	defer remove()
	tb := &benchTB{dir: work}
	defer tb.cleanup()
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(tbFailure); ok {
				err = f
				return
			}
			panic(r)
		}
	}()
	if _, ok := s3test.Binary(); !ok {
		return fmt.Errorf("the S3 server binary is missing: run `make s3` (bench-backup runs it through make)")
	}
	bin, err := serverproc.Build(ctx, ".", work)
	if err != nil {
		return err
	}
	store := s3test.Start(tb)
	const prefix = "bench"
	leader, size, docs, err := serverproc.StartFilled(ctx, bin, filepath.Join(work, "data"), int64(indexMB)<<20,
		append(store.Flags(prefix), "--optimizer-threads", "0")...)
	if err != nil {
		return err
	}
	defer leader.Stop()
	fmt.Fprintf(os.Stderr, "index: %.0f MiB, %d documents\n", float64(size)/(1<<20), docs)
	disk, err := serverproc.DiskWriteRate(filepath.Join(work, "disk-probe"), size)
	if err != nil {
		return err
	}
	full, took, err := backup(ctx, leader)
	if err != nil {
		return err
	}
	backupRate := float64(full.Bytes) / (1 << 20) / took.Seconds()
	fmt.Fprintf(os.Stderr, "full backup %s: %d bytes in %s\n", full.ID, full.Bytes, took.Round(time.Millisecond))

	changed, err := change(leader, docs, docs/100)
	if err != nil {
		return err
	}
	incr, itook, err := backup(ctx, leader)
	if err != nil {
		return err
	}
	total := incr.Bytes + incr.ReusedBytes
	fmt.Fprintf(os.Stderr, "incremental backup %s: %d bytes uploaded, %d reused, in %s\n",
		incr.ID, incr.Bytes, incr.ReusedBytes, itook.Round(time.Millisecond))

	restoreDir := filepath.Join(work, "restored")
	t0 := time.Now()
	out, err := exec.CommandContext(ctx, bin, append([]string{"restore", "--data-dir", restoreDir, "--index", "bench",
		"--backup", incr.ID}, store.Flags(prefix)...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("restore: %w\n%s", err, out)
	}
	rtook := time.Since(t0)
	restoreRate := float64(total) / (1 << 20) / rtook.Seconds()

	fmt.Printf("backup MB/s: %.0f (disk sequential write MB/s: %.0f; %.0f%% of it; index %.0f MiB uploaded in %.1f s)\n",
		backupRate, disk, 100*backupRate/disk, float64(full.Bytes)/(1<<20), took.Seconds())
	fmt.Printf("incremental backup bytes after 1%% change: %.1f%% (%d of %d documents upserted; %.1f MiB uploaded, %.0f MiB reused; disk sequential write MB/s: %.0f)\n",
		100*float64(incr.Bytes)/float64(total), changed, docs, float64(incr.Bytes)/(1<<20), float64(incr.ReusedBytes)/(1<<20), disk)
	fmt.Printf("restore MB/s: %.0f (disk sequential write MB/s: %.0f; %.0f%% of it; %.0f MiB restored and validated in %.1f s)\n",
		restoreRate, disk, 100*restoreRate/disk, float64(total)/(1<<20), rtook.Seconds())
	return nil
}

// backup runs one online backup to its end and returns it with its
// duration from the request to its completion; it stops waiting when ctx
// ends.
func backup(ctx context.Context, p *serverproc.Proc) (backupStatus, time.Duration, error) {
	t0 := time.Now()
	var b backupStatus
	if err := p.Call("POST", "/v1/indexes/bench/backups", nil, &b); err != nil {
		return b, 0, err
	}
	for b.State == "running" {
		if err := ctx.Err(); err != nil {
			return b, 0, fmt.Errorf("backup %s: %w", b.ID, err)
		}
		time.Sleep(10 * time.Millisecond)
		if err := p.Call("GET", "/v1/indexes/bench/backups/"+b.ID, nil, &b); err != nil {
			return b, 0, err
		}
	}
	took := time.Since(t0)
	if b.State != "completed" {
		return b, took, fmt.Errorf("backup %s: %s: %s", b.ID, b.State, b.Error)
	}
	return b, took, nil
}

// change upserts n documents picked at random among the first docs (new
// bodies, same primary keys) in one commit: a new segment, and a new
// deletion mask for every segment that held one of them.
func change(p *serverproc.Proc, docs, n int) (int, error) {
	ps, err := corpus.Paragraphs()
	if err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	picked := map[int]bool{}
	for len(picked) < n {
		picked[rng.IntN(docs)] = true
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for id := range picked {
		_ = enc.Encode(map[string]string{"id": fmt.Sprintf("d%d", id), "body": serverproc.DocBody(ps, id+docs)})
	}
	if err := p.Call("POST", "/v1/indexes/bench/documents", b.String(), nil); err != nil {
		return 0, err
	}
	return len(picked), p.Call("POST", "/v1/indexes/bench/commit", nil, nil)
}

// tbFailure is a fatal error of the S3 server helper.
type tbFailure string

func (f tbFailure) Error() string { return string(f) }

// benchTB is what internal/testing/s3test needs of a test, for a command: a fatal
// error panics with tbFailure (run recovers it), cleanups run at the end.
type benchTB struct {
	dir      string
	n        int
	cleanups []func()
}

func (b *benchTB) Helper()                           {}
func (b *benchTB) Fatal(args ...any)                 { panic(tbFailure(fmt.Sprint(args...))) }
func (b *benchTB) Fatalf(format string, args ...any) { panic(tbFailure(fmt.Sprintf(format, args...))) }
func (b *benchTB) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "s3: "+format+"\n", args...)
}
func (b *benchTB) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "s3: "+format+"\n", args...)
}
func (b *benchTB) Skip(args ...any) { panic(tbFailure(fmt.Sprint(args...))) }
func (b *benchTB) Failed() bool     { return false }
func (b *benchTB) Cleanup(f func()) { b.cleanups = append(b.cleanups, f) }

// TempDir returns a new directory under the work directory.
func (b *benchTB) TempDir() string {
	b.n++
	d := filepath.Join(b.dir, fmt.Sprintf("s3-%d", b.n))
	if err := os.MkdirAll(d, 0o755); err != nil {
		panic(tbFailure(err.Error()))
	}
	return d
}

// cleanup runs the cleanups, last first.
func (b *benchTB) cleanup() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
}

var _ s3test.TB = (*benchTB)(nil)
