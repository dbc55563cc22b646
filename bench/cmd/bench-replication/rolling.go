package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// member is one process behind the router: its data directory, its extra
// flags and the process now running there (replaced by a restart).
type member struct {
	dir   string
	extra []string

	mu    sync.Mutex
	p     *proc
	ready bool
}

// current returns the running process and whether the router sees it
// ready.
func (m *member) current() (*proc, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.p, m.ready
}

// router sends a continuous search load to whichever member its last
// /readyz probe found ready, as a read Service routes: a probe loop every
// probeEvery marks each member, searchers pick the ready ones in turn.
type router struct {
	members []*member
	hc      *http.Client
	stop    chan struct{}
	wg      sync.WaitGroup

	sent, failed atomic.Int64
	// firstFailure describes the first failed search.
	firstFailure atomic.Value
}

// probeEvery is the router's readiness probe period.
const probeEvery = 250 * time.Millisecond

// newRouter starts the probe loop and searchers searching goroutines.
func newRouter(members []*member, searchers int) *router {
	r := &router{members: members, stop: make(chan struct{}),
		hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
	r.probe()
	r.wg.Add(1 + searchers)
	go func() {
		defer r.wg.Done()
		for {
			select {
			case <-r.stop:
				return
			case <-time.After(probeEvery):
				r.probe()
			}
		}
	}()
	for i := range searchers {
		go r.search(i)
	}
	return r
}

// probe reads /readyz of every member.
func (r *router) probe() {
	for _, m := range r.members {
		p, _ := m.current()
		ok := false
		if resp, err := r.hc.Get(p.URL + "/readyz"); err == nil {
			resp.Body.Close()
			ok = resp.StatusCode == http.StatusOK
		}
		m.mu.Lock()
		if m.p == p {
			m.ready = ok
		}
		m.mu.Unlock()
	}
}

// search is one searcher's loop.
func (r *router) search(i int) {
	defer r.wg.Done()
	words := []string{"kernel", "memory", "device", "driver", "interrupt", "schedule", "file", "network"}
	for n := i; ; n++ {
		select {
		case <-r.stop:
			return
		default:
		}
		var target *proc
		for k := range r.members {
			if p, ok := r.members[(n+k)%len(r.members)].current(); ok {
				target = p
				break
			}
		}
		r.sent.Add(1)
		if target == nil {
			r.fail("no ready process")
			time.Sleep(10 * time.Millisecond)
			continue
		}
		body := fmt.Sprintf(`{"query":%q,"limit":10}`, words[n%len(words)])
		resp, err := r.hc.Post(target.URL+"/v1/indexes/bench/search", "application/json", strings.NewReader(body))
		switch {
		case err != nil:
			r.fail(err.Error())
		default:
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				r.fail(fmt.Sprintf("%s: %d", target.URL, resp.StatusCode))
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// fail counts a failed search.
func (r *router) fail(why string) {
	r.failed.Add(1)
	r.firstFailure.CompareAndSwap(nil, why)
}

// close stops the load.
func (r *router) close() {
	close(r.stop)
	r.wg.Wait()
}

// restart sends SIGTERM to m's process, waits for its exit, starts it
// again on the same directory and address and waits until it is ready.
func restart(bin string, m *member) error {
	p, _ := m.current()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if err := p.Cmd.Wait(); err != nil {
		return fmt.Errorf("%s after SIGTERM: %w (see %s.log)", m.dir, err, m.dir)
	}
	np, err := startOn(bin, m.dir, strings.TrimPrefix(p.URL, "http://"), m.extra...)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.p, m.ready = np, false // the router's next probe finds it ready
	m.mu.Unlock()
	return nil
}

// rollingRestart runs a search load against the leader and two followers
// while they restart one at a time, followers first (each ready and
// caught up before the next), the leader last (its SIGTERM drains it),
// and returns the failed searches and the searches sent. It stops before
// the next restart when ctx ends.
func rollingRestart(ctx context.Context, bin, work string, leader, follower *proc, leaderExtra []string) (failed, sent int64, err error) {
	f2dir := work + "/follower2"
	if err := os.RemoveAll(f2dir); err != nil {
		return 0, 0, err
	}
	follower2, err := start(bin, f2dir, "--follow", leader.URL)
	if err != nil {
		return 0, 0, err
	}
	lm := &member{dir: work + "/leader", extra: leaderExtra, p: leader}
	members := []*member{lm,
		{dir: work + "/follower", extra: []string{"--follow", leader.URL}, p: follower},
		{dir: f2dir, extra: []string{"--follow", leader.URL}, p: follower2}}
	if err := caughtUp(ctx, follower2, leader); err != nil {
		return 0, 0, err
	}
	r := newRouter(members, 2)
	defer func() {
		for _, m := range members {
			p, _ := m.current()
			p.Stop()
		}
	}()
	time.Sleep(time.Second) // the load runs before the first restart
	for _, m := range members[1:] {
		if err := ctx.Err(); err != nil {
			r.close()
			return 0, 0, err
		}
		if err := restart(bin, m); err != nil {
			r.close()
			return 0, 0, err
		}
		p, _ := m.current()
		if err := caughtUp(ctx, p, leader); err != nil {
			r.close()
			return 0, 0, err
		}
		time.Sleep(time.Second)
	}
	if err := restart(bin, lm); err != nil {
		r.close()
		return 0, 0, err
	}
	time.Sleep(time.Second)
	r.close()
	if why := r.firstFailure.Load(); why != nil {
		fmt.Fprintf(os.Stderr, "first failed search: %s\n", why)
	}
	return r.failed.Load(), r.sent.Load(), nil
}

// caughtUp waits until f serves the leader's generation (or ctx ends).
func caughtUp(ctx context.Context, f, leader *proc) error {
	want := generation(leader)
	for deadline := time.Now().Add(5 * time.Minute); generation(f) < want; {
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("follower %s did not reach generation %d", f.URL, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
