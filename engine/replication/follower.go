package replication

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/summadev/summa/client"
	"github.com/summadev/summa/engine/registry"
)

// Config configures a Follower.
type Config struct {
	// Leader is the leader's URL (http:// or https://HOST:PORT).
	Leader string
	// TokenFile holds a read-scope token of the leader (read again before
	// every request, so a rotated token is picked up); empty for none.
	TokenFile string
	// CAFile holds the PEM certificates that verify the leader; empty for
	// the system roots.
	CAFile string
	// ServerName is the name verified in the leader's certificate when it
	// is not the URL's host.
	ServerName string
	// Logger receives the follower's events.
	Logger logr.Logger
	// PollWait is the long poll's wait (default 10 s).
	PollWait time.Duration
	// ListInterval is how often the leader's index list is read to find
	// created and deleted indexes (default 1 s).
	ListInterval time.Duration
	// Downloads is how many files of a generation download at once
	// (default 4): one stream rarely fills both the network and the disk,
	// and each arrival's full check runs on its own goroutine.
	Downloads int
	// BackoffMin and BackoffMax bound the retry backoff while the leader
	// is unreachable (default 200 ms and 10 s).
	BackoffMin, BackoffMax time.Duration
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.Logger.GetSink() == nil {
		c.Logger = logr.Discard()
	}
	if c.PollWait <= 0 {
		c.PollWait = 10 * time.Second
	}
	if c.ListInterval <= 0 {
		c.ListInterval = time.Second
	}
	if c.Downloads <= 0 {
		c.Downloads = 4
	}
	if c.BackoffMin <= 0 {
		c.BackoffMin = 200 * time.Millisecond
	}
	if c.BackoffMax < c.BackoffMin {
		c.BackoffMax = max(10*time.Second, c.BackoffMin)
	}
	return c
}

// Follower keeps a registry a copy of every index of a leader, made only
// of the leader's committed generations (F03): one loop per index
// long-polls the leader and publishes each newer generation through
// index.Incoming; a list loop creates and deletes indexes as the leader
// does.
type Follower struct {
	cfg  Config
	reg  *registry.Registry
	base *client.Client
	log  logr.Logger
	// copied counts the bytes of published copies.
	copied atomic.Int64
	// ready latches Ready's answer once true.
	ready atomic.Bool

	mu struct {
		sync.Mutex
		// indexes are the followed indexes by name.
		indexes map[string]*followed
		// listed names the open indexes of the leader's first answered
		// list (nil until then): Ready waits for each one's first copy.
		listed []string
	}
}

// followed is one index's replication state.
type followed struct {
	stop context.CancelFunc
	done chan struct{}

	mu               sync.Mutex
	state            string
	leaderGeneration uint64
	// served says the follower has served the leader's generation of the
	// index at least once since it started.
	served bool
	// behindSince is when the follower first saw the leader ahead of it
	// (zero while it serves the leader's generation).
	behindSince time.Time
}

// New returns a follower of cfg.Leader that writes into reg.
func New(cfg Config, reg *registry.Registry) (*Follower, error) {
	cfg = cfg.withDefaults()
	var ca []byte
	if cfg.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("replication: read --follow-ca-file: %w", err)
		}
	}
	if _, err := readToken(cfg.TokenFile); err != nil {
		return nil, err
	}
	hc, err := client.NewHTTPClient(ca, cfg.ServerName, 0)
	if err != nil {
		return nil, fmt.Errorf("replication: %w", err)
	}
	if tr, ok := hc.Transport.(*http.Transport); ok {
		// Every parallel download keeps its connection for the next file
		// (the default keeps two per host), besides the long polls.
		tr.MaxIdleConnsPerHost = cfg.Downloads + 4
	}
	f := &Follower{cfg: cfg, reg: reg, base: client.New(cfg.Leader, hc), log: cfg.Logger}
	f.mu.indexes = make(map[string]*followed)
	// Every local index is reported from the start (disconnected until
	// the leader answers), and served at once: a restarted follower is
	// ready with what it has.
	for _, name := range reg.Names() {
		f.mu.indexes[name] = &followed{state: client.ReplicationDisconnected}
		f.ready.Store(true)
	}
	return f, nil
}

// Ready reports whether the follower has what to serve, so that a read
// Service may send it searches: its data directory held indexes when it
// started (a restart serves them at once, its leader reachable or not),
// or every open index of the leader's first answered list has been
// copied once since (a new follower answers no search of an index it
// does not have yet). Once true it stays true.
func (f *Follower) Ready() bool {
	if f.ready.Load() {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.listed == nil {
		return false
	}
	for _, name := range f.mu.listed {
		// An index no longer followed was deleted on the leader.
		if fi := f.mu.indexes[name]; fi != nil && !fi.hasServed() {
			return false
		}
	}
	f.ready.Store(true)
	return true
}

// hasServed reports whether the leader's generation was served once.
func (fi *followed) hasServed() bool {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	return fi.served
}

// readToken reads a token file (empty name: no token).
func readToken(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("replication: read --follow-token-file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// leader returns a client of the leader with the current token.
func (f *Follower) leader() (*client.Client, error) {
	tok, err := readToken(f.cfg.TokenFile)
	if err != nil {
		return nil, err
	}
	return f.base.WithToken(tok), nil
}

// Status returns the replication status of an index.
func (f *Follower) Status(name string) (client.ReplicationStatus, bool) {
	f.mu.Lock()
	fi := f.mu.indexes[name]
	f.mu.Unlock()
	if fi == nil {
		return client.ReplicationStatus{}, false
	}
	return fi.status(f.cfg.Leader), true
}

// Statuses returns the replication status of every followed index.
func (f *Follower) Statuses() map[string]client.ReplicationStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]client.ReplicationStatus, len(f.mu.indexes))
	for name, fi := range f.mu.indexes {
		out[name] = fi.status(f.cfg.Leader)
	}
	return out
}

// status is fi as the API shows it.
func (fi *followed) status(leader string) client.ReplicationStatus {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	st := client.ReplicationStatus{Leader: leader, State: fi.state, LeaderGeneration: fi.leaderGeneration}
	if !fi.behindSince.IsZero() {
		st.LagSeconds = time.Since(fi.behindSince).Seconds()
	}
	return st
}

// observe records the leader's generation against the local one.
func (fi *followed) observe(state string, leaderGen, localGen uint64) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	fi.state = state
	fi.served = fi.served || state == client.ReplicationFollowing
	if leaderGen > fi.leaderGeneration || state != client.ReplicationDisconnected {
		fi.leaderGeneration = leaderGen
	}
	switch {
	case localGen >= fi.leaderGeneration:
		fi.behindSince = time.Time{}
	case fi.behindSince.IsZero():
		fi.behindSince = time.Now()
	}
}

// disconnected marks fi disconnected, keeping its lag running.
func (fi *followed) disconnected() {
	fi.mu.Lock()
	fi.state = client.ReplicationDisconnected
	fi.mu.Unlock()
}

// Run follows the leader until ctx ends, then waits for every index loop.
func (f *Follower) Run(ctx context.Context) {
	f.log.Info("Following", "leader", f.cfg.Leader)
	backoff := f.cfg.BackoffMin
	for {
		wait := f.cfg.ListInterval
		if err := f.syncIndexes(ctx); err != nil {
			if ctx.Err() == nil {
				f.log.Info("Leader unreachable; serving what this follower has", "leader", f.cfg.Leader, "error", err.Error(),
					"retryIn", backoff.String())
			}
			f.markDisconnected()
			wait, backoff = backoff, min(2*backoff, f.cfg.BackoffMax)
		} else {
			backoff = f.cfg.BackoffMin
		}
		select {
		case <-ctx.Done():
			f.stopAll()
			return
		case <-time.After(wait):
		}
	}
}

// syncIndexes reads the leader's index list, starts a loop for each index
// not yet followed and removes the local indexes the leader no longer has.
func (f *Follower) syncIndexes(ctx context.Context) error {
	c, err := f.leader()
	if err != nil {
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := c.ListIndexes(lctx)
	if err != nil {
		return err
	}
	want := make(map[string]bool, len(list))
	for _, st := range list {
		if st.State == client.StateOpen {
			want[st.Name] = true
		}
	}
	for name := range want {
		f.start(ctx, name)
	}
	// The leader answered: an index it lists is no longer disconnected,
	// and the list says how far the leader is (an index loop learns it
	// only when its long poll returns, which takes up to PollWait when
	// nothing new is committed).
	for _, st := range list {
		if want[st.Name] {
			f.reached(st.Name, st.Generation)
		}
	}
	f.mu.Lock()
	if f.mu.listed == nil {
		f.mu.listed = slices.Collect(maps.Keys(want))
		if f.mu.listed == nil {
			f.mu.listed = []string{}
		}
	}
	f.mu.Unlock()
	for _, name := range f.reg.Names() {
		if !want[name] {
			f.remove(ctx, name)
		}
	}
	return nil
}

// reached records that the leader lists name at generation leaderGen:
// "following" when the local copy serves it, "catchingUp" when it is
// behind. A leader generation below the local one (a recreated index) is
// left to the index loop, which recreates the copy.
func (f *Follower) reached(name string, leaderGen uint64) {
	f.mu.Lock()
	fi := f.mu.indexes[name]
	f.mu.Unlock()
	if fi == nil {
		return
	}
	fi.mu.Lock()
	stale := fi.state != client.ReplicationDisconnected && leaderGen < fi.leaderGeneration
	fi.mu.Unlock()
	if stale {
		return // the index loop has seen a newer generation than this list
	}
	local, _, exists, err := f.local(name)
	if err != nil || (exists && leaderGen < local) {
		return
	}
	state := client.ReplicationFollowing
	if !exists || local < leaderGen {
		state = client.ReplicationCatchingUp
	}
	fi.observe(state, leaderGen, local)
}

// start starts the loop of name unless it runs.
func (f *Follower) start(ctx context.Context, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi := f.mu.indexes[name]
	if fi != nil && fi.done != nil {
		return
	}
	if fi == nil {
		fi = &followed{state: client.ReplicationCatchingUp}
		f.mu.indexes[name] = fi
	}
	ictx, stop := context.WithCancel(ctx)
	fi.stop, fi.done = stop, make(chan struct{})
	go func() {
		defer close(fi.done)
		f.follow(ictx, name, fi)
	}()
}

// remove stops following name and deletes the local index (the leader
// deleted it).
func (f *Follower) remove(ctx context.Context, name string) {
	f.mu.Lock()
	var stop context.CancelFunc
	var done chan struct{}
	if fi := f.mu.indexes[name]; fi != nil {
		stop, done = fi.stop, fi.done
	}
	delete(f.mu.indexes, name)
	f.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	err := f.reg.Delete(ctx, name)
	switch {
	case err == nil:
		f.log.Info("Index deleted on the leader; deleted here", "index", name)
	case errors.Is(err, registry.ErrIndexNotFound), errors.Is(err, registry.ErrIndexDeleting):
	default:
		f.log.Error(err, "Deleting an index the leader deleted", "index", name)
	}
	_ = f.reg.WaitDeleted(ctx, name)
}

// markDisconnected marks every followed index disconnected.
func (f *Follower) markDisconnected() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fi := range f.mu.indexes {
		fi.disconnected()
	}
}

// stopAll stops every index loop and waits for them.
func (f *Follower) stopAll() {
	// The channels are taken under the lock: an index loop that ends
	// clears fi.done (under the lock) before its channel closes, so
	// reading fi.done after the unlock could wait on nil forever.
	f.mu.Lock()
	var all []chan struct{}
	for _, fi := range f.mu.indexes {
		if fi.stop != nil {
			fi.stop()
			all = append(all, fi.done)
		}
	}
	f.mu.Unlock()
	for _, done := range all {
		<-done
	}
}

// follow is one index's loop: it ends when ctx does or when the leader no
// longer has the index (the list loop deletes it here then).
func (f *Follower) follow(ctx context.Context, name string, fi *followed) {
	defer func() {
		f.mu.Lock()
		fi.stop, fi.done = nil, nil
		f.mu.Unlock()
	}()
	backoff := f.cfg.BackoffMin
	for ctx.Err() == nil {
		err := f.step(ctx, name, fi)
		var api *client.APIError
		switch {
		case err == nil:
			backoff = f.cfg.BackoffMin
			continue
		case ctx.Err() != nil:
			return
		case errors.As(err, &api) && api.Code == client.CodeIndexNotFound:
			return
		case errors.As(err, &api) && api.Code == client.CodeHoldNotFound:
			continue // the hold expired: copy what is committed now
		}
		f.log.Error(err, "Replication step failed; retrying", "index", name, "retryIn", backoff.String())
		if !errors.Is(err, errRefused) {
			fi.disconnected()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, f.cfg.BackoffMax)
	}
}

// errRefused marks a copy the follower refused (a file failed its
// validation or was short): the leader is reachable.
var errRefused = errors.New("replication: copy refused")

// localIndex returns the generation the follower serves for name and
// its UID (0 and empty when it has no such index).
func (f *Follower) localIndex(name string) (uint64, string, error) {
	h, err := f.reg.Acquire(name)
	if errors.Is(err, registry.ErrIndexNotFound) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	defer h.Release()
	idx, err := h.Index()
	if err != nil {
		return 0, "", err
	}
	return idx.Generation(), idx.UID(), nil
}

// ensure returns a handle on the local index name with schema of meta,
// recreating it when the leader's index is another one (recreated).
func (f *Follower) ensure(ctx context.Context, name string, st *client.ReplicationState) (*registry.Handle, error) {
	meta, err := decodeMetadata(st.Metadata)
	if err != nil {
		return nil, err
	}
	_, err = f.reg.CreateCopy(ctx, name, meta.Schema, meta.UID)
	if errors.Is(err, registry.ErrIndexExists) {
		f.log.Info("The leader's index has another schema: recreating it here", "index", name)
		if err := f.recreate(ctx, name); err != nil {
			return nil, err
		}
		_, err = f.reg.CreateCopy(ctx, name, meta.Schema, meta.UID)
	}
	if err != nil {
		return nil, fmt.Errorf("replication: create index %s: %w", name, err)
	}
	return f.reg.Acquire(name)
}

// recreate deletes the local index name and waits for its deletion.
func (f *Follower) recreate(ctx context.Context, name string) error {
	if err := f.reg.Delete(ctx, name); err != nil && !errors.Is(err, registry.ErrIndexDeleting) {
		return fmt.Errorf("replication: delete index %s to recreate it: %w", name, err)
	}
	return f.reg.WaitDeleted(ctx, name)
}
