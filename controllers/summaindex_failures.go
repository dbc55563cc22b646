package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	summav1 "github.com/summadev/summa/api/v1"
)

// Annotations a user sets on a SummaIndex (contract, "Failures and
// control").
const (
	// AnnotationReconcile set to ReconcilePaused stops every change to the
	// index's pod (no drain, no restart, no doctor step) until it is
	// removed; status is still kept current and deletion is still
	// honoured (ECK's managed=false).
	AnnotationReconcile = "summa.dev/reconcile"
	// ReconcilePaused is the value of AnnotationReconcile that pauses.
	ReconcilePaused = "paused"
	// AnnotationRestartedAt, set to any new value, asks for one drained
	// restart (the `kubectl rollout restart` idiom): the value is copied
	// onto the pod, so it is part of the pod's revision.
	AnnotationRestartedAt = "summa.dev/restartedAt"
)

// paused reports whether index's pod must not be changed.
func paused(index *summav1.SummaIndex) bool {
	return index.Annotations[AnnotationReconcile] == ReconcilePaused
}

// Reasons of Degraded set by a failing step. Each names what failed; the
// message is the error, which says what to do.
const (
	// ReasonVolumeFailed: the data volume could not be created or updated.
	ReasonVolumeFailed = "VolumeFailed"
	// ReasonVolumeExpansionRefused: the storage class does not allow the
	// volume to grow, or the API refused the new size.
	ReasonVolumeExpansionRefused = "VolumeExpansionRefused"
	// ReasonServiceFailed: the Service could not be created or updated.
	ReasonServiceFailed = "ServiceFailed"
	// ReasonPodInvalid: the API server refused the engine pod as invalid
	// (usually spec.podTemplate).
	ReasonPodInvalid = "PodInvalid"
	// ReasonQuotaExceeded: a ResourceQuota refused an object.
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonPodFailed: the engine pod could not be created, read or
	// replaced for another reason.
	ReasonPodFailed = "PodFailed"
	// ReasonEngineUnreachable: the pod is ready but the engine does not
	// answer the operator.
	ReasonEngineUnreachable = "EngineUnreachable"
	// ReasonReconcileError: any other error that stopped a step.
	ReasonReconcileError = "ReconcileError"
)

// stepError is an error of a reconcile step with the Degraded reason it
// stands for.
type stepError struct {
	// reason is the Degraded reason.
	reason string
	// err is the cause, with context.
	err error
}

// Error is the cause's text.
func (e *stepError) Error() string { return e.err.Error() }

// Unwrap returns the cause.
func (e *stepError) Unwrap() error { return e.err }

// failed marks err (nil stays nil) as the failure of a step with reason,
// refined for the API server's refusals every step can meet: an invalid
// object and an exceeded quota.
func failed(reason string, err error) error {
	if err == nil {
		return nil
	}
	var se *stepError
	if errors.As(err, &se) {
		return err
	}
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota"):
		reason = ReasonQuotaExceeded
	case apierrors.IsInvalid(err) && reason == ReasonPodFailed:
		reason = ReasonPodInvalid
	}
	return &stepError{reason: reason, err: err}
}

// returned is err as the controller's error path sees it: nil for a
// step's failure, which report already showed (Degraded, a rate-limited
// Warning event and one Info log line) and which is retried after
// failureRetry, or sooner when the step asked for its own retry. Only an
// unclassified error goes to controller-runtime, which logs it and backs
// off.
func returned(err error) error {
	var se *stepError
	if errors.As(err, &se) {
		return nil
	}
	return err
}

// failureReason is the Degraded reason of err.
func failureReason(err error) string {
	var se *stepError
	if errors.As(err, &se) {
		return se.reason
	}
	return ReasonReconcileError
}

// failures collects the errors of one pass: a failing step is recorded and
// the others still run.
type failures []error

// add records err when it is not nil.
func (f *failures) add(err error) {
	if err != nil {
		*f = append(*f, err)
	}
}

// dropConflicts removes the optimistic-lock conflicts from f and reports
// whether there were any.
func (f *failures) dropConflicts() bool {
	kept := (*f)[:0]
	for _, err := range *f {
		if !apierrors.IsConflict(err) {
			kept = append(kept, err)
		}
	}
	dropped := len(kept) < len(*f)
	*f = kept
	return dropped
}

// conflictRetry is when a pass that met a write conflict runs again.
const conflictRetry = time.Second

// report shows this pass's failures on index: one Warning event and one Info
// log line per failure (rate-limited), and Degraded decided from
// everything true now (summaindex_conditions.go), cleared with a Normal
// event when nothing holds any more; Stalled from the same causes
// (summaindex_kstatus.go).
func (r *SummaIndexReconciler) report(ctx context.Context, index *summav1.SummaIndex, f failures) {
	for _, err := range f {
		reason := failureReason(err)
		if r.warnings.due(index, reason, err.Error()) {
			r.event(index, nil, corev1.EventTypeWarning, reason, "%v", err)
			log.FromContext(ctx).Info("Reconcile step failed", "reason", reason, "error", err.Error())
		}
	}
	cs := degradedCauses(index, f)
	if was := setDegraded(index, cs); was != "" {
		r.event(index, nil, corev1.EventTypeNormal, "Recovered", "%s cleared", was)
		r.warnings.forget(index)
	}
	setStalled(index, cs)
}

// clip shortens s to at most n bytes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// warningInterval is how often the same failure of the same index is
// recorded again as an event while it lasts.
const warningInterval = 10 * time.Minute

// warningLimiter remembers the last Warning event of each index and reason,
// so that a failure that lasts is recorded when it starts, when its message
// changes, and then every warningInterval: not on every pass.
type warningLimiter struct {
	mu   sync.Mutex
	last map[string]warningSeen
}

// warningSeen is the last event of one index and reason.
type warningSeen struct {
	message string
	at      time.Time
}

// due reports whether an event of reason with message is to be recorded
// now for index, and remembers it when so.
func (l *warningLimiter) due(index *summav1.SummaIndex, reason, message string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = map[string]warningSeen{}
	}
	key := warningKeyPrefix(client.ObjectKeyFromObject(index)) + string(index.UID) + "/" + reason
	seen, ok := l.last[key]
	now := time.Now()
	if ok && seen.message == message && now.Sub(seen.at) < warningInterval {
		return false
	}
	l.last[key] = warningSeen{message: message, at: now}
	return true
}

// warningKeyPrefix starts the limiter's keys of the index named key.
func warningKeyPrefix(key client.ObjectKey) string {
	return key.Namespace + "/" + key.Name + "/"
}

// forget drops what was remembered of index.
func (l *warningLimiter) forget(index *summav1.SummaIndex) {
	l.forgetPrefix(warningKeyPrefix(client.ObjectKeyFromObject(index)) + string(index.UID) + "/")
}

// forgetName drops what was remembered of every index that had this name:
// called once an index is gone, so that the limiter does not grow with
// every index ever deleted.
func (l *warningLimiter) forgetName(key client.ObjectKey) {
	l.forgetPrefix(warningKeyPrefix(key))
}

// forgetPrefix drops the entries whose key starts with prefix.
func (l *warningLimiter) forgetPrefix(prefix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.last {
		if strings.HasPrefix(k, prefix) {
			delete(l.last, k)
		}
	}
}

// failureRetry is when a pass in which a step failed runs again.
const failureRetry = 10 * time.Second

// reconcilePaused keeps status current without changing the pod: no
// creation, drain, restart or doctor step. A drain this operator started
// before the pause is taken back (writes admitted again), so a paused index
// is never left refusing writes.
func (r *SummaIndexReconciler) reconcilePaused(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod) (reconcile.Result, error) {
	if prev := index.GetCondition(summav1.ConditionProgressing); prev == nil || prev.Reason != ReasonPaused {
		r.event(index, nil, corev1.EventTypeNormal, ReasonPaused,
			"annotation %s=%s: the operator changes nothing of the engine pod until it is removed", AnnotationReconcile, ReconcilePaused)
	}
	defer setCondition(index, summav1.ConditionProgressing, false, ReasonPaused,
		"annotation "+AnnotationReconcile+"="+ReconcilePaused+": pod changes are paused; status is kept current")
	if pod == nil || pod.DeletionTimestamp != nil {
		index.Status.PodName, index.Status.PodUID = "", ""
		setCondition(index, summav1.ConditionReady, false, ReasonPaused, "no engine pod runs and reconciliation is paused")
		return reconcile.Result{RequeueAfter: r.Options.ResyncPeriod}, nil
	}
	index.Status.PodName, index.Status.PodUID = pod.Name, pod.UID
	index.Status.CurrentRevision = pod.Annotations[AnnotationRevision]
	if index.Status.DrainStartTime != nil {
		if err := r.resumeEngine(ctx, index, pod); err != nil {
			return reconcile.Result{}, failed(ReasonEngineUnreachable, err)
		}
	}
	if !engineReady(pod) {
		key := client.ObjectKeyFromObject(index)
		_, silent, err := r.resumeStrayDrain(ctx, index, pod)
		if err != nil {
			return reconcile.Result{RequeueAfter: pollInterval}, failed(ReasonEngineUnreachable, err)
		}
		markRunning(index, false, pod)
		if silent {
			return reconcile.Result{RequeueAfter: r.unreachable.next(key, r.Options.ResyncPeriod)}, nil
		}
		return reconcile.Result{RequeueAfter: notReadyPoll}, nil
	}
	if err := r.observeEngine(ctx, index, pod); err != nil {
		markRunning(index, false, pod)
		err = failed(ReasonEngineUnreachable, fmt.Errorf("engine pod %s is ready but its engine does not answer: %w", pod.Name, err))
		setCondition(index, summav1.ConditionReady, false, ReasonEngineUnreachable, err.Error())
		return reconcile.Result{RequeueAfter: r.unreachable.next(client.ObjectKeyFromObject(index), r.Options.ResyncPeriod)}, err
	}
	r.unreachable.reset(client.ObjectKeyFromObject(index))
	markRunning(index, true, pod)
	return reconcile.Result{RequeueAfter: r.Options.ResyncPeriod}, nil
}

// ReasonPaused is the Progressing reason while reconciliation is paused.
const ReasonPaused = "ReconcilePaused"

// messageLength bounds status.message (a printer column).
const messageLength = 120

// summarize sets status.message from the conditions: the Degraded reason
// and message when it is True, else why the index is not Ready.
func summarize(index *summav1.SummaIndex) {
	msg := ""
	if c := index.GetCondition(summav1.ConditionDegraded); c != nil && c.Status == "True" {
		msg = c.Reason + ": " + c.Message
	} else if c := index.GetCondition(summav1.ConditionReady); c != nil && c.Status != "True" && index.Status.Phase != summav1.PhaseSuspended {
		msg = c.Message
	}
	index.Status.Message = clip(strings.Join(strings.Fields(msg), " "), messageLength)
}
