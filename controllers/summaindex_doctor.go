package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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

// Doctor runs. A new spec.doctor.requestId starts one run, whose phase is
// kept in status.doctor and written (with optimistic locking) before each
// step acts, so that an operator restarted at any point resumes the same
// run and finds the same Jobs by name, and a requestId runs once:
//
//	Pending -> Draining (drain, stop the pod) -> BackingUp (copy the volume
//	unless backup: None) -> Running (the doctor Job) -> Restarting (the
//	engine pod again) -> Succeeded | Failed
//
// The copy is taken after the pod stopped, so it is consistent.

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
func doctorActive(x *summav1.SummaIndex) bool {
	d := x.Status.Doctor
	if d != nil && !doctorTerminal(d.Phase) {
		return true
	}
	id := x.Spec.Doctor.RequestID
	return id != "" && (d == nil || d.RequestID != id)
}

// doctorTerminal reports whether a run in phase p is over.
func doctorTerminal(p string) bool {
	return p == summav1.DoctorPhaseSucceeded || p == summav1.DoctorPhaseFailed
}

// doctorFailed reports whether the last doctor run failed.
func doctorFailed(x *summav1.SummaIndex) bool {
	return x.Status.Doctor != nil && x.Status.Doctor.Phase == summav1.DoctorPhaseFailed
}

// reconcileDoctor advances the doctor run by one step.
func (r *SummaIndexReconciler) reconcileDoctor(ctx context.Context, x *summav1.SummaIndex, pod *corev1.Pod, acc access, sw *statusWriter) (reconcile.Result, error) {
	d := x.Status.Doctor
	if d == nil || doctorTerminal(d.Phase) {
		now := metav1.NewTime(r.Options.Now())
		x.Status.Doctor = &summav1.DoctorStatus{RequestID: x.Spec.Doctor.RequestID, Phase: summav1.DoctorPhasePending, StartTime: &now}
		notReady(x, summav1.PhaseRepairing, "DoctorRequested", "doctor run "+x.Spec.Doctor.RequestID+" requested", true)
		r.event(x, nil, corev1.EventTypeNormal, "DoctorRequested", "doctor run %s requested", x.Spec.Doctor.RequestID)
		// Recorded before anything acts: a conflict means another writer
		// moved first, and this run is not started twice.
		return reconcile.Result{RequeueAfter: pollInterval}, sw.write(ctx, x)
	}
	if d.Phase != summav1.DoctorPhaseRestarting {
		notReady(x, summav1.PhaseRepairing, "Doctor"+d.Phase, "doctor run "+d.RequestID+": "+d.Phase, true)
	}
	switch d.Phase {
	case summav1.DoctorPhasePending:
		d.Phase = summav1.DoctorPhaseDraining
		return reconcile.Result{RequeueAfter: pollInterval}, sw.write(ctx, x)
	case summav1.DoctorPhaseDraining:
		return r.doctorStopEngine(ctx, x, pod, sw)
	case summav1.DoctorPhaseBackingUp:
		return r.doctorJobStep(ctx, x, r.backupJob(x), summav1.DoctorPhaseRunning, sw)
	case summav1.DoctorPhaseRunning:
		return r.doctorJobStep(ctx, x, r.doctorJob(x), summav1.DoctorPhaseRestarting, sw)
	case summav1.DoctorPhaseRestarting:
		res, err := r.reconcileEngine(ctx, x, pod, acc)
		if err == nil && x.IsReady() {
			now := metav1.NewTime(r.Options.Now())
			d.Phase, d.CompletionTime = summav1.DoctorPhaseSucceeded, &now
			doctorRunsTotal.WithLabelValues("succeeded").Inc()
			r.event(x, pod, corev1.EventTypeNormal, "DoctorSucceeded", "doctor run %s finished: %d segment(s) removed, %d document(s) lost; engine ready",
				d.RequestID, len(d.RemovedSegments), d.RemovedDocuments)
		}
		return res, err
	}
	return reconcile.Result{}, fmt.Errorf("unknown doctor phase %q", d.Phase)
}

// failDoctor ends the run as Failed; the engine pod is started again by the
// next reconcile, and Degraded says why.
func (r *SummaIndexReconciler) failDoctor(ctx context.Context, x *summav1.SummaIndex, msg string, sw *statusWriter) (reconcile.Result, error) {
	d := x.Status.Doctor
	now := metav1.NewTime(r.Options.Now())
	d.Phase, d.Message, d.CompletionTime = summav1.DoctorPhaseFailed, msg, &now
	doctorRunsTotal.WithLabelValues("failed").Inc()
	r.event(x, nil, corev1.EventTypeWarning, ReasonDoctorFailed, "doctor run %s failed: %s", d.RequestID, msg)
	return reconcile.Result{RequeueAfter: pollInterval}, sw.write(ctx, x)
}

// doctorStopEngine drains and stops the engine pod, then moves on.
func (r *SummaIndexReconciler) doctorStopEngine(ctx context.Context, x *summav1.SummaIndex, pod *corev1.Pod, sw *statusWriter) (reconcile.Result, error) {
	d := x.Status.Doctor
	if pod != nil {
		if pod.DeletionTimestamp != nil {
			return reconcile.Result{RequeueAfter: pollInterval}, nil
		}
		out, err := r.drainAndStop(ctx, x, pod, purposeDoctor, false)
		if err != nil {
			return reconcile.Result{}, err
		}
		if out == drainTimedOut {
			return r.failDoctor(ctx, x, "the engine did not drain within drainTimeoutSeconds; nothing was changed", sw)
		}
		return reconcile.Result{RequeueAfter: pollInterval}, nil
	}
	x.Status.PodName, x.Status.PodUID = "", ""
	if x.Spec.Doctor.EffectiveBackup() == summav1.BackupNone {
		d.Phase = summav1.DoctorPhaseRunning
	} else {
		d.Phase = summav1.DoctorPhaseBackingUp
		d.BackupClaimName = x.BackupClaimName(d.RequestID)
	}
	return reconcile.Result{RequeueAfter: pollInterval}, sw.write(ctx, x)
}

// doctorJobStep creates job (found again by name after a restart), waits
// for it, and on success moves to next.
func (r *SummaIndexReconciler) doctorJobStep(ctx context.Context, x *summav1.SummaIndex, job *batchv1.Job, next string, sw *statusWriter) (reconcile.Result, error) {
	d := x.Status.Doctor
	if d.Phase == summav1.DoctorPhaseBackingUp {
		if err := r.ensureBackupClaim(ctx, x, d.BackupClaimName); err != nil {
			var taken *errBackupClaimTaken
			if errors.As(err, &taken) {
				return r.failDoctor(ctx, x, err.Error(), sw)
			}
			return reconcile.Result{}, err
		}
	} else {
		d.JobName = job.Name
	}
	cur := &batchv1.Job{}
	err := r.Get(ctx, client.ObjectKeyFromObject(job), cur)
	if apierrors.IsNotFound(err) {
		if err := controllerutil.SetControllerReference(x, job, r.Scheme); err != nil {
			return reconcile.Result{}, fmt.Errorf("owner reference on job: %w", err)
		}
		if err := r.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("create job %s: %w", job.Name, err)
		}
		r.event(x, job, corev1.EventTypeNormal, "JobCreated", "job %s created (doctor run %s, %s)", job.Name, d.RequestID, d.Phase)
		return reconcile.Result{RequeueAfter: pollInterval}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get job %s: %w", job.Name, err)
	}
	done, failed := jobFinished(cur)
	if !done {
		return reconcile.Result{RequeueAfter: pollInterval}, nil
	}
	msg, err := r.jobMessage(ctx, cur)
	if err != nil {
		return reconcile.Result{}, err
	}
	if failed {
		return r.failDoctor(ctx, x, fmt.Sprintf("job %s failed: %s", cur.Name, msg), sw)
	}
	if d.Phase == summav1.DoctorPhaseRunning {
		if err := applyDoctorReport(x, msg); err != nil {
			return r.failDoctor(ctx, x, err.Error(), sw)
		}
	}
	r.event(x, cur, corev1.EventTypeNormal, "JobSucceeded", "job %s succeeded (doctor run %s, %s)", cur.Name, d.RequestID, d.Phase)
	d.Phase = next
	return reconcile.Result{RequeueAfter: pollInterval}, sw.write(ctx, x)
}

// jobFinished reports whether the Job ended, and whether it failed.
func jobFinished(j *batchv1.Job) (done, failed bool) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, false
		case batchv1.JobFailed:
			return true, true
		}
	}
	return false, false
}

// jobMessage returns the termination message of the Job's pod (its
// report), or what is known of its end when there is none.
func (r *SummaIndexReconciler) jobMessage(ctx context.Context, j *batchv1.Job) (string, error) {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(j.Namespace), client.MatchingLabels{jobNameLabel: j.Name}); err != nil {
		return "", fmt.Errorf("list pods of job %s: %w", j.Name, err)
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil {
				if t.Message != "" {
					return strings.TrimSpace(t.Message), nil
				}
				return fmt.Sprintf("exit code %d (%s)", t.ExitCode, t.Reason), nil
			}
		}
	}
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return c.Reason + ": " + c.Message, nil
		}
	}
	return "", nil
}

// doctorReport is the part of summa-server --doctor's report the operator
// records (engine contract).
type doctorReport struct {
	Indexes []struct {
		Name             string   `json:"name"`
		CheckedSegments  int64    `json:"checkedSegments"`
		RemovedSegments  []string `json:"removedSegments"`
		RemovedDocuments int64    `json:"removedDocuments"`
	} `json:"indexes"`
}

// applyDoctorReport records x's entry of a doctor report in status.
func applyDoctorReport(x *summav1.SummaIndex, msg string) error {
	var rep doctorReport
	if err := json.Unmarshal([]byte(msg), &rep); err != nil {
		return fmt.Errorf("the doctor's report is not JSON (%v): %.200s", err, msg)
	}
	d := x.Status.Doctor
	d.RemovedSegments, d.RemovedDocuments, d.CheckedSegments = nil, 0, 0
	for _, ix := range rep.Indexes {
		if ix.Name == x.Name {
			d.CheckedSegments = ix.CheckedSegments
			d.RemovedSegments = ix.RemovedSegments
			d.RemovedDocuments = ix.RemovedDocuments
		}
	}
	d.Message = fmt.Sprintf("checked %d segment(s), removed %d, %d document(s) lost",
		d.CheckedSegments, len(d.RemovedSegments), d.RemovedDocuments)
	return nil
}

// errBackupClaimTaken: a volume of the backup's name exists and is not
// this run's (index foo with requestId backup-x and index foo-backup with
// requestId x name the same volume). The run fails rather than copy onto,
// or count as a backup, another index's volume.
type errBackupClaimTaken struct{ msg string }

func (e *errBackupClaimTaken) Error() string { return e.msg }

// ensureBackupClaim creates the backup volume, as large as the data volume.
// An existing volume of that name is this run's only if this SummaIndex
// controls it and it carries this index's label.
func (r *SummaIndexReconciler) ensureBackupClaim(ctx context.Context, x *summav1.SummaIndex, name string) error {
	cur := &corev1.PersistentVolumeClaim{}
	err := r.getLive(ctx, client.ObjectKey{Namespace: x.Namespace, Name: name}, cur)
	if err == nil {
		if !metav1.IsControlledBy(cur, x) || cur.Labels[summav1.LabelIndex] != x.Name {
			return &errBackupClaimTaken{msg: fmt.Sprintf("a volume named %s exists and is not this index's backup "+
				"(labelled for %q); set spec.doctor.requestId to another value", name, cur.Labels[summav1.LabelIndex])}
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get backup volume %s: %w", name, err)
	}
	pvc := claim(x, name, x.Spec.Storage.Size)
	if err := controllerutil.SetControllerReference(x, pvc, r.Scheme); err != nil {
		return fmt.Errorf("owner reference on backup volume: %w", err)
	}
	if err := r.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create backup volume %s: %w", name, err)
	}
	r.event(x, pvc, corev1.EventTypeNormal, "BackupVolumeCreated", "backup volume %s created", name)
	return nil
}

// jobFor builds a one-shot Job of the engine image on the data volume.
func (r *SummaIndexReconciler) jobFor(x *summav1.SummaIndex, name, container string, args []string, extra ...corev1.Volume) *batchv1.Job {
	mounts := []corev1.VolumeMount{{Name: dataVolumeName, MountPath: DataMountPath}}
	volumes := []corev1.Volume{{Name: dataVolumeName, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: x.DataClaimName()}}}}
	for _, v := range extra {
		volumes = append(volumes, v)
		mounts = append(mounts, corev1.VolumeMount{Name: v.Name, MountPath: backupMountPath})
	}
	labels := x.Labels()
	labels[LabelComponent] = container
	var prepare []corev1.Container
	if r.Options.VolumePermissions {
		for i, m := range mounts {
			prepare = append(prepare, volumePermissionsContainer(fmt.Sprintf("volume-permissions-%d", i), r.image(x), m))
		}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: x.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					SecurityContext:              restrictedPod(),
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					Volumes:                      volumes,
					InitContainers:               prepare,
					Containers: []corev1.Container{{
						Name:                     container,
						Image:                    r.image(x),
						Command:                  []string{EngineCommand},
						Args:                     args,
						Resources:                *x.Spec.Resources.DeepCopy(),
						VolumeMounts:             mounts,
						TerminationMessagePath:   terminationLog,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						ImagePullPolicy:          corev1.PullIfNotPresent,
						SecurityContext:          restrictedContainer(),
					}},
				},
			},
		},
	}
}

// doctorJob is the Job running summa-server --doctor on the data volume.
func (r *SummaIndexReconciler) doctorJob(x *summav1.SummaIndex) *batchv1.Job {
	return r.jobFor(x, x.DoctorJobName(x.Status.Doctor.RequestID), doctorContainer,
		[]string{"--data-dir", DataMountPath, "--doctor", "--report-file", terminationLog})
}

// backupJob is the Job copying the data volume to the backup volume.
func (r *SummaIndexReconciler) backupJob(x *summav1.SummaIndex) *batchv1.Job {
	d := x.Status.Doctor
	return r.jobFor(x, x.BackupJobName(d.RequestID), backupContainer,
		[]string{"backup", "--data-dir", DataMountPath, "--to", backupMountPath, "--report-file", terminationLog},
		corev1.Volume{Name: "summa-backup", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: d.BackupClaimName}}})
}
