package controllers

import (
	"fmt"
	"strings"

	summav1 "github.com/summadev/summa/api/v1"
)

// Degraded is decided once per pass, at its end, from what is true at that
// moment, never left over from an earlier pass: the failures of this
// pass's steps, a restart whose drains keep timing out, the engine's
// durability, a schema conflict, and a doctor run that failed while its
// cause lasts. When none holds, Degraded is False, whichever step set it.

// Degraded reasons that are not a step's failure.
const (
	// ReasonDrainTimeout: the drain before a restart, suspend or doctor
	// run timed out; the pod keeps running and the drain is retried with
	// backoff.
	ReasonDrainTimeout = "DrainTimeout"
	// ReasonDurabilityDegraded: the engine reports a failed directory
	// fsync after a commit.
	ReasonDurabilityDegraded = "DurabilityDegraded"
	// ReasonDoctorFailed: the last doctor run failed and the engine is not
	// serving yet, or still reports quarantined segments.
	ReasonDoctorFailed = "DoctorFailed"
	// ReasonSchemaConflict: the volume holds an index of this name with
	// another schema.
	ReasonSchemaConflict = "SchemaConflict"
)

// cause is one reason for Degraded=True.
type cause struct {
	reason, message string
}

// degradedCauses lists why index is degraded now, the pass's failures f first.
func degradedCauses(index *summav1.SummaIndex, f failures) []cause {
	var cs []cause
	for _, err := range f {
		cs = append(cs, cause{failureReason(err), err.Error()})
	}
	if index.Status.DrainFailures > 0 {
		msg := fmt.Sprintf("%d drain(s) in a row did not finish within %s", index.Status.DrainFailures, index.Spec.Lifecycle.DrainTimeout())
		if t := index.Status.LastDrainFailureTime; t != nil {
			msg += ", the last at " + t.UTC().Format("15:04:05Z")
		}
		msg += "; the pod keeps running and the drain is retried with backoff (the DrainTimedOut event says what was left)"
		cs = append(cs, cause{ReasonDrainTimeout, msg})
	}
	if v := index.Status.Volume; v != nil && v.Resize == summav1.VolumeResizeFailed {
		cs = append(cs, cause{ReasonVolumeExpansionFailed, "volume " + v.ClaimName + " could not grow: " + v.Message})
	}
	cs = append(cs, storageCauses(index)...)
	if index.Status.DurabilityDegraded {
		cs = append(cs, cause{ReasonDurabilityDegraded, "a directory fsync failed after a commit; the engine's disk needs attention"})
	}
	if doctorFailed(index) && doctorFailureLasts(index) {
		cs = append(cs, cause{ReasonDoctorFailed, "doctor run " + index.Status.Doctor.RequestID + " failed: " + index.Status.Doctor.Message})
	}
	return cs
}

// doctorFailureLasts reports whether a failed doctor run still matters:
// quarantined segments remain, or the engine has not served again since
// (a suspended index serves nothing and waits for nothing).
func doctorFailureLasts(index *summav1.SummaIndex) bool {
	if index.IsConditionTrue(summav1.ConditionDoctorRequired) {
		return true
	}
	return !index.Spec.Suspend && !index.IsReady()
}

// setDegraded sets Degraded from causes and reports whether it went from
// True to False (a recovery, worth an event).
func setDegraded(index *summav1.SummaIndex, cs []cause) (recovered string) {
	cur := index.GetCondition(summav1.ConditionDegraded)
	if len(cs) == 0 {
		switch {
		case cur != nil && cur.Status == "True":
			was := cur.Reason
			setCondition(index, summav1.ConditionDegraded, false, "Recovered", "the failure ("+was+") went away")
			return was
		case cur == nil:
			setCondition(index, summav1.ConditionDegraded, false, "Healthy", "")
		}
		return ""
	}
	msgs := make([]string, 0, len(cs))
	for _, c := range cs {
		msgs = append(msgs, c.reason+": "+c.message)
	}
	msg := cs[0].message
	if len(cs) > 1 {
		msg = strings.Join(msgs, "; ")
	}
	setCondition(index, summav1.ConditionDegraded, true, cs[0].reason, clip(msg, 1024))
	return ""
}
