package main

import (
	"context"
	"fmt"
	"math"
	"net"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
	"github.com/summadev/summa/controllers"
)

// results are the figures the bench prints.
type results struct {
	// rssMB is the operator's VmRSS at the end of the steady window.
	rssMB float64
	// writesPerMinute are the operator's mutating API requests per minute
	// over the steady window.
	writesPerMinute float64
	// staleP99 is the 99th percentile of the time from a commit in an
	// engine to status.documents showing it.
	staleP99 float64
	// readySeconds is the time from creating the running indexes to all
	// of them Ready.
	readySeconds float64
	// othersStaleP99 is staleP99 of the other indexes while -stopped
	// engines (one by default) are stopped (SIGSTOP).
	othersStaleP99 float64
}

// print writes the figures in the forms of issue 11.
func (r *results) print(c config) {
	fmt.Printf("operator rss_mb at %d indexes: %.0f\n", c.indexes, r.rssMB)
	fmt.Printf("steady-state api writes per minute: %.1f\n", r.writesPerMinute)
	fmt.Printf("status staleness p99 seconds: %.1f\n", r.staleP99)
	fmt.Printf("time to Ready for %d new indexes seconds: %.1f\n", c.running, r.readySeconds)
	fmt.Printf("others' status staleness p99 seconds: %.1f\n", r.othersStaleP99)
	fmt.Printf("(resync period %s, %d unrelated pods, %d engine(s) stopped, %d CPUs, etcd on %s)\n", c.resync, c.pods, c.stopped, runtime.NumCPU(), c.etcdOn())
}

// measure builds the scene step by step and takes each figure.
func measure(ctx context.Context, c config, e *env) (*results, error) {
	r := &results{}
	if err := startWithPods(ctx, c, e); err != nil {
		return nil, err
	}
	running, err := createIndexes(ctx, c, e, r)
	if err != nil {
		return nil, err
	}
	if err := steadyWrites(ctx, c, e, r); err != nil {
		return nil, err
	}
	if err := measureStaleness(ctx, c, e, r, running); err != nil {
		return nil, err
	}
	return r, nil
}

// startWithPods creates the namespaces, starts the operator and creates
// the unrelated pods, logging the operator's RSS before and after them.
func startWithPods(ctx context.Context, c config, e *env) error {
	if err := createNamespaces(ctx, e, c); err != nil {
		return err
	}
	if err := e.startOperator(c); err != nil {
		return err
	}
	if err := sleep(ctx, 5*time.Second); err != nil {
		return err
	}
	before, _, _ := e.rss()
	start := time.Now()
	if err := createAll(ctx, e, c.pods, func(i int) client.Object { return unrelatedPod(i) }); err != nil {
		return err
	}
	if err := sleep(ctx, 10*time.Second); err != nil {
		return err
	}
	after, _, _ := e.rss()
	logf("%d unrelated pods created in %.0fs; operator RSS %.0f MiB before them, %.0f MiB after", c.pods, time.Since(start).Seconds(), before, after)

	return nil
}

// createIndexes creates the suspended indexes, then the running ones,
// and records the time until the running ones are Ready. It returns the
// running indexes' keys.
func createIndexes(ctx context.Context, c config, e *env, r *results) ([]client.ObjectKey, error) {
	suspended := c.indexes - c.running
	start := time.Now()
	if err := createAll(ctx, e, suspended, func(i int) client.Object { return benchIndex(indexKey(c, false, i), true) }); err != nil {
		return nil, err
	}
	if err := waitAll(ctx, e, keys(c, false, suspended), 30*time.Minute, func(x *summav1.SummaIndex) bool {
		return x.Status.Phase == summav1.PhaseSuspended
	}); err != nil {
		return nil, err
	}
	logf("%d suspended indexes created and Suspended in %.0fs", suspended, time.Since(start).Seconds())

	running := keys(c, true, c.running)
	start = time.Now()
	if err := createAll(ctx, e, c.running, func(i int) client.Object { return benchIndex(indexKey(c, true, i), false) }); err != nil {
		return nil, err
	}
	if err := waitAll(ctx, e, running, 30*time.Minute, (*summav1.SummaIndex).IsReady); err != nil {
		return nil, err
	}
	r.readySeconds = time.Since(start).Seconds()
	logf("%d running indexes Ready in %.1fs", c.running, r.readySeconds)
	reportDegraded(ctx, e, append(keys(c, false, suspended), running...))

	return running, nil
}

// steadyWrites counts the operator's API writes at rest, then after a
// restart of the operator, and records its RSS.
func steadyWrites(ctx context.Context, c config, e *env, r *results) error {
	settle := max(c.resync, 30*time.Second)
	logf("settling for %s, then counting the operator's API writes for %s", settle, c.steady)
	if err := sleep(ctx, settle); err != nil {
		return err
	}
	from := time.Now()
	if err := sleep(ctx, c.steady); err != nil {
		return err
	}
	to := time.Now()
	r.rssMB, _, _ = e.rss()
	if err := sleep(ctx, 3*time.Second); err != nil { // the audit log's batch
		return err
	}
	w, err := countWrites(e.auditLog, from, to)
	if err != nil {
		return err
	}
	r.writesPerMinute = float64(w.total) / to.Sub(from).Minutes()
	logf("steady window: %d writes in %.0fs %s; RSS %.0f MiB", w.total, to.Sub(from).Seconds(), w, r.rssMB)

	// A restarted operator (an upgrade, a rescheduled pod) finds every
	// status as it would write it: it should write nothing either.
	e.stopOperator()
	if err := e.startOperator(c); err != nil {
		return err
	}
	from = time.Now()
	if err := sleep(ctx, c.resync+20*time.Second); err != nil {
		return err
	}
	to = time.Now()
	if err := sleep(ctx, 3*time.Second); err != nil {
		return err
	}
	if w, err := countWrites(e.auditLog, from, to); err == nil {
		rss, _, _ := e.rss()
		logf("in the %.0fs after an operator restart: %d writes %s; RSS %.0f MiB", to.Sub(from).Seconds(), w.total, w, rss)
	}

	return nil
}

// measureStaleness records the status staleness p99 over the running
// indexes, then over the others while c.stopped engines are stopped.
func measureStaleness(ctx context.Context, c config, e *env, r *results, running []client.ObjectKey) error {
	eng := newEngines(e)
	stale, err := staleness(ctx, c, e, eng, running, 0)
	if err != nil {
		return err
	}
	r.staleP99 = p99(stale)

	victims := running[:c.stopped]
	signal := func(sig syscall.Signal) error {
		for _, v := range victims {
			if err := e.kubelet.KillContainer(v.Namespace, v.Name+"-engine", controllers.EngineContainerName, sig); err != nil {
				return err
			}
		}
		return nil
	}
	logf("SIGSTOP to the engines of %v", victims)
	if err := signal(syscall.SIGSTOP); err != nil {
		return err
	}
	from := time.Now()
	if err := sleep(ctx, 20*time.Second); err != nil { // the pods turn unready, the operator notices
		return err
	}
	to := time.Now()
	stale, err = staleness(ctx, c, e, eng, running[c.stopped:], c.rounds)
	if serr := signal(syscall.SIGCONT); err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	r.othersStaleP99 = p99(stale)
	if w, err := countWrites(e.auditLog, from, to); err == nil {
		logf("in the %.0fs after the SIGSTOP: %d writes %s", to.Sub(from).Seconds(), w.total, w)
	}
	_, peak, _ := e.rss()
	logf("operator peak RSS (VmHWM) %.0f MiB", peak)
	return nil
}

// keys are the keys of the first n running or suspended indexes.
func keys(c config, running bool, n int) []client.ObjectKey {
	out := make([]client.ObjectKey, n)
	for i := range out {
		out[i] = indexKey(c, running, i)
	}
	return out
}

// reportDegraded logs how many indexes are Degraded, with the first one's
// message: a bench of a failing operator measures nothing useful.
func reportDegraded(ctx context.Context, e *env, ks []client.ObjectKey) {
	n, first := 0, ""
	for _, k := range ks {
		x := &summav1.SummaIndex{}
		if err := e.cached.Get(ctx, k, x); err != nil || !x.IsConditionTrue(summav1.ConditionDegraded) {
			continue
		}
		if n++; first == "" {
			first = k.String() + ": " + x.GetCondition(summav1.ConditionDegraded).Message
		}
	}
	if n > 0 {
		logf("WARNING: %d of %d indexes are Degraded (first: %s)", n, len(ks), first)
	}
}

// waitAll waits until ok holds for every index, logging progress.
func waitAll(ctx context.Context, e *env, ks []client.ObjectKey, timeout time.Duration, ok func(*summav1.SummaIndex) bool) error {
	deadline := time.Now().Add(timeout)
	lastLog := time.Now()
	pending := ks
	for {
		var still []client.ObjectKey
		for _, k := range pending {
			x := &summav1.SummaIndex{}
			if err := e.cached.Get(ctx, k, x); err != nil || !ok(x) {
				still = append(still, k)
			}
		}
		pending = still
		if len(pending) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d indexes not there after %s (first: %s)", len(pending), len(ks), timeout, pending[0])
		}
		if time.Since(lastLog) > 30*time.Second {
			logf("waiting: %d of %d indexes to go", len(pending), len(ks))
			lastLog = time.Now()
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// p99 is the 99th percentile (nearest rank) of xs.
func p99(xs []float64) float64 { return percentile(xs, 0.99) }

// percentile is the q-quantile (nearest rank, 0 < q <= 1) of xs.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)]
}

// engines are clients of the running engines, with each index's write
// token, made once per index.
type engines struct {
	// e reads the Secrets and pods.
	e *env
	// mu guards byKey.
	mu sync.Mutex
	// byKey are the clients by index.
	byKey map[client.ObjectKey]*engineclient.Client
}

// newEngines returns an empty set of engine clients.
func newEngines(e *env) *engines {
	return &engines{e: e, byKey: map[client.ObjectKey]*engineclient.Client{}}
}

// ingest adds one document to the index's engine, commits, and returns
// the live document count after the commit.
func (g *engines) ingest(ctx context.Context, k client.ObjectKey, id string) (int64, error) {
	c, err := g.client(ctx, k)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := c.AddDocuments(ctx, k.Name, map[string]string{"id": id, "body": "a document for the staleness bench"}); err != nil {
		return 0, fmt.Errorf("ingest into %s: %w", k, err)
	}
	res, err := c.Commit(ctx, k.Name)
	if err != nil {
		return 0, fmt.Errorf("commit %s: %w", k, err)
	}
	return int64(res.Documents), nil
}

// client returns the engine client of an index, with its write token,
// verifying the engine with the CA of its TLS Secret.
func (g *engines) client(ctx context.Context, k client.ObjectKey) (*engineclient.Client, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.byKey[k]; c != nil {
		return c, nil
	}
	x := &summav1.SummaIndex{}
	pod := &corev1.Pod{}
	creds, tlsSecret := &corev1.Secret{}, &corev1.Secret{}
	if err := g.e.cached.Get(ctx, k, x); err != nil {
		return nil, err
	}
	if err := g.e.cached.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: x.EnginePodName()}, pod); err != nil {
		return nil, err
	}
	if err := g.e.cached.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: x.CredentialsSecretName()}, creds); err != nil {
		return nil, err
	}
	if err := g.e.cached.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: x.TLSSecretName()}, tlsSecret); err != nil {
		return nil, err
	}
	token, _, _ := strings.Cut(string(creds.Data[summav1.WriteTokenKey]), "\n")
	hc, err := engineclient.NewHTTPClient(tlsSecret.Data[summav1.CACertKey], x.ServiceHost(), 30*time.Second)
	if err != nil {
		return nil, err
	}
	base := "https://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(controllers.EnginePort))
	c := engineclient.New(base, hc).WithToken(strings.TrimSpace(token))
	g.byKey[k] = c
	return c, nil
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
