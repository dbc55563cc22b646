package controllers

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	summav1 "github.com/summadev/summa/api/v1"
)

// kstatus' conditions. GitOps tools (Flux, and every tool built on
// sigs.k8s.io/cli-utils' kstatus) read a custom resource from three
// things only: status.observedGeneration against metadata.generation, and
// the standard conditions Reconciling and Stalled; without them they fall
// back to Ready. So both are kept in step with the conditions the operator
// decides (Ready, Progressing, Degraded):
//
//   - Stalled is decided with Degraded (report), from the same causes: True
//     when one of them is a cause that waiting does not clear
//     (stalledReasons), with that cause's reason and message.
//   - Reconciling is decided from the whole status on every status write
//     (statusWriter.write): True while the operator works toward the spec,
//     False when it is done, when the index is suspended or paused, and
//     when it is Stalled (the two are never True together).
//
// observedGeneration reads 0 (a default of the CRD) until the first pass
// writes it, with Reconciling=True: an index is never read as done before
// the operator saw it.

// stalledReasons are the Degraded reasons that waiting does not clear: a
// person must change the spec, a Secret, a quota, the storage or the
// engine's disk. The other reasons (an engine that does not answer yet, a
// Secret not created yet, an API error, an object still being garbage
// collected) are retried and read as Reconciling.
var stalledReasons = map[string]bool{
	ReasonPodInvalid:               true,
	ReasonInvalidPodTemplate:       true,
	ReasonQuotaExceeded:            true,
	ReasonVolumeExpansionRefused:   true,
	ReasonVolumeExpansionFailed:    true,
	ReasonDrainTimeout:             true,
	ReasonDoctorFailed:             true,
	ReasonSchemaConflict:           true,
	ReasonDurabilityDegraded:       true,
	ReasonCredentialsSecretInvalid: true,
	ReasonTLSSecretInvalid:         true,
	ReasonSecretConflict:           true,
	ReasonNetworkPolicyConflict:    true,
	ReasonUnauthorized:             true,
}

// Reasons of Reconciling and Stalled that are not another condition's.
const (
	// ReasonNotStalled: Stalled is False, nothing needs a person.
	ReasonNotStalled = "NotStalled"
	// ReasonReconciled: Reconciling is False, the engine serves the spec.
	ReasonReconciled = "Reconciled"
	// ReasonNewGeneration: the spec changed and the operator has not
	// decided on it yet.
	ReasonNewGeneration = "NewGeneration"
	// ReasonVolumeResizing: the data volume grows to spec.storage.size.
	ReasonVolumeResizing = "VolumeResizing"
	// ReasonRestartPending: the engine pod runs an older revision.
	ReasonRestartPending = "RestartPending"
)

// setStalled sets Stalled from Degraded's causes cs: True with the first
// cause that waiting does not clear (and the others of that kind in the
// message), else False.
func setStalled(index *summav1.SummaIndex, cs []cause) {
	var stuck []cause
	for _, c := range cs {
		if stalledReasons[c.reason] {
			stuck = append(stuck, c)
		}
	}
	if len(stuck) == 0 {
		setCondition(index, summav1.ConditionStalled, false, ReasonNotStalled, "")
		return
	}
	msg := stuck[0].message
	if len(stuck) > 1 {
		msgs := make([]string, 0, len(stuck))
		for _, c := range stuck {
			msgs = append(msgs, c.reason+": "+c.message)
		}
		msg = strings.Join(msgs, "; ")
	}
	setCondition(index, summav1.ConditionStalled, true, stuck[0].reason, clip(msg, 1024))
}

// setReconciling sets Reconciling from the rest of index's status.
func setReconciling(index *summav1.SummaIndex) {
	if s := index.GetCondition(summav1.ConditionStalled); s != nil && s.Status == metav1.ConditionTrue {
		setCondition(index, summav1.ConditionReconciling, false, s.Reason,
			"progress is blocked until a person acts (see the Stalled condition)")
		return
	}
	reason, msg, busy := reconcilingCause(index)
	setCondition(index, summav1.ConditionReconciling, busy, reason, clip(msg, 1024))
}

// reconcilingCause says whether the operator still works toward index's spec,
// and why (or why not).
func reconcilingCause(index *summav1.SummaIndex) (reason, message string, busy bool) {
	ready := index.GetCondition(summav1.ConditionReady)
	progressing := index.GetCondition(summav1.ConditionProgressing)
	degraded := index.GetCondition(summav1.ConditionDegraded)
	readyWhy := func(fallback string) (string, string) {
		if ready != nil && ready.Status != metav1.ConditionTrue {
			return ready.Reason, ready.Message
		}
		return fallback, ""
	}
	switch {
	case index.DeletionTimestamp != nil:
		return "Deleting", "the SummaIndex is being deleted", true
	case index.Status.ObservedGeneration != index.Generation:
		return ReasonNewGeneration, fmt.Sprintf("generation %d is not reconciled yet (status is of generation %d)",
			index.Generation, index.Status.ObservedGeneration), true
	case paused(index):
		return ReasonPaused, "annotation " + AnnotationReconcile + "=" + ReconcilePaused +
			": the operator changes nothing of the engine pod, so nothing is in progress", false
	case progressing != nil && progressing.Status == metav1.ConditionTrue:
		return progressing.Reason, progressing.Message, true
	case doctorActive(index):
		return "DoctorRequested", "a doctor run is in progress", true
	case index.Status.DrainStartTime != nil:
		return "Draining", "the engine drains before its pod stops", true
	}
	switch index.Status.Phase {
	case "", summav1.PhasePending, summav1.PhaseDraining, summav1.PhaseRestarting,
		summav1.PhaseRepairing, summav1.PhaseDeleting:
		phase := index.Status.Phase
		if phase == "" {
			phase = summav1.PhasePending
		}
		r, m := readyWhy(string(phase))
		return r, m, true
	case summav1.PhaseSuspended:
		// Stopped on purpose: done, though never Ready (a volume resize
		// finishes when the engine mounts the volume again).
		return "Suspended", "spec.suspend is set: the engine is stopped, the volume kept", false
	}
	if u := index.Status.UpdateRevision; u != "" && u != index.Status.CurrentRevision {
		return ReasonRestartPending, "the engine pod runs revision " + index.Status.CurrentRevision + ", the spec asks for " + u, true
	}
	if v := index.Status.Volume; v != nil {
		switch v.Resize {
		case summav1.VolumeResizePending, summav1.VolumeResizeInProgress, summav1.VolumeResizeFileSystemPending:
			return ReasonVolumeResizing, "volume " + v.ClaimName + " grows (" + v.Resize + ")", true
		}
	}
	if degraded != nil && degraded.Status == metav1.ConditionTrue {
		// Not a stalling cause (setReconciling checked): retried.
		return degraded.Reason, "retried: " + degraded.Message, true
	}
	if ready == nil || ready.Status != metav1.ConditionTrue {
		r, m := readyWhy("PodNotReady")
		return r, m, true
	}
	return ReasonReconciled, fmt.Sprintf("the engine serves generation %d of the spec", index.Generation), false
}
