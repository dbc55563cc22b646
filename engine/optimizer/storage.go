package optimizer

import "time"

// A full volume pauses background maintenance rather than retrying it:
// scans start no task while Config.Storage reports the volume full (free
// space below the reserve, or a write failed for space), nor after a
// task stopped for space (ErrStorageFull) until space returns: the free
// space grew by spaceRegained since the stop, or spaceProbe passed, after
// which one task probes the volume again. A stop is not a failure of the
// task's sources: it sets no backoff.

// spaceRegained is the free space that must return after a task stopped
// for space before tasks start again.
const spaceRegained = 1 << 20

// spaceProbe is the pause after a task stopped for space when no space
// returns (a quota, say, is invisible to the free-space figure).
const spaceProbe = time.Minute

// spacePause is the optimizer's storage pause. Guarded by Optimizer.mu.
type spacePause struct {
	// stopped is set when a task stopped for space.
	stopped bool
	// free is the free space then; at is when.
	free int64
	at   time.Time
	// paused is the last scan's decision (logged when it changes).
	paused bool
}

// storage reads Config.Storage (free -1 and not full when unset).
func (o *Optimizer) storage() (free int64, full bool) {
	if o.cfg.Storage == nil {
		return -1, false
	}
	return o.cfg.Storage()
}

// stoppedForSpace records a task stopped for space at now.
func (o *Optimizer) stoppedForSpace(now time.Time) {
	free, _ := o.storage()
	o.mu.Lock()
	o.space.stopped, o.space.free, o.space.at = true, free, now
	o.mu.Unlock()
}

// pausedForStorage reports whether scans start no task for lack of space,
// logging when the pause begins and ends.
func (o *Optimizer) pausedForStorage() bool {
	free, full := o.storage()
	now := time.Now()
	o.mu.Lock()
	sp := &o.space
	if sp.stopped && !full && (free >= sp.free+spaceRegained || now.Sub(sp.at) >= spaceProbe) {
		sp.stopped = false
	}
	paused := full || sp.stopped
	changed := paused != sp.paused
	sp.paused = paused
	o.mu.Unlock()
	switch {
	case changed && paused:
		o.log.Info("Maintenance paused: the volume is full", "freeBytes", free)
	case changed:
		o.log.Info("Maintenance resumed: space returned", "freeBytes", free)
	}
	return paused
}

// StoragePaused reports whether the last scan was skipped for lack of
// space.
func (o *Optimizer) StoragePaused() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.space.paused
}
