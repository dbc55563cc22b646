package controllers

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	summav1 "github.com/summadev/summa/api/v1"
)

// spec.restore: a new index's empty volume is filled from a backup in the
// object store by a Job running `summa-server restore` before its engine
// pod is created.
//
// Whether the volume still waits for its restore is kept on the volume
// itself, in the annotation summa.dev/restore: the operator sets it to
// "pending" when it creates the volume of a SummaIndex with spec.restore,
// and to "done" once the Job succeeded. A volume without it (a retained
// volume adopted by a new SummaIndex of the same name, or any volume
// created before spec.restore was set) already holds what it holds:
// spec.restore is ignored there, and a restore never runs twice.
//
// A failed Job leaves the volume empty (restore removes what it wrote):
// the index is Failed, Degraded with reason RestoreFailed, and no engine
// pod is made. Deleting the failed Job, or a new spec.restore.backupId
// or spec.restore.index, runs it again.

// Values of the volume's restore annotation.
const (
	// AnnotationRestore marks the data volume of a restore.
	AnnotationRestore = "summa.dev/restore"
	// restorePendingValue: the volume waits for its restore.
	restorePendingValue = "pending"
	// restoreDoneValue: the restore filled the volume.
	restoreDoneValue = "done"
	// AnnotationRestoreFrom on a restore Job names the backed-up index it
	// reads (spec.restore.index, or the index's own name).
	AnnotationRestoreFrom = "summa.dev/restore-from"
	// restoreContainer names the restore Job's container and component.
	restoreContainer = "restore"
)

// markRestoreClaim marks a data volume about to be created for index as
// waiting for its restore.
func markRestoreClaim(index *summav1.SummaIndex, pvc *corev1.PersistentVolumeClaim) {
	if index.Spec.Restore == nil {
		return
	}
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[AnnotationRestore] = restorePendingValue
}

// restoreJob is the Job filling the data volume from the object store.
func (r *SummaIndexReconciler) restoreJob(index *summav1.SummaIndex) *batchv1.Job {
	s3 := index.RestoreS3()
	args := []string{"restore", "--data-dir", DataMountPath, "--index", index.Name, "--report-file", terminationLog}
	if src := index.RestoreSourceIndex(); src != index.Name {
		args = append(args, "--from-index", src)
	}
	if id := index.Spec.Restore.BackupID; id != summav1.RestoreLatest {
		args = append(args, "--backup", id)
	}
	job := r.jobFor(index, index.RestoreJobName(), restoreContainer, append(args, s3Args(s3)...))
	// Kept until a person deletes it: a failed restore is retried by
	// deleting its Job, never by a TTL.
	job.Spec.TTLSecondsAfterFinished = nil
	job.Annotations = map[string]string{AnnotationRestore: index.Spec.Restore.BackupID,
		AnnotationRestoreFrom: index.RestoreSourceIndex()}
	pod := &job.Spec.Template.Spec
	pod.Volumes = append(pod.Volumes, s3Volumes(s3, index.RestoreS3CredentialsSecretName())...)
	pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, s3Mounts(s3)...)
	return job
}

// restorePending returns index's data volume when it waits for its restore
// (nil otherwise).
func (r *SummaIndexReconciler) restorePending(ctx context.Context, index *summav1.SummaIndex) (*corev1.PersistentVolumeClaim, error) {
	if index.Spec.Restore == nil {
		return nil, nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.getLive(ctx, client.ObjectKey{Namespace: index.Namespace, Name: index.DataClaimName()}, pvc)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get volume %s: %w", index.DataClaimName(), err)
	}
	if pvc.Annotations[AnnotationRestore] != restorePendingValue {
		return nil, nil
	}
	return pvc, nil
}

// reconcileRestore runs the restore Job of a volume that waits for it and
// reports whether the engine may start (the volume holds the restore).
func (r *SummaIndexReconciler) reconcileRestore(ctx context.Context, index *summav1.SummaIndex, pvc *corev1.PersistentVolumeClaim) (done bool, res reconcile.Result, err error) {
	if index.Status.Restore == nil || index.Status.Restore.BackupID != index.Spec.Restore.BackupID {
		index.Status.Restore = &summav1.RestoreStatus{BackupID: index.Spec.Restore.BackupID, JobName: index.RestoreJobName()}
	}
	st := index.Status.Restore
	if err := r.ensureS3Credentials(ctx, index, index.RestoreS3(), index.RestoreS3CredentialsSecretName()); err != nil {
		notReady(index, summav1.PhasePending, failureReason(err), "the restore waits for its object store credentials: "+err.Error(), false)
		return false, reconcile.Result{RequeueAfter: failureRetry}, err
	}
	job := &batchv1.Job{}
	err = r.getLive(ctx, client.ObjectKey{Namespace: index.Namespace, Name: index.RestoreJobName()}, job)
	if err == nil && restoreJobStale(job, index) && job.DeletionTimestamp == nil {
		// A Job for another backup: replaced by one for this one.
		if derr := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(derr) != nil {
			return false, reconcile.Result{}, fmt.Errorf("delete restore job %s: %w", job.Name, derr)
		}
		return false, reconcile.Result{RequeueAfter: pollInterval}, nil
	}
	if apierrors.IsNotFound(err) {
		return false, reconcile.Result{RequeueAfter: pollInterval}, r.createRestoreJob(ctx, index)
	}
	if err != nil {
		return false, reconcile.Result{}, fmt.Errorf("get restore job %s: %w", index.RestoreJobName(), err)
	}
	finished, jobFailed := jobFinished(job)
	switch {
	case !finished:
		st.Phase = summav1.RestorePhaseRunning
		st.Message = "restoring backup " + index.Spec.Restore.BackupID + " into volume " + pvc.Name
		notReady(index, summav1.PhasePending, "Restoring", st.Message, true)
		return false, reconcile.Result{RequeueAfter: notReadyPoll}, nil
	case jobFailed:
		msg, merr := r.jobMessage(ctx, job)
		if merr != nil {
			return false, reconcile.Result{}, merr
		}
		if st.Phase != summav1.RestorePhaseFailed {
			st.Phase, st.CompletedAt = summav1.RestorePhaseFailed, ptr.To(metav1.NewTime(r.Options.Now()))
			r.event(index, job, corev1.EventTypeWarning, ReasonRestoreFailed, "restore job %s failed: %s", job.Name, clip(msg, 512))
		}
		st.Message = "restore job " + job.Name + " failed: " + clip(msg, 1024) + "; nothing is served. Delete the Job (or set another spec.restore.backupId or spec.restore.index) to try again"
		notReady(index, summav1.PhaseFailed, ReasonRestoreFailed, st.Message, false)
		return false, reconcile.Result{}, failed(ReasonRestoreFailed, fmt.Errorf("%s", st.Message))
	}
	msg, _ := r.jobMessage(ctx, job)
	pvc.Annotations[AnnotationRestore] = restoreDoneValue
	if err := r.Update(ctx, pvc); err != nil {
		return false, reconcile.Result{}, failed(ReasonVolumeFailed, fmt.Errorf("mark volume %s restored: %w", pvc.Name, err))
	}
	st.Phase, st.CompletedAt = summav1.RestorePhaseSucceeded, ptr.To(metav1.NewTime(r.Options.Now()))
	st.Message = clip(msg, 1024)
	r.event(index, job, corev1.EventTypeNormal, "RestoreSucceeded", "volume %s restored from backup %s: %s", pvc.Name, index.Spec.Restore.BackupID, clip(msg, 512))
	return true, reconcile.Result{}, nil
}

// restoreJobStale reports whether job restores another backup than
// index's spec.restore asks for: another backupId, or another backed-up
// index. A Job made before the source was recorded on it is judged by its
// backupId alone, so an operator upgrade never replaces a running restore.
func restoreJobStale(job *batchv1.Job, index *summav1.SummaIndex) bool {
	if job.Annotations[AnnotationRestore] != index.Spec.Restore.BackupID {
		return true
	}
	from, recorded := job.Annotations[AnnotationRestoreFrom]
	return recorded && from != index.RestoreSourceIndex()
}

// createRestoreJob creates index's restore Job.
func (r *SummaIndexReconciler) createRestoreJob(ctx context.Context, index *summav1.SummaIndex) error {
	job := r.restoreJob(index)
	if err := controllerutil.SetControllerReference(index, job, r.Scheme); err != nil {
		return fmt.Errorf("owner reference on job: %w", err)
	}
	if err := r.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return failed(ReasonRestoreFailed, fmt.Errorf("create restore job %s: %w", job.Name, err))
	}
	index.Status.Restore.Phase, index.Status.Restore.CompletedAt = summav1.RestorePhaseRunning, nil
	index.Status.Restore.Message = "restore job " + job.Name + " created"
	notReady(index, summav1.PhasePending, "Restoring", index.Status.Restore.Message, true)
	r.event(index, job, corev1.EventTypeNormal, "RestoreStarted", "restore job %s created for backup %s", job.Name, index.Spec.Restore.BackupID)
	return nil
}

// restoreGate holds the engine pod back while index's volume waits for its
// restore: hold is true (with the pass's result) until the restore Job
// succeeded. An existing pod is never held.
func (r *SummaIndexReconciler) restoreGate(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod) (hold bool, res reconcile.Result, err error) {
	if pod != nil || index.Spec.Restore == nil {
		return false, reconcile.Result{}, nil
	}
	pvc, err := r.restorePending(ctx, index)
	if err != nil || pvc == nil {
		return err != nil, reconcile.Result{}, failed(ReasonVolumeFailed, err)
	}
	done, res, err := r.reconcileRestore(ctx, index, pvc)
	return !done, res, err
}
