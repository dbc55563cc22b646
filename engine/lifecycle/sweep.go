package lifecycle

import (
	"errors"
	"io/fs"
	"os"
	"sort"
	"sync/atomic"

	"github.com/summadev/summa/engine/segid"
)

// sweptTotal counts orphan IDs deleted by sweeps in this process.
var sweptTotal atomic.Int64

// SweptTotal returns the number of orphan segment IDs deleted by sweeps in
// this process (a metric).
func SweptTotal() int64 { return sweptTotal.Load() }

// SweepResult lists what an orphan sweep found.
type SweepResult struct {
	// Deleted lists the orphan IDs whose files were removed.
	Deleted []segid.ID
	// MaxSeen is the largest segment ID seen on disk (owned or not).
	MaxSeen segid.ID
	// SeenAny is true when at least one seg_ file parsed.
	SeenAny bool
}

// Sweep deletes every seg_<ID>.* file whose ID no owner holds (Q01, Q02):
// absent from metadata, from active operations and from the tracker. Names
// that do not parse are left alone. Only the exclusive writer and the
// optimizer may sweep; read-only opens never do (Q03).
func (m *Manager) Sweep() (SweepResult, error) {
	names, err := m.fs.List(m.dir)
	if err != nil {
		return SweepResult{}, err
	}
	var res SweepResult
	seen := make(map[segid.ID]struct{})
	for _, name := range names {
		id, _, ok := segid.ParseFileName(name)
		if !ok {
			continue
		}
		seen[id] = struct{}{}
		if !res.SeenAny || id > res.MaxSeen {
			res.MaxSeen, res.SeenAny = id, true
		}
	}
	m.mu.Lock()
	// An ID seen on disk is never handed out again, even if it is an orphan.
	if res.SeenAny && res.MaxSeen >= m.mu.nextID {
		m.mu.nextID = res.MaxSeen + 1
	}
	var orphans []segid.ID
	for id := range seen {
		if !m.ownersLocked(id).Owned() {
			orphans = append(orphans, id)
		}
	}
	m.mu.Unlock()
	sort.Slice(orphans, func(i, j int) bool { return orphans[i] < orphans[j] })
	var firstErr error
	for _, id := range orphans {
		m.deleteIfUnowned(id)
		m.mu.Lock()
		_, failed := m.mu.retired[id]
		m.mu.Unlock()
		if failed && firstErr == nil {
			firstErr = errors.New("lifecycle: sweep could not delete every orphan")
		}
		if !failed {
			res.Deleted = append(res.Deleted, id)
		}
	}
	sweptTotal.Add(int64(len(res.Deleted)))
	if len(res.Deleted) > 0 {
		m.log.Info("Orphan segments swept", "count", len(res.Deleted))
	}
	return res, firstErr
}

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrNotExist)
}
