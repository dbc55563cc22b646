package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	summav1 "github.com/summadev/summa/api/v1"
)

// Why the operator stops an engine pod (metric and event labels).
const (
	purposeRestart = "restart"
	purposeSuspend = "suspend"
	purposeDoctor  = "doctor"
	purposeDelete  = "delete"
)

// Drain backoff after a timed-out drain: Options.DrainBackoff (30 s by
// default) doubling to 30 min.
const (
	drainBackoffMin = 30 * time.Second
	drainBackoffMax = 30 * time.Minute
)

// drainOutcome is where a drain-then-stop stands.
type drainOutcome int

const (
	// drainWaiting: the drain runs; requeue.
	drainWaiting drainOutcome = iota
	// drainPodDeleted: drained (or nothing to drain) and the pod deletion
	// was requested; wait for the pod to go.
	drainPodDeleted
	// drainTimedOut: the engine did not drain within drainTimeoutSeconds;
	// writes were resumed and the pod keeps running.
	drainTimedOut
	// drainDone: drained, or (forced) the drain timed out; the pod is not
	// stopped yet (drainEngine only).
	drainDone
)

// drainBackoff reports whether a drain may start now, and otherwise how
// long to wait: after DrainFailures timeouts in a row, 30 s doubling.
func (r *SummaIndexReconciler) drainBackoff(index *summav1.SummaIndex) (time.Duration, bool) {
	n := index.Status.DrainFailures
	if n == 0 || index.Status.LastDrainFailureTime == nil || index.Status.DrainStartTime != nil {
		return 0, true
	}
	wait := r.Options.DrainBackoff
	for i := int32(1); i < n && wait < drainBackoffMax; i++ {
		wait *= 2
	}
	wait = min(wait, drainBackoffMax)
	left := index.Status.LastDrainFailureTime.Add(wait).Sub(r.Options.Now())
	if left <= 0 {
		return 0, true
	}
	return left, false
}

// replacePod drains the engine and deletes its pod for a purpose; the
// next reconcile creates the replacement (or not, when suspended).
func (r *SummaIndexReconciler) replacePod(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod, purpose string) (reconcile.Result, error) {
	out, err := r.drainAndStop(ctx, index, pod, purpose, false)
	if err != nil {
		// A resume that did not hold is asked again soon, not after
		// failureRetry: the engine refuses writes meanwhile.
		return reconcile.Result{RequeueAfter: r.unreachable.next(client.ObjectKeyFromObject(index), r.Options.ResyncPeriod)}, err
	}
	switch out {
	case drainTimedOut:
		wait, _ := r.drainBackoff(index)
		return reconcile.Result{RequeueAfter: wait}, nil
	case drainPodDeleted:
		phase := summav1.PhaseRestarting
		if purpose == purposeSuspend {
			phase = summav1.PhaseSuspended
		}
		notReady(index, phase, "PodStopping", "engine drained; pod "+pod.Name+" deleted", true)
	}
	return reconcile.Result{RequeueAfter: pollInterval}, nil
}

// drainAndStop drains the engine of pod through its API (the start time is
// kept in status, so an operator restart resumes the same drain), then
// deletes the pod with a precondition on its UID and its own grace period.
// A pod whose engine is not running has nothing to drain and is deleted
// at once. A drain that outlasts drainTimeoutSeconds resumes writes and
// leaves the pod running with Degraded, unless force is set (deletion of
// the SummaIndex), in which case the pod is deleted anyway and the engine
// drains once more in its SIGTERM handler.
func (r *SummaIndexReconciler) drainAndStop(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod,
	purpose string, force bool) (drainOutcome, error) {
	if !engineRunning(pod) {
		index.Status.DrainStartTime = nil
		return drainPodDeleted, r.deletePod(ctx, index, pod, purpose, "the engine was not running")
	}
	out, why, err := r.drainEngine(ctx, index, pod, purpose, force)
	if out != drainDone {
		return out, err
	}
	return drainPodDeleted, r.deletePod(ctx, index, pod, purpose, why)
}

// drainEngine is drainAndStop's drain, for a running engine: it reports
// drainDone (and why) once the engine drained, or, with force, once the
// drain timed out; the caller stops the pod.
func (r *SummaIndexReconciler) drainEngine(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod,
	purpose string, force bool) (drainOutcome, string, error) {
	lg := log.FromContext(ctx).WithValues("pod", pod.Name, "purpose", purpose)
	c, err := r.engineFor(ctx, index, pod)
	if err != nil {
		return drainWaiting, "", err
	}
	cctx, cancel := context.WithTimeout(ctx, r.Options.EngineTimeout)
	defer cancel()
	now := r.Options.Now()
	if index.Status.DrainStartTime == nil {
		// The intent is persisted before the engine is told: this pass
		// only records it (the status write at its end), and the next one
		// sends the drain. An operator killed, or a status write refused,
		// in between leaves no drained engine that nobody will resume.
		index.Status.DrainStartTime = &metav1.Time{Time: now}
		index.Status.Phase = summav1.PhaseDraining
		if purpose == purposeDoctor {
			index.Status.Phase = summav1.PhaseRepairing
		}
		if purpose == purposeDelete {
			index.Status.Phase = summav1.PhaseDeleting
		}
		setCondition(index, summav1.ConditionReady, false, "Draining", "the engine drains before its pod stops ("+purpose+")")
		setCondition(index, summav1.ConditionProgressing, true, "Draining", "the engine drains before its pod stops ("+purpose+")")
		r.event(index, pod, corev1.EventTypeNormal, "Draining", "draining the engine of %s before stopping it (%s)", pod.Name, purpose)
		lg.Info("Drain started")
		return drainWaiting, "", nil
	}
	elapsed := now.Sub(index.Status.DrainStartTime.Time)
	ds, err := c.DrainStatus(cctx)
	if err == nil && !ds.Draining {
		// The intent was recorded by the last pass (or the engine
		// restarted, or was resumed, since): send the drain now.
		if ds, err = c.Drain(cctx); err != nil {
			err = fmt.Errorf("drain the engine of %s: %w", pod.Name, err)
		}
		r.engineCalled(ctx, "drain/"+purpose)
	}
	if err == nil && ds.Drained {
		drainsTotal.WithLabelValues(purpose, "drained").Inc()
		drainSeconds.WithLabelValues(purpose).Observe(elapsed.Seconds())
		index.Status.DrainStartTime = nil
		index.Status.DrainFailures, index.Status.LastDrainFailureTime = 0, nil
		lg.Info("Engine drained", "seconds", elapsed.Seconds())
		return drainDone, fmt.Sprintf("drained in %.1fs", elapsed.Seconds()), nil
	}
	if elapsed < index.Spec.Lifecycle.DrainTimeout() {
		if err != nil {
			lg.Info("Drain status not available yet", "error", err.Error())
		}
		return drainWaiting, "", nil
	}
	reason := fmt.Sprintf("the engine did not drain within %s", index.Spec.Lifecycle.DrainTimeout())
	if err != nil {
		reason += ": " + err.Error()
	} else {
		reason += fmt.Sprintf(" (%d uncommitted documents, %d active operations", ds.UncommittedDocuments, ds.ActiveOperations)
		if ds.LastError != "" {
			reason += ", last error: " + ds.LastError
		}
		reason += ")"
	}
	if force {
		drainTimedOutTotal(purpose, elapsed)
		index.Status.DrainStartTime = nil
		r.event(index, pod, corev1.EventTypeWarning, "DrainTimedOut", "%s; going on anyway (%s)", reason, purpose)
		return drainDone, "drain timed out", nil
	}
	// Writes are admitted again before the timeout is recorded. A resume
	// the engine refuses (or does not answer) keeps DrainStartTime, so
	// every pass comes back here and asks again, with backoff, until it
	// holds; only then does the drain backoff start, during which the
	// engine takes writes. A drain that completes meanwhile stops the pod
	// as usual.
	_, rerr := c.Resume(cctx)
	r.engineCalled(ctx, "resume/timeout")
	if rerr != nil {
		lg.Info("Resume after a timed-out drain failed; asked again", "error", rerr.Error())
		return drainWaiting, "", failed(ReasonEngineUnreachable,
			fmt.Errorf("%s, and resuming its writes failed (asked again): %w", reason, rerr))
	}
	drainTimedOutTotal(purpose, elapsed)
	index.Status.DrainStartTime = nil
	index.Status.DrainFailures++
	index.Status.LastDrainFailureTime = &metav1.Time{Time: now}
	index.Status.Phase = summav1.PhaseRunning
	r.event(index, pod, corev1.EventTypeWarning, "DrainTimedOut", "%s; pod %s keeps running, retry with backoff", reason, pod.Name)
	lg.Info("Drain timed out; writes resumed", "failures", index.Status.DrainFailures)
	return drainTimedOut, "", nil
}

// drainTimedOutTotal counts a drain that timed out after elapsed.
func drainTimedOutTotal(purpose string, elapsed time.Duration) {
	drainsTotal.WithLabelValues(purpose, "timeout").Inc()
	drainSeconds.WithLabelValues(purpose).Observe(elapsed.Seconds())
}

// deletePod deletes the engine pod with a precondition on its UID (never a
// replacement created meanwhile) and the pod's own grace period.
func (r *SummaIndexReconciler) deletePod(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod, purpose, why string) error {
	if err := r.deletePodExact(ctx, pod); err != nil {
		return fmt.Errorf("delete engine pod %s: %w", pod.Name, err)
	}
	restartsTotal.WithLabelValues(purpose).Inc()
	r.event(index, pod, corev1.EventTypeNormal, "PodDeleted", "engine pod %s deleted (%s: %s)", pod.Name, purpose, why)
	return nil
}

// deletePodExact deletes pod with a precondition on its UID and the pod's
// own grace period; a pod already gone, or replaced meanwhile, is no error.
func (r *SummaIndexReconciler) deletePodExact(ctx context.Context, pod *corev1.Pod) error {
	opts := []client.DeleteOption{client.Preconditions{UID: &pod.UID}}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		opts = append(opts, client.GracePeriodSeconds(*g))
	}
	if err := r.Delete(ctx, pod, opts...); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// resumeEngine undoes a drain that no restart follows any more: writes are
// admitted again and the drain is forgotten.
func (r *SummaIndexReconciler) resumeEngine(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod) error {
	if engineRunning(pod) {
		cctx, cancel := context.WithTimeout(ctx, r.Options.EngineTimeout)
		defer cancel()
		c, err := r.engineFor(ctx, index, pod)
		if err != nil {
			return err
		}
		if _, err := c.Resume(cctx); err != nil {
			return fmt.Errorf("resume the engine of %s: %w", pod.Name, err)
		}
		r.engineCalled(ctx, "resume/unwanted")
	}
	index.Status.DrainStartTime = nil
	r.event(index, pod, corev1.EventTypeNormal, "Resumed", "the restart is no longer needed: writes admitted again")
	return nil
}

// resumeStrayDrain resumes an engine that reports a drain no restart,
// suspend, doctor run or deletion of this operator asked for (an operator
// of an older version killed between its drain call and the status write
// that records it, or a person's POST /v1/admin/drain): a draining engine
// answers 503 on /readyz, so without this it would refuse writes forever.
// It is called only with no drain recorded in status and no restart
// pending. resumed tells whether the engine was draining; silent, that it
// was asked and did not answer (starting, stopped, overloaded: the caller
// backs off).
func (r *SummaIndexReconciler) resumeStrayDrain(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod) (resumed, silent bool, err error) {
	if !engineRunning(pod) || index.Status.DrainStartTime != nil {
		return false, false, nil
	}
	c, err := r.engineFor(ctx, index, pod)
	if err != nil {
		return false, false, err
	}
	cctx, cancel := context.WithTimeout(ctx, r.Options.EngineTimeout)
	defer cancel()
	ds, err := c.DrainStatus(cctx)
	if err != nil {
		return false, true, nil // not reachable (yet): the probes tell the rest
	}
	if !ds.Draining {
		return false, false, nil
	}
	if _, err := c.Resume(cctx); err != nil {
		return false, false, fmt.Errorf("resume the engine of %s, draining with no restart in progress: %w", pod.Name, err)
	}
	r.engineCalled(ctx, "resume/stray")
	r.event(index, pod, corev1.EventTypeNormal, "Resumed",
		"the engine of %s was draining with no restart, suspend, doctor run or deletion in progress: writes admitted again", pod.Name)
	log.FromContext(ctx).Info("Resumed an engine draining with no restart in progress", "pod", pod.Name)
	return true, false, nil
}
