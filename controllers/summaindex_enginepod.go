package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
)

// engineView is what reconcileEngine's jobs learn of the running engine
// pod and decide for it, in the order they run.
type engineView struct {
	// pod is the running engine pod.
	pod *corev1.Pod
	// up tells that the engine is ready and answered (readEngine).
	up bool
	// err is why a ready engine did not answer (a step failure), shown at
	// the end of the pass (engineHealth).
	err error
	// desired is the pod the spec asks for now (settleRevision).
	desired *corev1.Pod
}

// reconcileEngine keeps the engine pod at the desired revision and the
// status current. Its jobs, in order: create the pod; wait for a pod that
// terminates; observe the engine (readEngine); record the grace
// (recordGrace); decide the revision (settleRevision); restart for a new
// one, once admitted, after a drain (restartEngine); resume a stray drain
// (strayDrain); and report the engine's health (engineHealth).
func (r *SummaIndexReconciler) reconcileEngine(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod, acc access) (reconcile.Result, error) {
	if pod == nil {
		if !acc.known {
			// The access step failed (and says why): no pod without its
			// Secrets.
			return reconcile.Result{RequeueAfter: failureRetry}, nil
		}
		return r.createPod(ctx, index, acc)
	}
	if pod.DeletionTimestamp != nil {
		notReady(index, summav1.PhaseRestarting, "PodTerminating", "waiting for the previous engine pod to stop", true)
		return reconcile.Result{RequeueAfter: terminatingPoll}, nil
	}
	if err := r.syncAccessAnnotation(ctx, index, pod, acc); err != nil {
		return reconcile.Result{}, failed(ReasonPodFailed, err)
	}
	index.Status.PodName, index.Status.PodUID = pod.Name, pod.UID
	index.Status.CurrentRevision = pod.Annotations[AnnotationRevision]
	ev := &engineView{pod: pod}
	if res, stop, err := r.readEngine(ctx, index, ev); stop {
		return res, err
	}
	recordGrace(index, pod)
	if !acc.known {
		// Without the access step's decisions the desired pod is unknown:
		// keep the running one.
		markRunning(index, ev.up, pod)
		return reconcile.Result{RequeueAfter: failureRetry}, ev.err
	}
	if err := r.settleRevision(ctx, index, ev, acc); err != nil {
		return reconcile.Result{}, err
	}
	if index.Status.UpdateRevision != index.Status.CurrentRevision {
		return r.restartEngine(ctx, index, ev)
	}
	if res, stop := r.strayDrain(ctx, index, ev); stop {
		return res, nil
	}
	return r.engineHealth(index, ev)
}

// readEngine reads a ready engine into status (observeEngine) and records
// in ev whether it answered. It stops the pass (stop) while a rotated
// admin token reaches the engine, and on a schema conflict.
func (r *SummaIndexReconciler) readEngine(ctx context.Context, index *summav1.SummaIndex, ev *engineView) (res reconcile.Result, stop bool, err error) {
	if !engineReady(ev.pod) {
		return reconcile.Result{}, false, nil
	}
	err = r.observeEngine(ctx, index, ev.pod)
	var conflict *errSchemaConflict
	switch {
	case r.rotationInFlight(index, err):
		// The rotated admin token has not reached the engine yet: asked
		// again shortly, nothing else decided meanwhile.
		return reconcile.Result{RequeueAfter: unauthorizedRetry}, true, nil
	case errors.As(err, &conflict):
		index.Status.Phase = summav1.PhaseFailed
		setCondition(index, summav1.ConditionReady, false, ReasonSchemaConflict, err.Error())
		return reconcile.Result{RequeueAfter: r.Options.ResyncPeriod}, true, failed(ReasonSchemaConflict, err)
	case engineclient.IsCode(err, engineclient.CodeUnauthorized):
		ev.err = failed(ReasonUnauthorized, unauthorized(index, err))
	case err != nil:
		ev.err = failed(ReasonEngineUnreachable, fmt.Errorf("engine pod %s is ready but its engine does not answer: %w", ev.pod.Name, err))
	default:
		ev.up = true
	}
	return reconcile.Result{}, false, nil
}

// recordGrace shows the running pod's grace and engine deadline in status,
// and the grace the next pod gets when it differs. The grace the estimate
// asks for is not part of the revision (summaindex_grace.go): the desired
// pod carries it, and it reaches the next pod made anyway.
func recordGrace(index *summav1.SummaIndex, pod *corev1.Pod) {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		index.Status.TerminationGracePeriodSeconds = *g
	}
	running := index.Status.TerminationGracePeriodSeconds
	index.Status.ShutdownDeadlineSeconds = engineShutdownDeadline(index, running)
	index.Status.NextTerminationGracePeriodSeconds = 0
	if next := nextGrace(index, running, index.Status.DrainEstimateSeconds); next != running {
		index.Status.NextTerminationGracePeriodSeconds = next
	}
}

// settleRevision decides the desired pod and its revision: a pod of a
// previous revision scheme that is current is adopted; without a restart
// pending, a drain made for one that is no longer wanted is undone and
// the drain failures are forgotten.
func (r *SummaIndexReconciler) settleRevision(ctx context.Context, index *summav1.SummaIndex, ev *engineView, acc access) error {
	in := r.podInputs(index, nextGrace(index, index.Status.TerminationGracePeriodSeconds, index.Status.DrainEstimateSeconds), acc)
	ev.desired = desiredPod(index, in)
	if adopted, err := r.adoptLegacyRevision(ctx, index, ev.pod, ev.desired, in); err != nil {
		return failed(ReasonPodFailed, err)
	} else if adopted {
		index.Status.CurrentRevision = ev.pod.Annotations[AnnotationRevision]
	}
	index.Status.UpdateRevision = ev.desired.Annotations[AnnotationRevision]
	if index.Status.UpdateRevision != index.Status.CurrentRevision {
		return nil
	}
	if index.Status.DrainStartTime != nil {
		// A drain for a restart that is no longer wanted (the spec went
		// back): admit writes again rather than leave the engine drained.
		if err := r.resumeEngine(ctx, index, ev.pod); err != nil {
			return err
		}
	}
	// No restart is pending: drains that timed out for one are over.
	index.Status.DrainFailures, index.Status.LastDrainFailureTime = 0, nil
	return nil
}

// restartEngine restarts the engine for a new revision once the restart is
// admitted (restartAdmitted): drain, then replace the pod.
func (r *SummaIndexReconciler) restartEngine(ctx context.Context, index *summav1.SummaIndex, ev *engineView) (reconcile.Result, error) {
	if res, ok, err := r.restartAdmitted(ctx, index, ev); !ok {
		return res, err
	}
	return r.replacePod(ctx, index, ev.pod, purposeRestart)
}

// restartAdmitted reports whether a restart may drain the engine now: not
// during the backoff after a timed-out drain, after the followers
// (summaindex_rolling.go), not to a pod the cluster would refuse, and,
// for an engine that serves, within the restart budget. When it may not,
// it returns when to look again.
func (r *SummaIndexReconciler) restartAdmitted(ctx context.Context, index *summav1.SummaIndex, ev *engineView) (reconcile.Result, bool, error) {
	if res, ok, err := r.drainBackoffOver(ctx, index, ev); !ok {
		return res, false, err
	}
	if index.Status.DrainStartTime == nil && ev.up {
		// Followers restart first, the leader last (summaindex_rolling.go).
		if ok, why, err := r.followersSettled(ctx, index, index.Status.UpdateRevision); !ok {
			markRunning(index, ev.up, ev.pod)
			setCondition(index, summav1.ConditionProgressing, true, ReasonRollingFollowers, why)
			return reconcile.Result{RequeueAfter: pollInterval}, false, err
		}
	}
	if err := r.holdInvalidRestart(ctx, index, ev.pod, ev.desired, ev.up); err != nil {
		return reconcile.Result{RequeueAfter: failureRetry}, false, err
	}
	if index.Status.DrainStartTime == nil && ev.up {
		// An engine that serves restarts under the budget; one that does
		// not restarts at once.
		ok, why, err := r.admitRestart(ctx, index)
		if err != nil {
			return reconcile.Result{}, false, err
		}
		if !ok {
			markRunning(index, ev.up, ev.pod)
			setCondition(index, summav1.ConditionProgressing, true, ReasonRestartQueued, why)
			return reconcile.Result{RequeueAfter: restartQueueRetry}, false, nil
		}
	}
	return reconcile.Result{}, true, nil
}

// drainBackoffOver reports whether the backoff after a timed-out drain is
// over. Until then the pod keeps running, taking writes; an engine found
// draining meanwhile is resumed, with backoff until that holds.
func (r *SummaIndexReconciler) drainBackoffOver(ctx context.Context, index *summav1.SummaIndex, ev *engineView) (reconcile.Result, bool, error) {
	wait, ok := r.drainBackoff(index)
	if ok {
		return reconcile.Result{}, true, nil
	}
	if !engineReady(ev.pod) {
		if _, _, err := r.resumeStrayDrain(ctx, index, ev.pod); err != nil {
			markRunning(index, ev.up, ev.pod)
			next := r.unreachable.next(client.ObjectKeyFromObject(index), r.Options.ResyncPeriod)
			return reconcile.Result{RequeueAfter: min(wait, next)}, false, failed(ReasonEngineUnreachable, err)
		}
	}
	markRunning(index, ev.up, ev.pod)
	setCondition(index, summav1.ConditionProgressing, true, "RestartPending", "a restart waits for the drain backoff")
	return reconcile.Result{RequeueAfter: wait}, false, nil
}

// strayDrain resumes an engine found draining, unready, with no restart
// pending (resumeStrayDrain). It stops the pass (stop) when it resumed
// one, or when the engine does not answer: asked again with backoff (its
// readiness changing wakes a pass at once). A resume that failed is
// recorded in ev.err.
func (r *SummaIndexReconciler) strayDrain(ctx context.Context, index *summav1.SummaIndex, ev *engineView) (reconcile.Result, bool) {
	if ev.up || ev.err != nil || engineReady(ev.pod) {
		return reconcile.Result{}, false
	}
	resumed, silent, err := r.resumeStrayDrain(ctx, index, ev.pod)
	switch {
	case err != nil:
		ev.err = failed(ReasonEngineUnreachable, err)
	case resumed:
		return reconcile.Result{RequeueAfter: pollInterval}, true
	case silent:
		markRunning(index, false, ev.pod)
		return reconcile.Result{RequeueAfter: r.unreachable.next(client.ObjectKeyFromObject(index), r.Options.ResyncPeriod)}, true
	}
	return reconcile.Result{}, false
}

// engineHealth sets phase and conditions of a pod at its desired revision
// and when to look again: at the resync period while the engine serves.
func (r *SummaIndexReconciler) engineHealth(index *summav1.SummaIndex, ev *engineView) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(index)
	markRunning(index, ev.up, ev.pod)
	if ev.err != nil {
		// Shown as Degraded and a Warning by report; asked again with
		// exponential backoff (a pod or Secret change still wakes it at
		// once), not through the error path.
		setCondition(index, summav1.ConditionReady, false, ReasonEngineUnreachable, ev.err.Error())
		return reconcile.Result{RequeueAfter: r.unreachable.next(key, r.Options.ResyncPeriod)}, ev.err
	}
	r.unreachable.reset(key)
	if !ev.up {
		// The pod's own changes (readiness) wake the next pass; this is
		// the fallback.
		return reconcile.Result{RequeueAfter: notReadyPoll}, nil
	}
	return reconcile.Result{RequeueAfter: r.Options.ResyncPeriod}, nil
}

// markRunning sets phase and conditions of a pod at its desired revision
// (or waiting for a restart).
func markRunning(index *summav1.SummaIndex, engineUp bool, pod *corev1.Pod) {
	if !engineUp {
		reason, msg := "PodNotReady", "the engine pod "+pod.Name+" is not ready"
		phase := summav1.PhasePending
		if index.Status.Phase == summav1.PhaseRestarting || index.Status.Phase == summav1.PhaseDraining {
			phase = summav1.PhaseRestarting
		}
		if index.Status.Phase == summav1.PhaseRunning {
			phase = summav1.PhaseRunning
		}
		notReady(index, phase, reason, msg, phase != summav1.PhaseRunning)
		return
	}
	index.Status.Phase = summav1.PhaseRunning
	setCondition(index, summav1.ConditionReady, true, "EngineReady", "the engine serves index "+index.Name)
	setCondition(index, summav1.ConditionProgressing, false, "Stable", "the engine pod runs the desired revision")
}

// podInputs are the operator's decisions for index's pod.
func (r *SummaIndexReconciler) podInputs(index *summav1.SummaIndex, grace int64, acc access) podInputs {
	return podInputs{image: r.image(index), grace: grace, volumePermissions: r.Options.VolumePermissions, access: acc,
		operatorVersion: r.Options.OperatorVersion, shutdownDelay: int64(r.Options.EngineShutdownDelay / time.Second)}
}

// createPod creates the engine pod at the desired revision, with the grace
// the last estimate asks for (nextGrace from the previous pod's grace,
// kept in status).
func (r *SummaIndexReconciler) createPod(ctx context.Context, index *summav1.SummaIndex, acc access) (reconcile.Result, error) {
	grace := nextGrace(index, index.Status.TerminationGracePeriodSeconds, index.Status.DrainEstimateSeconds)
	pod := desiredPod(index, r.podInputs(index, grace, acc))
	if err := controllerutil.SetControllerReference(index, pod, r.Scheme); err != nil {
		return reconcile.Result{}, fmt.Errorf("owner reference on pod: %w", err)
	}
	if err := r.checkDesiredPod(ctx, index, pod); err != nil {
		notReady(index, index.Status.Phase, failureReason(err), "the engine pod cannot be created: "+err.Error(), false)
		return reconcile.Result{RequeueAfter: failureRetry}, err
	}
	if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return reconcile.Result{}, failed(ReasonPodFailed, fmt.Errorf("create engine pod %s: %w", pod.Name, err))
	}
	index.Status.PodName, index.Status.PodUID = pod.Name, pod.UID
	if prev := index.Status.TerminationGracePeriodSeconds; prev > 0 && prev != grace {
		r.event(index, pod, corev1.EventTypeNormal, "GraceResized", "termination grace %ds -> %ds (drain estimate %s)",
			prev, grace, fmtEstimate(index.Status.DrainEstimateSeconds))
	}
	index.Status.TerminationGracePeriodSeconds, index.Status.NextTerminationGracePeriodSeconds = grace, 0
	index.Status.ShutdownDeadlineSeconds = engineShutdownDeadline(index, grace)
	index.Status.CurrentRevision = pod.Annotations[AnnotationRevision]
	index.Status.UpdateRevision = index.Status.CurrentRevision
	if acc.hash != "" {
		r.recordAccessSync(index, acc.hash)
	}
	phase := summav1.PhasePending
	if index.Status.Phase != summav1.PhasePending {
		phase = summav1.PhaseRestarting
	}
	notReady(index, phase, "PodCreated", "engine pod "+pod.Name+" created; waiting for it to be ready", true)
	r.event(index, pod, corev1.EventTypeNormal, "PodCreated", "engine pod %s created (revision %s, grace %ds)",
		pod.Name, index.Status.CurrentRevision, grace)
	return reconcile.Result{RequeueAfter: pollInterval}, nil
}
