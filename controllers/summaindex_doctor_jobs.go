package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// The backup and doctor Jobs, their volumes and what is kept of them.

// jobTTLSeconds is the Jobs' ttlSecondsAfterFinished: long enough for an
// operator that was down to read a finished Job's result (a Job found
// missing is created again), short enough that finished Jobs do not pile
// up.
const jobTTLSeconds = 24 * 3600

// jobPodSettings are the pod settings the Jobs take from
// spec.podTemplate.spec, so that they run where the engine may run, with
// the same pull credentials and priority.
type jobPodSettings struct {
	// NodeSelector, Affinity and Tolerations place the pod where the data
	// volume can be attached.
	NodeSelector map[string]string
	// Affinity is the template's affinity.
	Affinity *corev1.Affinity
	// Tolerations are the template's tolerations.
	Tolerations []corev1.Toleration
	// ImagePullSecrets pull the engine image from a private registry.
	ImagePullSecrets []corev1.LocalObjectReference
	// PriorityClassName: a run holds the engine stopped, so it is as
	// important as the engine.
	PriorityClassName string
	// ServiceAccountName: its image pull secrets and the admission rules
	// bound to it apply to the Jobs too (its token is not mounted).
	ServiceAccountName string
}

// jobScheduling returns index's pod settings for its Jobs.
func jobScheduling(index *summav1.SummaIndex) jobPodSettings {
	t := index.Spec.PodTemplate
	if t == nil {
		return jobPodSettings{}
	}
	s := t.Spec.DeepCopy()
	return jobPodSettings{NodeSelector: s.NodeSelector, Affinity: s.Affinity, Tolerations: s.Tolerations,
		ImagePullSecrets: s.ImagePullSecrets, PriorityClassName: s.PriorityClassName, ServiceAccountName: s.ServiceAccountName}
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

// errBackupClaimTaken: a volume of the backup's name exists and is not
// this run's (index foo with requestId backup-x and index foo-backup with
// requestId x name the same volume). The run fails rather than copy onto,
// or count as a backup, another index's volume.
type errBackupClaimTaken struct{ msg string }

func (e *errBackupClaimTaken) Error() string { return e.msg }

// ensureBackupClaim creates the backup volume, as large as the data volume.
// An existing volume of that name is this run's only if it is this
// SummaIndex's (ownsClaim) and carries this index's label. Like the data
// volume, it is owned as spec.storage.reclaimPolicy asks.
func (r *SummaIndexReconciler) ensureBackupClaim(ctx context.Context, index *summav1.SummaIndex, name string) error {
	cur := &corev1.PersistentVolumeClaim{}
	err := r.getLive(ctx, client.ObjectKey{Namespace: index.Namespace, Name: name}, cur)
	if err == nil {
		if !ownsClaim(index, cur) || cur.Labels[summav1.LabelIndex] != index.Name {
			return &errBackupClaimTaken{msg: fmt.Sprintf("a volume named %s exists and is not this index's backup "+
				"(labelled for %q); set spec.doctor.requestId to another value", name, cur.Labels[summav1.LabelIndex])}
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get backup volume %s: %w", name, err)
	}
	pvc, err := r.newClaim(index, name, index.Spec.Storage.Size)
	if err != nil {
		return err
	}
	pvc.Labels[LabelComponent] = backupContainer
	if err := r.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create backup volume %s: %w", name, err)
	}
	r.event(index, pvc, corev1.EventTypeNormal, "BackupVolumeCreated", "backup volume %s created", name)
	return nil
}

// jobFor builds a one-shot Job of the engine image on the data volume.
func (r *SummaIndexReconciler) jobFor(index *summav1.SummaIndex, name, container string, args []string, extra ...corev1.Volume) *batchv1.Job {
	mounts := []corev1.VolumeMount{{Name: dataVolumeName, MountPath: DataMountPath}}
	volumes := []corev1.Volume{{Name: dataVolumeName, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: index.DataClaimName()}}}}
	for _, v := range extra {
		volumes = append(volumes, v)
		mounts = append(mounts, corev1.VolumeMount{Name: v.Name, MountPath: backupMountPath})
	}
	labels := index.Labels()
	labels[LabelComponent] = container
	var prepare []corev1.Container
	if r.Options.VolumePermissions {
		for i, m := range mounts {
			prepare = append(prepare, volumePermissionsContainer(fmt.Sprintf("volume-permissions-%d", i), r.image(index), m))
		}
	}
	sched := jobScheduling(index)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: index.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			// One attempt: a doctor or a copy that failed is reported, not
			// retried on a volume it may have half changed.
			BackoffLimit:            ptr.To[int32](0),
			ActiveDeadlineSeconds:   ptr.To(index.Spec.Doctor.EffectiveActiveDeadlineSeconds()),
			TTLSecondsAfterFinished: ptr.To[int32](jobTTLSeconds),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					SecurityContext:              restrictedPod(),
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					NodeSelector:                 sched.NodeSelector,
					Affinity:                     sched.Affinity,
					Tolerations:                  sched.Tolerations,
					ImagePullSecrets:             sched.ImagePullSecrets,
					PriorityClassName:            sched.PriorityClassName,
					ServiceAccountName:           sched.ServiceAccountName,
					Volumes:                      volumes,
					InitContainers:               prepare,
					Containers: []corev1.Container{{
						Name:                     container,
						Image:                    r.image(index),
						Command:                  []string{EngineCommand},
						Args:                     args,
						Resources:                engineResources(index),
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
// The whole report is kept on the volume under the requestId, and the
// termination message gets its summary: both through environment
// variables, which an engine image older than them ignores (it writes the
// whole report to --report-file, as before).
func (r *SummaIndexReconciler) doctorJob(index *summav1.SummaIndex) *batchv1.Job {
	id := index.Status.Doctor.RequestID
	job := r.jobFor(index, index.DoctorJobName(id), doctorContainer,
		[]string{"--data-dir", DataMountPath, "--doctor", "--report-file", terminationLog})
	c := &job.Spec.Template.Spec.Containers[0]
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "SUMMA_REPORT_ID", Value: id},
		corev1.EnvVar{Name: "SUMMA_SUMMARY_FILE", Value: terminationLog})
	return job
}

// backupJob is the Job copying the data volume to the backup volume.
func (r *SummaIndexReconciler) backupJob(index *summav1.SummaIndex) *batchv1.Job {
	d := index.Status.Doctor
	return r.jobFor(index, index.BackupJobName(d.RequestID), backupContainer,
		[]string{"backup", "--data-dir", DataMountPath, "--to", backupMountPath, "--report-file", terminationLog},
		corev1.Volume{Name: "summa-backup", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: d.BackupClaimName}}})
}

// Waiting reasons of a container whose image will never be pulled as it
// is: the run fails at once.
var hopelessWaiting = map[string]bool{"InvalidImageName": true, "ErrImageNeverPull": true}

// jobNotStarted tells whether job's pod could not start: no container of
// it (init containers included) ever ran, and either its image can never
// be pulled, or timeout passed since the pod (or, without a pod, the Job)
// was created. why says what held it (an image pull failure, an
// unschedulable pod); wait is when to look again otherwise.
func jobNotStarted(job *batchv1.Job, pods []corev1.Pod, timeout time.Duration, now time.Time) (why string, stuck bool, wait time.Duration) {
	since := job.CreationTimestamp.Time
	why = "no pod was created for it (see the Job's events)"
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		since = p.CreationTimestamp.Time
		if podStarted(p) {
			return "", false, timeout
		}
		reason, hopeless := podWaitingReason(p)
		if hopeless {
			return reason, true, 0
		}
		why = "pod " + p.Name + " did not start"
		if reason != "" {
			why = reason
		}
	}
	elapsed := now.Sub(since)
	if elapsed < timeout {
		return "", false, timeout - elapsed
	}
	return fmt.Sprintf("%s (for %s; spec.doctor.startTimeoutSeconds is %d)", why,
		elapsed.Truncate(time.Second), int(timeout/time.Second)), true, 0
}

// podStarted reports whether a container of p (init containers included)
// runs or ran.
func podStarted(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
				return true
			}
		}
	}
	return false
}

// podWaitingReason says why a pod that did not start waits: a container's
// waiting reason (an image pull failure) or the scheduler's verdict; and
// whether that can never change.
func podWaitingReason(p *corev1.Pod) (string, bool) {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			w := cs.State.Waiting
			if w == nil || w.Reason == "" || w.Reason == "PodInitializing" || w.Reason == "ContainerCreating" {
				continue
			}
			msg := fmt.Sprintf("container %s (image %s): %s", cs.Name, cs.Image, w.Reason)
			if w.Message != "" {
				msg += ": " + clip(w.Message, 300)
			}
			return msg, hopelessWaiting[w.Reason]
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("pod %s is not scheduled: %s: %s", p.Name, c.Reason, clip(c.Message, 300)), false
		}
	}
	return "", false
}

// pruneBackups deletes index's backup volumes beyond spec.doctor.keepBackups,
// oldest first; the backup of the current (just ended) run is never
// deleted. Only index's volumes (ownsClaim) named as its backups are counted.
func (r *SummaIndexReconciler) pruneBackups(ctx context.Context, index *summav1.SummaIndex) error {
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, list, client.InNamespace(index.Namespace), client.MatchingLabels{summav1.LabelIndex: index.Name}); err != nil {
		return fmt.Errorf("list backup volumes: %w", err)
	}
	current := ""
	if d := index.Status.Doctor; d != nil {
		current = d.BackupClaimName
	}
	var backups []corev1.PersistentVolumeClaim
	for _, pvc := range list.Items {
		if ownsClaim(index, &pvc) && pvc.DeletionTimestamp == nil && pvc.Name != index.DataClaimName() &&
			strings.HasPrefix(pvc.Name, index.Name+"-backup-") {
			backups = append(backups, pvc)
		}
	}
	// Newest first; the current run's before all others.
	sort.SliceStable(backups, func(i, j int) bool {
		a, b := &backups[i], &backups[j]
		if (a.Name == current) != (b.Name == current) {
			return a.Name == current
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return b.CreationTimestamp.Before(&a.CreationTimestamp)
		}
		return a.Name > b.Name
	})
	keep := index.Spec.Doctor.EffectiveKeepBackups()
	for i := range backups {
		pvc := &backups[i]
		if i < keep || pvc.Name == current {
			continue
		}
		if err := r.deleteExact(ctx, pvc, "backup volume"); err != nil {
			return err
		}
		r.event(index, pvc, corev1.EventTypeNormal, "BackupVolumeDeleted",
			"backup volume %s deleted (spec.doctor.keepBackups is %d)", pvc.Name, keep)
	}
	return nil
}
