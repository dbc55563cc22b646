package controllers

import (
	"math"

	summav1 "github.com/summadev/summa/api/v1"
)

// Termination-grace sizing. The engine reports drainEstimateSeconds, how
// long a drain would take right now; the pod's grace must cover it, plus
// the engine's shutdown margin, with room for the estimate to be wrong.
// The grace is part of the pod's revision, so changing it means a drain
// and a restart: it moves only when the change is worth one.
const (
	// graceSafetyFactor multiplies the estimate: estimates are measured
	// rates and can be low by half.
	graceSafetyFactor = 2.0
	// graceFixedSeconds is added for process exit, the ordered shutdown
	// and the engine's own shutdown margin.
	graceFixedSeconds = 10
	// graceGrowthBand: a running pod's grace grows only when the target
	// exceeds it by this fraction (and at least graceGrowthMinSeconds).
	graceGrowthBand = 0.25
	// graceGrowthMinSeconds is the smallest growth worth a restart.
	graceGrowthMinSeconds = 5
)

// graceTarget is the grace period the estimate asks for, plus the app
// containers' stop time when the engine is their sidecar (it gets SIGTERM
// only after them), clamped to the spec's bounds.
func graceTarget(x *summav1.SummaIndex, estimate float64) int64 {
	lo, hi := x.Spec.Lifecycle.GraceBounds()
	if math.IsNaN(estimate) || estimate < 0 {
		estimate = 0
	}
	want := int64(math.Ceil(estimate*graceSafetyFactor)) + graceFixedSeconds + appShutdownSeconds(x)
	return min(max(want, int64(lo)), int64(hi))
}

// nextGrace decides the grace of the desired pod from the current one and
// the latest estimate (nil when none was observed).
//
//   - No current grace (first pod): the target.
//   - Outside the spec's bounds (the bounds changed): clamped into them.
//   - Target above the current grace by the growth band: grow to the
//     target. A pod whose drain needs more time than its grace would lose
//     accepted writes on an eviction, which is worth a restart.
//   - Otherwise keep it. The grace does not shrink, not even when a pod
//     is created anyway: the pod that replaces one restarted for a larger
//     grace is created right after the drain committed the backlog that
//     asked for it, when the estimate is low, and a smaller grace then
//     would only be grown again by the next backlog (another restart).
//     Shrinking is left to a grace kept out of the pod's revision.
func nextGrace(x *summav1.SummaIndex, current int64, estimate *float64) int64 {
	lo, hi := x.Spec.Lifecycle.GraceBounds()
	est := 0.0
	if estimate != nil {
		est = *estimate
	}
	target := graceTarget(x, est)
	switch {
	case current <= 0:
		return target
	case current < int64(lo) || current > int64(hi):
		return min(max(current, int64(lo)), int64(hi))
	case target > current && target-current >= max(graceGrowthMinSeconds, int64(float64(current)*graceGrowthBand)):
		return target
	}
	return current
}
