// Package replication copies committed generations from a leader to read
// followers (docs/server.md, "Read followers"; docs/engine.md, rules
// F01 to F05). The leader side is Holds: time-bounded tracker holds on the
// committed generation a follower is copying. The follower side is
// Follower: a loop per index that long-polls the leader, downloads the
// files it lacks, and publishes each generation through the index's own
// commit point (index.Incoming).
package replication

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/summadev/summa/engine/index"
	"github.com/summadev/summa/engine/metadata"
)

// DefaultHoldTTL is how long a hold lives after its creation or its last
// file download.
const DefaultHoldTTL = 60 * time.Second

// ErrNoHold: the hold is unknown, expired or released (the follower polls
// again and copies the generation that is committed now).
var ErrNoHold = errors.New("replication: no such hold (expired or released)")

// ErrNotInHold: the file is not one of the held generation's.
var ErrNotInHold = errors.New("replication: file is not part of the held generation")

// Holds are the leader's time-bounded holds (F01): each keeps one
// committed generation's files on disk through a tracker reference (its
// pinned snapshot), until it is released, expires (TTL after its creation
// or last download) or the index's deletion starts. A hold adds no owner
// kind and copies nothing.
type Holds struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]*hold
}

// hold is one pinned generation.
type hold struct {
	index string
	fs    vfs.FS
	dir   string
	meta  *metadata.Metadata
	files map[string]int64
	// release drops the snapshot and the handle, once.
	release func()
	timer   *time.Timer
	done    chan struct{}
	once    sync.Once
}

// NewHolds returns an empty set of holds whose TTL is ttl (DefaultHoldTTL
// when 0 or less).
func NewHolds(ttl time.Duration) *Holds {
	if ttl <= 0 {
		ttl = DefaultHoldTTL
	}
	return &Holds{ttl: ttl, m: make(map[string]*hold)}
}

// TTL is the holds' time to live.
func (hs *Holds) TTL() time.Duration { return hs.ttl }

// Add registers a hold on meta's files in dir of fs. release (called once,
// when the hold ends) closes the pinned snapshot and whatever else keeps
// the index open; deleting, when closed, ends the hold (an index deletion
// never waits for a hold longer than that). It returns the hold's ID.
func (hs *Holds) Add(indexName string, fs vfs.FS, dir string, meta *metadata.Metadata,
	deleting <-chan struct{}, release func()) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	h := &hold{index: indexName, fs: fs, dir: dir, meta: meta, files: make(map[string]int64),
		release: release, done: make(chan struct{})}
	for _, f := range index.CommittedFiles(meta) {
		h.files[f.Name] = f.Size
	}
	hs.mu.Lock()
	hs.m[id] = h
	h.timer = time.AfterFunc(hs.ttl, func() { hs.end(id) })
	hs.mu.Unlock()
	go func() {
		select {
		case <-deleting:
			hs.end(id)
		case <-h.done:
		}
	}()
	return id
}

// Open opens file name of hold id of indexName for download and extends
// the hold by its TTL. It returns the file and its size.
func (hs *Holds) Open(indexName, id, name string) (vfs.File, int64, error) {
	hs.mu.Lock()
	h, ok := hs.m[id]
	if !ok || h.index != indexName {
		hs.mu.Unlock()
		return nil, 0, ErrNoHold
	}
	size, ok := h.files[name]
	if !ok {
		hs.mu.Unlock()
		return nil, 0, fmt.Errorf("%w: %q", ErrNotInHold, name)
	}
	h.timer.Reset(hs.ttl)
	hs.mu.Unlock()
	// The file stays on disk while the hold lives; a hold ending during
	// the download does not matter either: the open file stays readable.
	f, err := h.fs.Open(h.fs.PathJoin(h.dir, name))
	if err != nil {
		return nil, 0, fmt.Errorf("replication: open held file %s: %w", name, err)
	}
	return f, size, nil
}

// Release ends hold id of indexName now; it reports whether it existed.
func (hs *Holds) Release(indexName, id string) bool {
	hs.mu.Lock()
	h, ok := hs.m[id]
	hs.mu.Unlock()
	if !ok || h.index != indexName {
		return false
	}
	hs.end(id)
	return true
}

// Count returns the number of live holds.
func (hs *Holds) Count() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return len(hs.m)
}

// Close ends every hold (process shutdown, before the registry closes).
func (hs *Holds) Close() {
	hs.mu.Lock()
	ids := make([]string, 0, len(hs.m))
	for id := range hs.m {
		ids = append(ids, id)
	}
	hs.mu.Unlock()
	for _, id := range ids {
		hs.end(id)
	}
}

// end removes hold id and releases what it pins (F01: the last holder's
// release deletes the files a later generation retired).
func (hs *Holds) end(id string) {
	hs.mu.Lock()
	h, ok := hs.m[id]
	delete(hs.m, id)
	hs.mu.Unlock()
	if !ok {
		return
	}
	h.once.Do(func() {
		h.timer.Stop()
		close(h.done)
		h.release()
	})
}
