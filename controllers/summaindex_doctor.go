package controllers

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	summav1 "github.com/summadev/summa/api/v1"
)

// Doctor runs. A new spec.doctor.requestId starts one run, whose phase is
// kept in status.doctor and written (with optimistic locking) before each
// step acts, so that an operator restarted at any point resumes the same
// run and finds the same Jobs by name:
//
//	Pending (the followers restart: summaindex_doctor_followers.go) ->
//	Draining (drain, stop the pod) -> BackingUp (copy the volume
//	unless backup: None) -> Running (the doctor Job) -> Restarting (the
//	engine pod again, unless the index is suspended) -> Succeeded | Failed
//
// The copy is taken after the pod stopped, so it is consistent. A
// requestId runs once: a finished run moves into status.doctor.history
// (the last MaxDoctorHistory runs), and a requestId found there or in the
// last run is not started again (so A, B, A runs A once).
//
// A Job whose pod cannot start (its image cannot be pulled, it cannot be
// scheduled) within spec.doctor.startTimeoutSeconds fails the run, and
// the engine is started again rather than left stopped. When a run ends,
// the backup volumes beyond spec.doctor.keepBackups are deleted, oldest
// first (summaindex_doctor_jobs.go). The report comes from the doctor's
// summary in its termination message and, when that is cut, from the
// whole report the engine keeps (summaindex_doctor_report.go).

const (
	// doctorContainer names the doctor Job's container.
	doctorContainer = "doctor"
	// backupContainer names the backup Job's container.
	backupContainer = "backup"
	// backupMountPath is where the backup Job mounts the copy.
	backupMountPath = "/backup"
	// jobNameLabel is set by the Job controller on a Job's pods.
	jobNameLabel = "batch.kubernetes.io/job-name"
	// terminationLog is where the Jobs write their report.
	terminationLog = "/dev/termination-log"
)

// doctorActive reports whether a doctor run is in progress or requested.
func doctorActive(index *summav1.SummaIndex) bool {
	d := index.Status.Doctor
	if d != nil && !doctorTerminal(d.Phase) {
		return true
	}
	id := index.Spec.Doctor.RequestID
	return id != "" && !d.Ran(id)
}

// doctorTerminal reports whether a run in phase p is over.
func doctorTerminal(p string) bool {
	return p == summav1.DoctorPhaseSucceeded || p == summav1.DoctorPhaseFailed
}

// doctorFailed reports whether the last doctor run failed.
func doctorFailed(index *summav1.SummaIndex) bool {
	return index.Status.Doctor != nil && index.Status.Doctor.Phase == summav1.DoctorPhaseFailed
}

// reconcileDoctor advances the doctor run by one step.
func (r *SummaIndexReconciler) reconcileDoctor(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod, acc access, sw *statusWriter) (reconcile.Result, error) {
	d := index.Status.Doctor
	if d == nil || doctorTerminal(d.Phase) {
		return r.startDoctor(ctx, index, sw)
	}
	if d.Phase != summav1.DoctorPhaseRestarting {
		notReady(index, summav1.PhaseRepairing, "Doctor"+d.Phase, "doctor run "+d.RequestID+": "+d.Phase, true)
	}
	switch d.Phase {
	case summav1.DoctorPhasePending:
		if why, err := r.jobServiceAccountRefusal(ctx, index); err != nil || why != "" {
			if err != nil {
				return reconcile.Result{}, err
			}
			return r.failDoctor(ctx, index, why, sw) // before the engine stops
		}
		if wait, why, err := r.doctorWaitsForFollowers(ctx, index, pod); err != nil || wait {
			if wait {
				notReady(index, summav1.PhaseRepairing, "DoctorRollingFollowers", why, true)
			}
			return reconcile.Result{RequeueAfter: pollInterval}, err
		}
		d.Phase = summav1.DoctorPhaseDraining
		return reconcile.Result{RequeueAfter: pollInterval}, sw.write(ctx, index)
	case summav1.DoctorPhaseDraining:
		return r.doctorStopEngine(ctx, index, pod, sw)
	case summav1.DoctorPhaseBackingUp:
		return r.doctorJobStep(ctx, index, r.backupJob(index), summav1.DoctorPhaseRunning, sw)
	case summav1.DoctorPhaseRunning:
		return r.doctorJobStep(ctx, index, r.doctorJob(index), summav1.DoctorPhaseRestarting, sw)
	case summav1.DoctorPhaseRestarting:
		return r.doctorRestart(ctx, index, pod, acc)
	}
	return reconcile.Result{}, fmt.Errorf("unknown doctor phase %q", d.Phase)
}

// startDoctor records a new run as Pending, keeping the history of the
// finished ones.
func (r *SummaIndexReconciler) startDoctor(ctx context.Context, index *summav1.SummaIndex, sw *statusWriter) (reconcile.Result, error) {
	now := metav1.NewTime(r.Options.Now())
	var history []summav1.DoctorRun
	if prev := index.Status.Doctor; prev != nil {
		// A run recorded by an older operator has no history entry yet.
		recordRun(prev)
		history = prev.History
	}
	index.Status.Doctor = &summav1.DoctorStatus{RequestID: index.Spec.Doctor.RequestID, Phase: summav1.DoctorPhasePending,
		StartTime: &now, History: history}
	notReady(index, summav1.PhaseRepairing, "DoctorRequested", "doctor run "+index.Spec.Doctor.RequestID+" requested", true)
	r.event(index, nil, corev1.EventTypeNormal, "DoctorRequested", "doctor run %s requested", index.Spec.Doctor.RequestID)
	// Recorded before anything acts: a conflict means another writer
	// moved first, and this run is not started twice.
	return reconcile.Result{RequeueAfter: pollInterval}, sw.write(ctx, index)
}

// doctorRestart starts the engine again after the doctor Job and ends the
// run once it is Ready. A suspended index stays stopped: the run ends at
// once, and the suspend step reports the index Suspended.
func (r *SummaIndexReconciler) doctorRestart(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod, acc access) (reconcile.Result, error) {
	d := index.Status.Doctor
	if index.Spec.Suspend {
		r.endDoctor(ctx, index, summav1.DoctorPhaseSucceeded, "")
		r.event(index, nil, corev1.EventTypeNormal, "DoctorSucceeded", "doctor run %s finished: %s; the index stays suspended",
			d.RequestID, d.Message)
		return r.reconcileSuspend(ctx, index, pod)
	}
	res, err := r.reconcileEngine(ctx, index, pod, acc)
	if err != nil || !index.IsReady() || pod == nil {
		return res, err
	}
	r.completeReport(ctx, index, pod)
	r.endDoctor(ctx, index, summav1.DoctorPhaseSucceeded, "")
	r.event(index, pod, corev1.EventTypeNormal, "DoctorSucceeded", "doctor run %s finished: %s; engine ready", d.RequestID, d.Message)
	return res, nil
}

// endDoctor ends the run in phase (Succeeded or Failed, with msg), records
// it in the history and applies the backup retention.
func (r *SummaIndexReconciler) endDoctor(ctx context.Context, index *summav1.SummaIndex, phase, msg string) {
	d := index.Status.Doctor
	now := metav1.NewTime(r.Options.Now())
	d.Phase, d.CompletionTime = phase, &now
	if msg != "" {
		d.Message = msg
	}
	recordRun(d)
	doctorRunsTotal.WithLabelValues(map[string]string{
		summav1.DoctorPhaseSucceeded: "succeeded", summav1.DoctorPhaseFailed: "failed"}[phase]).Inc()
	if err := r.pruneBackups(ctx, index); err != nil {
		// Retried when the next run ends; the volumes are only kept longer.
		log.FromContext(ctx).Info("Backup retention failed", "error", err.Error())
		r.event(index, nil, corev1.EventTypeWarning, "BackupRetentionFailed", "%v", err)
	}
}

// recordRun adds the finished run d to d.History (once), keeping the last
// MaxDoctorHistory.
func recordRun(d *summav1.DoctorStatus) {
	if d.RequestID == "" || !doctorTerminal(d.Phase) {
		return
	}
	for _, h := range d.History {
		if h.RequestID == d.RequestID {
			return
		}
	}
	d.History = append(d.History, summav1.DoctorRun{
		RequestID: d.RequestID, Phase: d.Phase, RemovedSegmentCount: d.RemovedSegmentCount,
		RemovedDocuments: d.RemovedDocuments, BackupClaimName: d.BackupClaimName, CompletionTime: d.CompletionTime,
	})
	if n := len(d.History) - summav1.MaxDoctorHistory; n > 0 {
		d.History = append([]summav1.DoctorRun(nil), d.History[n:]...)
	}
}

// failDoctor ends the run as Failed; the engine pod is started again by the
// next reconcile (unless suspended), and Degraded says why.
func (r *SummaIndexReconciler) failDoctor(ctx context.Context, index *summav1.SummaIndex, msg string, sw *statusWriter) (reconcile.Result, error) {
	d := index.Status.Doctor
	r.endDoctor(ctx, index, summav1.DoctorPhaseFailed, msg)
	r.event(index, nil, corev1.EventTypeWarning, ReasonDoctorFailed, "doctor run %s failed: %s", d.RequestID, msg)
	// The status written now shows the failure in Degraded as well, not
	// only at the end of the pass: a client that sees the run Failed
	// sees why the index is degraded in the same object.
	setDegraded(index, degradedCauses(index, nil))
	return reconcile.Result{RequeueAfter: pollInterval}, sw.write(ctx, index)
}

// doctorStopEngine drains and stops the engine pod, then moves on.
func (r *SummaIndexReconciler) doctorStopEngine(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod, sw *statusWriter) (reconcile.Result, error) {
	d := index.Status.Doctor
	if pod != nil {
		if pod.DeletionTimestamp != nil {
			return reconcile.Result{RequeueAfter: terminatingPoll}, nil
		}
		out, err := r.drainAndStop(ctx, index, pod, purposeDoctor, false)
		if err != nil {
			return reconcile.Result{}, err
		}
		if out == drainTimedOut {
			return r.failDoctor(ctx, index, "the engine did not drain within drainTimeoutSeconds; nothing was changed", sw)
		}
		return reconcile.Result{RequeueAfter: pollInterval}, nil
	}
	index.Status.PodName, index.Status.PodUID = "", ""
	if index.Spec.Doctor.EffectiveBackup() == summav1.BackupNone {
		d.Phase = summav1.DoctorPhaseRunning
	} else {
		d.Phase = summav1.DoctorPhaseBackingUp
		d.BackupClaimName = index.BackupClaimName(d.RequestID)
	}
	return reconcile.Result{RequeueAfter: pollInterval}, sw.write(ctx, index)
}

// doctorJobStep creates job (found again by name after a restart), waits
// for it, and on success moves to next. A Job whose pod cannot start is
// deleted and fails the run.
func (r *SummaIndexReconciler) doctorJobStep(ctx context.Context, index *summav1.SummaIndex, job *batchv1.Job, next string, sw *statusWriter) (reconcile.Result, error) {
	d := index.Status.Doctor
	if d.Phase == summav1.DoctorPhaseBackingUp {
		if err := r.ensureBackupClaim(ctx, index, d.BackupClaimName); err != nil {
			var taken *errBackupClaimTaken
			if errors.As(err, &taken) {
				return r.failDoctor(ctx, index, err.Error(), sw)
			}
			return reconcile.Result{}, err
		}
	} else {
		d.JobName = job.Name
	}
	cur := &batchv1.Job{}
	err := r.Get(ctx, client.ObjectKeyFromObject(job), cur)
	if apierrors.IsNotFound(err) {
		if current, err := r.doctorStepPersisted(ctx, index); err != nil || !current {
			return reconcile.Result{RequeueAfter: pollInterval}, err
		}
		if why, err := r.jobServiceAccountRefusal(ctx, index); err != nil || why != "" {
			if err != nil {
				return reconcile.Result{}, err
			}
			return r.failDoctor(ctx, index, why, sw)
		}
		if err := r.ownJob(ctx, index, job); err != nil {
			return reconcile.Result{}, err
		}
		if err := r.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("create job %s: %w", job.Name, err)
		}
		r.event(index, job, corev1.EventTypeNormal, "JobCreated", "job %s created (doctor run %s, %s)", job.Name, d.RequestID, d.Phase)
		return reconcile.Result{RequeueAfter: pollInterval}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get job %s: %w", job.Name, err)
	}
	if stale, res, err := r.staleJob(ctx, index, cur); stale || err != nil {
		return res, err
	}
	done, failed := jobFinished(cur)
	if !done {
		return r.watchJobStart(ctx, index, cur, sw)
	}
	msg, err := r.jobMessage(ctx, cur)
	if err != nil {
		return reconcile.Result{}, err
	}
	if failed {
		return r.failDoctor(ctx, index, fmt.Sprintf("job %s failed: %s", cur.Name, msg), sw)
	}
	if d.Phase == summav1.DoctorPhaseRunning {
		if err := applyDoctorReport(index, msg); err != nil {
			return r.failDoctor(ctx, index, err.Error(), sw)
		}
	}
	r.event(index, cur, corev1.EventTypeNormal, "JobSucceeded", "job %s succeeded (doctor run %s, %s)", cur.Name, d.RequestID, d.Phase)
	d.Phase = next
	return reconcile.Result{RequeueAfter: pollInterval}, sw.write(ctx, index)
}

// watchJobStart waits for a running Job; one whose pod could not start
// (see jobNotStarted) is deleted with its pod and fails the run, so that
// the engine is not held stopped by a Job that will never run.
func (r *SummaIndexReconciler) watchJobStart(ctx context.Context, index *summav1.SummaIndex, job *batchv1.Job, sw *statusWriter) (reconcile.Result, error) {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{jobNameLabel: job.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("list pods of job %s: %w", job.Name, err)
	}
	why, stuck, wait := jobNotStarted(job, pods.Items, index.Spec.Doctor.StartTimeout(), r.Options.Now())
	if !stuck {
		return reconcile.Result{RequeueAfter: min(max(wait, pollInterval), r.Options.ResyncPeriod)}, nil
	}
	if err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("delete job %s that could not start: %w", job.Name, err)
	}
	r.event(index, job, corev1.EventTypeWarning, "JobNotStarted", "job %s deleted: %s", job.Name, why)
	return r.failDoctor(ctx, index, fmt.Sprintf("job %s could not start: %s; the engine is started again", job.Name, why), sw)
}

// doctorStepPersisted reports whether the run's phase index holds is the one
// the API server has, read past the cache. A Job is created only then: a
// pass that read a stale SummaIndex (the cache has not seen the write that
// ended the run, and the Job's deletion woke the pass) must not create
// the Job of a run that is over.
func (r *SummaIndexReconciler) doctorStepPersisted(ctx context.Context, index *summav1.SummaIndex) (bool, error) {
	if r.APIReader == nil {
		return true, nil
	}
	live := &summav1.SummaIndex{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(index), live); err != nil {
		return false, fmt.Errorf("read SummaIndex %s before creating a job: %w", index.Name, err)
	}
	d, ld := index.Status.Doctor, live.Status.Doctor
	return ld != nil && ld.RequestID == d.RequestID && ld.Phase == d.Phase, nil
}

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
