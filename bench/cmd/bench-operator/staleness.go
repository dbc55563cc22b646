package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// staleness ingests and commits one document into each index's engine,
// rounds times (the next round once every status caught up), and returns
// for each commit the seconds from the commit's answer until
// status.documents reflected it (as the bench's watch saw it). The
// statuses are watched while the commits go on, from each index's own
// commit on: an index committed early is not charged the time the
// others' commits take. A commit not reflected within three resync
// periods plus a minute counts at that bound. rounds 0 means c.rounds.
func staleness(ctx context.Context, c config, e *env, eng *engines, ks []client.ObjectKey, rounds int) ([]float64, error) {
	if rounds == 0 {
		rounds = c.rounds
	}
	bound := 3*c.resync + time.Minute
	var out []float64
	for round := range rounds {
		r := newStaleRound(len(ks))
		watchCtx, stopWatch := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			r.watch(watchCtx, e, ks)
		}()
		start := time.Now()
		err := r.ingestAll(ctx, eng, ks, round)
		ingested := time.Now()
		if err == nil {
			select {
			case <-watched:
			case <-time.After(bound + 10*time.Second):
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		stopWatch()
		<-watched
		if err != nil {
			return nil, err
		}
		secs, left := r.seconds(bound, time.Time{})
		late, _ := r.seconds(bound, ingested)
		var worst float64
		for _, s := range secs {
			worst = max(worst, s)
		}
		out = append(out, secs...)
		logf("staleness round %d over %d indexes: max %.1fs, p99 %.1fs, %d never caught up; the commits took %.1fs (p99 %.1fs counted from the last one's end)",
			round+1, len(ks), worst, p99(secs), left, ingested.Sub(start).Seconds(), p99(late))
		if err := sleep(ctx, 3*time.Second); err != nil { // the audit log's batch
			return nil, err
		}
		if ws, err := statusWrites(e.auditLog, start); err == nil {
			op, api, watch := r.split(ks, ws)
			logf("staleness round %d split over %d status writes (p50/p99 seconds): commit to the operator's write %.2f/%.2f, the API server's write %.2f/%.2f, the write to the bench's watch %.2f/%.2f",
				round+1, len(op), percentile(op, 0.5), p99(op), percentile(api, 0.5), p99(api), percentile(watch, 0.5), p99(watch))
			for _, line := range r.slowest(ks, ws, 3) {
				logf("staleness round %d, slow: %s", round+1, line)
			}
		}
		if w, err := countWrites(e.auditLog, start, time.Now()); err == nil {
			logf("staleness round %d: the operator's writes %d %s; load average %s", round+1, w.total, w, loadAverage())
		}
	}
	return out, nil
}

// staleRound is one round of a staleness measurement: per index, when its
// commit answered, the document count it answered with, and when its
// status first showed that count.
type staleRound struct {
	// mu guards the slices.
	mu sync.Mutex
	// committed is when each commit answered (zero: not yet).
	committed []time.Time
	// want is the document count each commit answered with.
	want []int64
	// seen is when each status first showed want (zero: not yet).
	seen []time.Time
}

// newStaleRound returns a round over n indexes.
func newStaleRound(n int) *staleRound {
	return &staleRound{committed: make([]time.Time, n), want: make([]int64, n), seen: make([]time.Time, n)}
}

// ingestAll commits one document into every index's engine, eight at a
// time, recording each commit as it answers.
func (r *staleRound) ingestAll(ctx context.Context, eng *engines, ks []client.ObjectKey, round int) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, 8)
	for i, k := range ks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			n, err := eng.ingest(ctx, k, fmt.Sprintf("doc-%d-%d", round, time.Now().UnixNano()))
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				return
			}
			r.mu.Lock()
			r.committed[i], r.want[i] = time.Now(), n
			r.mu.Unlock()
		}()
	}
	wg.Wait()
	return first
}

// watch reads the statuses from the bench's informer cache every 25 ms
// and records when each committed index's status first shows its count;
// it returns once every index's has, or when ctx ends.
func (r *staleRound) watch(ctx context.Context, e *env, ks []client.ObjectKey) {
	for {
		pending := 0
		for i, k := range ks {
			r.mu.Lock()
			committed, seen, want := r.committed[i], r.seen[i], r.want[i]
			r.mu.Unlock()
			if !seen.IsZero() {
				continue
			}
			pending++
			if committed.IsZero() {
				continue
			}
			x := &summav1.SummaIndex{}
			if err := e.cached.Get(ctx, k, x); err == nil && x.Status.Documents >= want {
				r.mu.Lock()
				r.seen[i] = time.Now()
				r.mu.Unlock()
				pending--
			}
		}
		if pending == 0 || sleep(ctx, 25*time.Millisecond) != nil {
			return
		}
	}
}

// seconds returns each index's staleness (bound for one never seen) and
// how many were never seen. A status seen before notBefore counts as seen
// then (how a bench that watched only after the last commit measured).
func (r *staleRound) seconds(bound time.Duration, notBefore time.Time) ([]float64, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]float64, len(r.seen))
	left := 0
	for i := range r.seen {
		if r.seen[i].IsZero() {
			out[i] = bound.Seconds()
			left++
			continue
		}
		seen := r.seen[i]
		if seen.Before(notBefore) {
			seen = notBefore
		}
		out[i] = seen.Sub(r.committed[i]).Seconds()
	}
	return out, left
}

// split divides each seen commit's staleness at the status write the
// bench saw: the index's last status update by the operator that
// completed between two seconds before the commit answered and the
// moment the bench saw the count. It returns, per such commit, the
// seconds from the commit to the API server receiving that write (the
// operator: long poll, wake, queue, reconcile pass), the API server's
// time on the write, and from its answer to the bench's watch showing it.
func (r *staleRound) split(ks []client.ObjectKey, ws map[client.ObjectKey][]statusWrite) (operator, apiserver, watch []float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, k := range ks {
		if r.seen[i].IsZero() {
			continue
		}
		var last *statusWrite
		for j := range ws[k] {
			w := &ws[k][j]
			if w.done.Before(r.committed[i].Add(-2*time.Second)) || w.done.After(r.seen[i]) {
				continue
			}
			if last == nil || w.done.After(last.done) {
				last = w
			}
		}
		if last == nil {
			continue
		}
		operator = append(operator, last.received.Sub(r.committed[i]).Seconds())
		apiserver = append(apiserver, last.done.Sub(last.received).Seconds())
		watch = append(watch, r.seen[i].Sub(last.done).Seconds())
	}
	return operator, apiserver, watch
}

// slowest describes the n stalest indexes of the round: the staleness,
// and each of the operator's status writes of the index from two seconds
// before its commit on (when the API server received it, relative to the
// commit, and how long it took), so that a slow round shows whether the
// write came late, took long, or was not the one that carried the count.
func (r *staleRound) slowest(ks []client.ObjectKey, ws map[client.ObjectKey][]statusWrite, n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	order := make([]int, 0, len(ks))
	for i := range ks {
		if !r.committed[i].IsZero() {
			order = append(order, i)
		}
	}
	stale := func(i int) time.Duration {
		if r.seen[i].IsZero() {
			return time.Duration(1<<63 - 1)
		}
		return r.seen[i].Sub(r.committed[i])
	}
	sort.Slice(order, func(a, b int) bool { return stale(order[a]) > stale(order[b]) })
	var out []string
	for _, i := range order[:min(n, len(order))] {
		line := fmt.Sprintf("%s %.2fs, writes:", ks[i].Name, stale(i).Seconds())
		if r.seen[i].IsZero() {
			line = fmt.Sprintf("%s never seen, writes:", ks[i].Name)
		}
		for _, w := range ws[ks[i]] {
			if w.done.Before(r.committed[i].Add(-2 * time.Second)) {
				continue
			}
			line += fmt.Sprintf(" at %+.2fs took %.2fs;", w.received.Sub(r.committed[i]).Seconds(), w.done.Sub(w.received).Seconds())
		}
		out = append(out, line)
	}
	return out
}

// loadAverage is the first three fields of /proc/loadavg ("?" where it
// cannot be read).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
