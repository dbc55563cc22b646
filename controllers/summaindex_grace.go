package controllers

import (
	"math"

	summav1 "github.com/summadev/summa/api/v1"
)

// Termination-grace sizing. The engine reports drainEstimateSeconds, how
// long a drain would take right now; the pod's grace must cover it, plus
// the engine's shutdown margin, with room for the estimate to be wrong.
// Kubernetes cannot change the grace of a running pod, and a restart for
// it would come when the engine is busiest (its backlog is what grew the
// estimate), so the grace is not part of the pod's revision
// (summaindex_revision.go): a new estimate never restarts the engine by
// itself. Each pod the operator makes anyway (a spec change, restartedAt,
// a new image, the doctor, a lost pod) gets the grace the last estimate
// asks for, larger or smaller than its predecessor's. The estimate is the
// last one read before the drain that ends the previous pod
// (observeEngine keeps it while a drain runs), not the near-zero one of a
// drained engine.
const (
	// graceSafetyFactor multiplies the estimate: estimates are measured
	// rates and can be low by half.
	graceSafetyFactor = 2.0
	// graceFixedSeconds is added for process exit, the ordered shutdown
	// and the engine's own shutdown margin.
	graceFixedSeconds = 10
	// graceBand: the next pod keeps its predecessor's grace unless the
	// target differs from it by this fraction (and at least
	// graceBandMinSeconds), so that a noisy estimate does not move the
	// grace, its events and the engine's deadline at every restart.
	graceBand = 0.25
	// graceBandMinSeconds is the smallest change of the grace made.
	graceBandMinSeconds = 5
)

// graceTarget is the grace period the estimate asks for, plus the app
// containers' stop time when the engine is their sidecar (it gets SIGTERM
// only after them), clamped to the spec's bounds.
func graceTarget(index *summav1.SummaIndex, estimate float64) int64 {
	lo, hi := index.Spec.Lifecycle.GraceBounds()
	if math.IsNaN(estimate) || estimate < 0 {
		estimate = 0
	}
	want := int64(math.Ceil(estimate*graceSafetyFactor)) + graceFixedSeconds + appShutdownSeconds(index)
	return min(max(want, int64(lo)), int64(hi))
}

// nextGrace decides the grace of the next pod from the running (or last)
// one and the latest estimate (nil when none was observed).
//
//   - No current grace (first pod): the target.
//   - Target above or below the current grace by the band: the target.
//     The grace grows for a drain that needs more time, and shrinks again
//     when the estimate fell.
//   - Otherwise the current grace, clamped into the spec's bounds (they
//     may have changed).
func nextGrace(index *summav1.SummaIndex, current int64, estimate *float64) int64 {
	lo, hi := index.Spec.Lifecycle.GraceBounds()
	est := 0.0
	if estimate != nil {
		est = *estimate
	}
	target := graceTarget(index, est)
	if current <= 0 {
		return target
	}
	current = min(max(current, int64(lo)), int64(hi))
	band := max(graceBandMinSeconds, int64(float64(current)*graceBand))
	if target-current >= band || current-target >= band {
		return target
	}
	return current
}
