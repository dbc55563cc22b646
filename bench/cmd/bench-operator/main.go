// Command bench-operator measures one Summa operator at scale: the real
// operator binary (cmd/manager, built here) against an envtest
// kube-apiserver and etcd, with envkubelet running every engine pod as a
// real summa-server process on its own loopback address. It creates many
// SummaIndexes (most suspended), unrelated pods in other namespaces, and
// prints (the counts are the flags'):
//
//	operator rss_mb at 1000 indexes: N
//	steady-state api writes per minute: N
//	status staleness p99 seconds: N
//	time to Ready for 100 new indexes seconds: N
//	others' status staleness p99 seconds: N
//
// The operator's RSS is its own process's VmRSS; its API writes are
// counted from the API server's audit log (every create, update, patch and
// delete by the operator's user, Events included). Run it from the
// repository root after `make envtest`:
//
//	go run ./bench/cmd/bench-operator [-indexes 1000] [-running 100] [-pods 5000] [-resync-period 30s] [-stopped 1] [-etcd-disk DIR] [-keep]
//
// (make bench-operator, make bench-operator-quick; docs/operator.md, Scale.)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/summadev/summa/bench/internal/cmdmain"
)

// config is what the flags set.
type config struct {
	// indexes is the number of SummaIndexes, running ones included.
	indexes int
	// running is how many of them run an engine (the rest are suspended).
	running int
	// pods is the number of unrelated pods in other namespaces.
	pods int
	// namespaces spreads the indexes over this many namespaces.
	namespaces int
	// resync is the operator's --resync-period.
	resync time.Duration
	// concurrent is the operator's --max-concurrent-reconciles (0: its
	// default).
	concurrent int
	// steady is the window over which API writes are counted.
	steady time.Duration
	// rounds is the number of ingest rounds of each staleness measurement.
	rounds int
	// stopped is how many engines are made unreachable (SIGSTOP) for the
	// others' staleness.
	stopped int
	// assets holds kube-apiserver and etcd.
	assets string
	// workDir is the parent of the temporary directory.
	workDir string
	// keep keeps the temporary directory (logs, audit log).
	keep bool
	// etcdDisk is the directory etcd keeps its data under ("" : the work
	// directory, on the engines' disk).
	etcdDisk string
}

// etcdOn names where etcd keeps its data, for the report.
func (c config) etcdOn() string {
	if c.etcdDisk == "" {
		return "the engines' disk"
	}
	return c.etcdDisk
}

func main() {
	var c config
	flag.IntVar(&c.indexes, "indexes", 1000, "SummaIndexes in all (running ones included)")
	flag.IntVar(&c.running, "running", 100, "indexes that run an engine (created last, timed to Ready); the rest are suspended")
	flag.IntVar(&c.pods, "pods", 5000, "unrelated pods in other namespaces")
	flag.IntVar(&c.namespaces, "namespaces", 10, "namespaces the indexes are spread over")
	flag.DurationVar(&c.resync, "resync-period", 30*time.Second, "the operator's --resync-period")
	flag.IntVar(&c.concurrent, "max-concurrent-reconciles", 0, "the operator's --max-concurrent-reconciles (0: its default)")
	flag.DurationVar(&c.steady, "steady", 2*time.Minute, "window over which the operator's API writes are counted")
	flag.IntVar(&c.rounds, "rounds", 2, "ingest rounds of each staleness measurement")
	flag.IntVar(&c.stopped, "stopped", 1, "engines made unreachable (SIGSTOP) while the others' staleness is measured")
	flag.StringVar(&c.assets, "assets", envOr("KUBEBUILDER_ASSETS", "bin/envtest"), "directory of kube-apiserver and etcd (env KUBEBUILDER_ASSETS)")
	flag.StringVar(&c.workDir, "dir", "", "parent of the temporary work directory (default: $TMPDIR or /tmp)")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory (operator and kubelet logs, audit log)")
	flag.StringVar(&c.etcdDisk, "etcd-disk", defaultEtcdDisk(), "directory etcd keeps its data under: a disk of its own, as a production control plane has (default /dev/shm, memory); empty: the work directory, on the engines' disk")
	flag.Parse()
	if c.running < 1 || c.running > c.indexes || c.stopped < 0 || c.stopped >= c.running || c.namespaces < 1 || c.resync <= 0 || c.steady <= 0 || c.rounds < 1 {
		fmt.Fprintln(os.Stderr, "bench-operator: need 1 <= -running <= -indexes, 0 <= -stopped < -running, -namespaces >= 1, -rounds >= 1, positive durations")
		os.Exit(2)
	}
	cmdmain.Run("bench-operator", func(ctx context.Context) error { return run(ctx, c) })
}

// run sets the scene up, measures and prints.
func run(ctx context.Context, c config) error {
	dir, err := os.MkdirTemp(c.workDir, "summa-bench-operator-")
	if err != nil {
		return err
	}
	if c.keep {
		logf("work directory %s (kept)", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	logf("%d indexes (%d running) in %d namespaces, %d unrelated pods, resync period %s, %d CPUs, etcd on %s",
		c.indexes, c.running, c.namespaces, c.pods, c.resync, runtime.NumCPU(), c.etcdOn())
	bins, err := buildBinaries(ctx, filepath.Join(dir, "bin"))
	if err != nil {
		return err
	}
	env, err := startEnv(ctx, dir, c, bins)
	if err != nil {
		return err
	}
	defer env.stop()
	r, err := measure(ctx, c, env)
	if err != nil {
		return err
	}
	r.print(c)
	return nil
}

// logf prints progress on stderr, timestamped.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

// envOr returns the environment variable k, or def when unset.
func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
