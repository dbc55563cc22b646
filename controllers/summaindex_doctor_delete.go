package controllers

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	summav1 "github.com/summadev/summa/api/v1"
)

// A doctor run and the deletion of its index.
//
// The backup and doctor Jobs of an index whose reclaimPolicy is Retain are
// owned by its data volume, not by the SummaIndex (ownJob): the garbage
// collector never takes a running repair away when the SummaIndex is
// deleted, whatever the propagation (a foreground deletion deletes every
// dependent at once), and the Jobs go with the volume or by their
// ttlSecondsAfterFinished. The deletion then ends the run in order
// (doctorBeforeDelete) before it goes on:
//
//   - Retain: a running Job is left to finish (a repair half done is not
//     what a kept volume should hold); past
//     spec.lifecycle.deletionTimeoutSeconds it is stopped as below.
//   - Delete: the volume goes anyway, so a running Job is stopped at once:
//     deleted with foreground propagation, so that its pod gets SIGTERM and
//     its grace (the doctor ends at its next safe point, every step of it
//     being atomic) and the Job is gone only once its pod is.
//
// Either way the run ends in status (Succeeded or Failed, saying the index
// was deleted) before the finalizer goes, and nothing runs on the volume
// when a new SummaIndex of the same name adopts it.

// ReasonDeletionWaitsForDoctor is the reason of the Progressing condition
// and of the event while a deletion waits for a doctor run's Job.
const ReasonDeletionWaitsForDoctor = "DeletionWaitsForDoctor"

// ownJob makes job (of a doctor run of index) index's: marked with index's UID, and
// owned as index's reclaimPolicy asks (see above).
func (r *SummaIndexReconciler) ownJob(ctx context.Context, index *summav1.SummaIndex, job *batchv1.Job) error {
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations[AnnotationIndexUID] = string(index.UID)
	if index.Spec.Storage.EffectiveReclaimPolicy() == summav1.ReclaimDelete {
		if err := controllerutil.SetControllerReference(index, job, r.Scheme); err != nil {
			return fmt.Errorf("owner reference on job %s: %w", job.Name, err)
		}
		return nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: index.Namespace, Name: index.DataClaimName()}, pvc); err != nil {
		return fmt.Errorf("get data volume %s to own job %s: %w", index.DataClaimName(), job.Name, err)
	}
	if err := controllerutil.SetOwnerReference(pvc, job, r.Scheme); err != nil {
		return fmt.Errorf("owner reference on job %s: %w", job.Name, err)
	}
	return nil
}

// staleJob handles a Job of a run's name that an earlier SummaIndex of the
// same name made (its UID annotation is another's): a finished one is
// deleted and made again for this run; a running one is waited for. It
// reports whether cur is such a Job.
func (r *SummaIndexReconciler) staleJob(ctx context.Context, index *summav1.SummaIndex, cur *batchv1.Job) (bool, reconcile.Result, error) {
	uid, ok := cur.Annotations[AnnotationIndexUID]
	if !ok || uid == string(index.UID) {
		return false, reconcile.Result{}, nil
	}
	if cur.DeletionTimestamp != nil {
		return true, reconcile.Result{RequeueAfter: terminatingPoll}, nil
	}
	if done, _ := jobFinished(cur); !done {
		return true, reconcile.Result{RequeueAfter: terminatingPoll}, nil
	}
	err := r.Delete(ctx, cur, client.Preconditions{UID: &cur.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return true, reconcile.Result{}, fmt.Errorf("delete job %s of an earlier SummaIndex %s: %w", cur.Name, index.Name, err)
	}
	r.event(index, cur, corev1.EventTypeNormal, "StaleJobDeleted", "job %s, of an earlier SummaIndex named %s, deleted", cur.Name, index.Name)
	return true, reconcile.Result{RequeueAfter: pollInterval}, nil
}

// doctorBeforeDelete ends index's doctor run, if one is in progress, before
// the deletion goes on (see above). hold tells the deletion to wait.
func (r *SummaIndexReconciler) doctorBeforeDelete(ctx context.Context, index *summav1.SummaIndex, policy summav1.ReclaimPolicy) (hold bool, res reconcile.Result, err error) {
	d := index.Status.Doctor
	if d == nil || doctorTerminal(d.Phase) {
		return false, reconcile.Result{}, nil
	}
	var job *batchv1.Job
	switch d.Phase {
	case summav1.DoctorPhaseBackingUp:
		job = r.backupJob(index)
	case summav1.DoctorPhaseRunning:
		job = r.doctorJob(index)
	case summav1.DoctorPhaseRestarting:
		// The repair is done: only the engine's start is left undone.
		r.endDoctor(ctx, index, summav1.DoctorPhaseSucceeded, "")
		return false, reconcile.Result{}, nil
	default:
		// Pending or Draining: no Job ran; the deletion stops the engine.
		r.endDoctor(ctx, index, summav1.DoctorPhaseFailed, "the SummaIndex was deleted before the run changed anything")
		return false, reconcile.Result{}, nil
	}
	cur := &batchv1.Job{}
	err = r.Get(ctx, client.ObjectKeyFromObject(job), cur)
	if apierrors.IsNotFound(err) {
		r.endDoctor(ctx, index, summav1.DoctorPhaseFailed, fmt.Sprintf("the SummaIndex was deleted during the run; job %s is gone (stopped, or never made)", job.Name))
		return false, reconcile.Result{}, nil
	}
	if err != nil {
		return true, reconcile.Result{}, fmt.Errorf("get job %s: %w", job.Name, err)
	}
	if uid := cur.Annotations[AnnotationIndexUID]; uid != "" && uid != string(index.UID) {
		return false, reconcile.Result{}, nil // an earlier index's Job: not this run's
	}
	if done, failed := jobFinished(cur); done {
		phase, how := summav1.DoctorPhaseSucceeded, "succeeded"
		if failed {
			phase, how = summav1.DoctorPhaseFailed, "failed"
		}
		r.endDoctor(ctx, index, phase, fmt.Sprintf("job %s %s; the SummaIndex was deleted meanwhile (%s)", cur.Name, how, d.Phase))
		r.event(index, cur, corev1.EventTypeNormal, "DoctorEnded", "doctor run %s ended before the deletion went on: job %s %s",
			d.RequestID, cur.Name, how)
		return false, reconcile.Result{}, nil
	}
	if cur.DeletionTimestamp != nil {
		return true, reconcile.Result{RequeueAfter: terminatingPoll}, nil
	}
	if policy != summav1.ReclaimDelete && hasOwnerUID(cur, index) {
		// A Job made by an earlier version is index's: the garbage collector
		// would delete it once index goes.
		patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
		cur.OwnerReferences = withoutOwner(cur.OwnerReferences, index)
		if err := r.Patch(ctx, cur, patch); err != nil {
			return true, reconcile.Result{}, fmt.Errorf("release job %s: %w", cur.Name, err)
		}
	}
	if policy == summav1.ReclaimDelete || r.deletionTimedOut(index) {
		return true, reconcile.Result{RequeueAfter: pollInterval}, r.stopDoctorJob(ctx, index, cur, policy)
	}
	msg := fmt.Sprintf("the deletion waits for job %s of doctor run %s to finish (reclaimPolicy %s; at most spec.lifecycle.deletionTimeoutSeconds, %s)",
		cur.Name, d.RequestID, policy, index.Spec.Lifecycle.DeletionTimeout())
	if d.Message != msg {
		d.Message = msg
		r.event(index, cur, corev1.EventTypeNormal, ReasonDeletionWaitsForDoctor, "%s", msg)
	}
	setCondition(index, summav1.ConditionProgressing, true, ReasonDeletionWaitsForDoctor, msg)
	// The Job's end wakes a pass (the Job watch); this is the fallback.
	return true, reconcile.Result{RequeueAfter: r.Options.ResyncPeriod}, nil
}

// stopDoctorJob stops a running Job of a doctor run in order: deleted with
// foreground propagation, so that its pod gets SIGTERM and its grace, and
// the Job is gone only once its pod is.
func (r *SummaIndexReconciler) stopDoctorJob(ctx context.Context, index *summav1.SummaIndex, job *batchv1.Job, policy summav1.ReclaimPolicy) error {
	err := r.Delete(ctx, job, client.Preconditions{UID: &job.UID}, client.PropagationPolicy(metav1.DeletePropagationForeground))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("stop job %s: %w", job.Name, err)
	}
	why := "reclaimPolicy Delete: the volume goes anyway"
	if policy != summav1.ReclaimDelete {
		why = fmt.Sprintf("it outlasted spec.lifecycle.deletionTimeoutSeconds (%s)", index.Spec.Lifecycle.DeletionTimeout())
	}
	r.event(index, job, corev1.EventTypeWarning, "DoctorStopped",
		"job %s of doctor run %s stopped for the deletion (%s); it ends at its next safe point", job.Name, index.Status.Doctor.RequestID, why)
	return nil
}
