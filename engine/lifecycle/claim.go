package lifecycle

import (
	"fmt"
	"sync"

	"github.com/summadev/summa/engine/segid"
)

// Claim is an active-operation ownership of one ID: a new output claimed
// before its first file is written (L07) or a rewrite source (L08).
type Claim struct {
	// m is the owning manager.
	m *Manager
	// ID is the claimed segment ID.
	ID segid.ID
	// op names the operation, for diagnostics.
	op string
	// once makes Release and Abandon idempotent (L06).
	once sync.Once
}

// Claim allocates a fresh ID and registers it as an active operation's
// output before any file exists (L07), so the orphan sweep cannot touch a
// partial builder.
func (m *Manager) Claim(op string) (*Claim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return nil, ErrClosed
	}
	id := m.mu.nextID
	m.mu.nextID++
	m.mu.active[id] = op
	return &Claim{m: m, ID: id, op: op}, nil
}

// ClaimExisting registers rewrite sources as held by op (L08). It fails if
// any of them is already held by another operation, so two rewrites of one
// segment cannot overlap; on failure nothing is claimed.
func (m *Manager) ClaimExisting(op string, ids ...segid.ID) ([]*Claim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return nil, ErrClosed
	}
	for _, id := range ids {
		if holder, held := m.mu.active[id]; held {
			return nil, fmt.Errorf("%w: %s held by %s", ErrAlreadyClaimed, id, holder)
		}
	}
	out := make([]*Claim, len(ids))
	for i, id := range ids {
		m.mu.active[id] = op
		out[i] = &Claim{m: m, ID: id, op: op}
	}
	return out, nil
}

// Release drops the active-operation owner. Call it only after the next
// owner (metadata, via Publish) is installed (L03); if nobody else holds
// the ID any more its files are deleted.
func (c *Claim) Release() {
	c.once.Do(func() {
		c.m.mu.Lock()
		delete(c.m.mu.active, c.ID)
		c.m.mu.Unlock()
		c.m.deleteIfUnowned(c.ID)
	})
}

// Abandon gives up an unpublished output: the tracker's deferred deletion
// is installed first, then the active owner is released, which deletes the
// files unless metadata or a reader holds the ID (L05). It is idempotent
// and safe from a deferred panic handler (L06).
func (c *Claim) Abandon() {
	c.once.Do(func() {
		c.m.mu.Lock()
		c.m.mu.retired[c.ID] = struct{}{}
		delete(c.m.mu.active, c.ID)
		c.m.mu.Unlock()
		c.m.deleteIfUnowned(c.ID)
	})
}

// AbandonAll abandons every claim.
func AbandonAll(claims []*Claim) {
	for _, c := range claims {
		c.Abandon()
	}
}

// ReleaseAll releases every claim.
func ReleaseAll(claims []*Claim) {
	for _, c := range claims {
		c.Release()
	}
}

// ClaimIncoming registers IDs allocated elsewhere (a follower copying a
// leader's generation, F02) as held by op before any of their files is
// written, and raises the next ID above them so that a later Claim (after
// promotion) never reuses one. It fails, claiming nothing, when an ID is
// held by metadata, an operation or a reader. An ID only retired (a copy
// given up whose files could not all be deleted) is taken over: the new
// copy overwrites its files. A deletion of one of the IDs still running
// is waited for first, so that it cannot remove the new files.
func (m *Manager) ClaimIncoming(op string, ids ...segid.ID) ([]*Claim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.deletingAnyLocked(ids) {
		m.mu.Unlock()
		m.deletes.Wait()
		m.mu.Lock()
	}
	if m.mu.closed {
		return nil, ErrClosed
	}
	for _, id := range ids {
		if o := m.ownersLocked(id); o.Owned() {
			return nil, fmt.Errorf("%w: incoming %s is already owned (%+v)", ErrAlreadyClaimed, id, o)
		}
	}
	out := make([]*Claim, len(ids))
	for i, id := range ids {
		delete(m.mu.retired, id)
		m.mu.active[id] = op
		if id >= m.mu.nextID {
			m.mu.nextID = id + 1
		}
		out[i] = &Claim{m: m, ID: id, op: op}
	}
	return out, nil
}

// deletingAnyLocked reports whether a deletion of one of ids is running.
// REQUIRES: m.mu held.
func (m *Manager) deletingAnyLocked(ids []segid.ID) bool {
	for _, id := range ids {
		if _, busy := m.mu.deleting[id]; busy {
			return true
		}
	}
	return false
}
