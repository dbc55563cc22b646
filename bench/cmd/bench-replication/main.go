// Command bench-replication measures read followers on the real
// summa-server binary (make bench-replication): the lag from a leader's
// commit to its visibility on a follower (p99 over many single-document
// commits), and the catch-up rate of a new follower copying an index of
// -index-mb, beside the disk's sequential write rate measured in the same
// run on the same filesystem (the mean of a probe right before and one
// right after the catch-up, each writing a new file, as the follower
// does); then a rolling restart (two followers one at
// a time, each ready and caught up before the next, the leader last)
// under a search load routed to whichever process is ready, as a read
// Service routes. It prints
//
//	replication lag p99 ms: N
//	follower catch-up MB/s: N
//	searches failed during rolling restart: N
//	disk sequential write MB/s: N
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/summadev/summa/bench/internal/cmdmain"
	"github.com/summadev/summa/bench/serverproc"
)

func main() {
	indexMB := flag.Int("index-mb", 1024, "size of the index the new follower copies, in MiB")
	commits := flag.Int("commits", 200, "single-document commits timed for the lag")
	work := flag.String("dir", "", "work directory (default: a temporary directory, removed at the end)")
	flag.Parse()
	cmdmain.Run("bench-replication", func(ctx context.Context) error { return run(ctx, *indexMB, *commits, *work) })
}

// run is the whole benchmark; it stops early, its processes stopped and
// its work directory removed, when ctx ends.
func run(ctx context.Context, indexMB, commits int, work string) error {
	work, remove, err := serverproc.WorkDir(work, "bench-replication-")
	if err != nil {
		return err
	}
	defer remove()
	bin, err := serverproc.Build(ctx, ".", work)
	if err != nil {
		return err
	}
	// Background maintenance off: the figures are the copy's, not those of
	// a merge's output copied meanwhile.
	leaderExtra := []string{"--optimizer-threads", "0"}
	leader, size, _, err := serverproc.StartFilled(ctx, bin, filepath.Join(work, "leader"), int64(indexMB)<<20, slices.Concat(shutdownDelay, leaderExtra)...)
	if err != nil {
		return err
	}
	defer leader.Stop()
	fmt.Fprintf(os.Stderr, "leader index: %.0f MiB\n", float64(size)/(1<<20))
	// The disk is probed right before and right after the catch-up, and
	// the catch-up compared with the mean: on a shared machine the disk's
	// rate drifts within minutes, and one probe taken before could be far
	// from what the catch-up met. Each probe writes a new file, kept until
	// the end, as the follower writes new files: none rewrites the blocks
	// another just freed, which on this VM runs about 3 times faster than
	// writing new data (docs/performance.md).
	probe := filepath.Join(work, "disk-probe")
	defer os.Remove(probe + "-before")
	defer os.Remove(probe + "-after")
	diskBefore, err := serverproc.DiskWriteRateKept(probe+"-before", size)
	if err != nil {
		return err
	}
	fdir := filepath.Join(work, "follower")
	if err := os.RemoveAll(fdir); err != nil {
		return err
	}
	// The catch-up is timed from the follower's start: it is ready (and
	// start returns) only once it has copied the index. Its CPU time is
	// the whole process's.
	t0 := time.Now()
	leaderCPU0, _ := leader.CPUTime()
	follower, err := start(bin, fdir, "--follow", leader.URL)
	if err != nil {
		return err
	}
	defer follower.Stop()
	var followerCPU0 time.Duration
	want := generation(leader)
	for generation(follower) < want {
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
	wall := time.Since(t0)
	catchUp := float64(size) / (1 << 20) / wall.Seconds()
	leaderCPU, _ := leader.CPUTime()
	followerCPU, _ := follower.CPUTime()
	diskAfter, err := serverproc.DiskWriteRateKept(probe+"-after", size)
	if err != nil {
		return err
	}
	disk := (diskBefore + diskAfter) / 2
	lags, err := lagSamples(ctx, leader, follower, commits)
	if err != nil {
		return err
	}
	failed, sent, err := rollingRestart(ctx, bin, work, leader, follower, leaderExtra)
	if err != nil {
		return err
	}
	fmt.Printf("replication lag p99 ms: %.0f\n", lags[len(lags)*99/100].Seconds()*1000)
	fmt.Printf("follower catch-up MB/s: %.0f\n", catchUp)
	fmt.Printf("searches failed during rolling restart: %d\n", failed)
	fmt.Printf("disk sequential write MB/s: %.0f (catch-up at %.0f%% of it; probes %.0f before and %.0f after the catch-up; index %.0f MiB, lag median %.0f ms; %d searches during the rolling restart)\n",
		disk, 100*catchUp/disk, diskBefore, diskAfter, float64(size)/(1<<20), lags[len(lags)/2].Seconds()*1000, sent)
	mib := float64(size) / (1 << 20)
	fmt.Printf("catch-up CPU ms per MiB: follower %.2f, leader %.2f (wall %.2f s: %.2f cores busy)\n",
		msPer(followerCPU-followerCPU0, mib), msPer(leaderCPU-leaderCPU0, mib), wall.Seconds(),
		(followerCPU-followerCPU0+leaderCPU-leaderCPU0).Seconds()/wall.Seconds())
	return nil
}

// msPer returns d in milliseconds per unit of n.
func msPer(d time.Duration, n float64) float64 {
	return float64(d.Microseconds()) / 1000 / n
}

// lagSamples commits one document at a time on the leader and measures
// how long after the commit's answer the follower serves that generation.
func lagSamples(ctx context.Context, leader, follower *proc, n int) ([]time.Duration, error) {
	var lags []time.Duration
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		doc := fmt.Sprintf(`{"id":"lag%d","body":"lag probe %d"}`+"\n", i, i)
		if err := leader.Call("POST", "/v1/indexes/bench/documents", doc, nil); err != nil {
			return nil, err
		}
		var res struct {
			Generation uint64 `json:"generation"`
		}
		if err := leader.Call("POST", "/v1/indexes/bench/commit", nil, &res); err != nil {
			return nil, err
		}
		t := time.Now()
		deadline := t.Add(time.Minute)
		for generation(follower) < res.Generation {
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("generation %d not on the follower after a minute", res.Generation)
			}
			time.Sleep(time.Millisecond)
		}
		lags = append(lags, time.Since(t))
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	return lags, nil
}

// proc is one summa-server process.
type proc = serverproc.Proc

// shutdownDelay is every process's --shutdown-delay: after SIGTERM it
// answers 2 s more, unready, as the operator runs engines with followers,
// so that the rolling restart's router drops it before its port closes.
var shutdownDelay = []string{"--shutdown-delay", "2s"}

// start runs bin on dataDir on a free loopback port (serverproc.Start).
func start(bin, dataDir string, extra ...string) (*proc, error) {
	return serverproc.Start(bin, dataDir, slices.Concat(shutdownDelay, extra)...)
}

// startOn runs bin on dataDir listening on addr (serverproc.StartOn).
func startOn(bin, dataDir, addr string, extra ...string) (*proc, error) {
	return serverproc.StartOn(bin, dataDir, addr, slices.Concat(shutdownDelay, extra)...)
}

// generation returns the served generation of the bench index (0 when it
// does not exist yet).
func generation(p *proc) uint64 {
	var st struct {
		Generation uint64 `json:"generation"`
	}
	if err := p.Call("GET", "/v1/indexes/bench", nil, &st); err != nil {
		return 0
	}
	return st.Generation
}
