package controllers

import (
	"context"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	summav1 "github.com/summadev/summa/api/v1"
)

// Retention: spec.backup.keep.
//
// In the bucket, after each completed backup the operator runs one Job,
// <name>-s3-prune, with `summa-server backup prune --index NAME
// --keep N` (the engine's prune removes older manifests first, then the
// objects no remaining manifest names, safely beside a running backup).
// The backup it ran for is annotated summa.dev/pruned (Succeeded or
// Failed) once the Job ended, and the Job is deleted: each completed
// backup is followed by one prune, and a new one waits for the Job of the
// previous one.
//
// In the API, the scheduled SummaIndexBackups (owned by the index) beyond
// keep completed ones, and beyond keep failed ones, are deleted, oldest
// first. Backups a person created are left alone.

const (
	// AnnotationPruned records on a completed backup the result of the
	// prune that followed it.
	AnnotationPruned = "summa.dev/pruned"
	// pruneContainer names the prune Job's container and component.
	pruneContainer = "prune"
)

// retainBackups applies spec.backup.keep; backups is newest first.
func (r *SummaIndexReconciler) retainBackups(ctx context.Context, index *summav1.SummaIndex, backups []summav1.SummaIndexBackup) error {
	keep := index.Spec.Backup.BackupKeep()
	kept := map[summav1.BackupPhase]int{}
	for i := range backups {
		b := &backups[i]
		if !b.Finished() || !isOwnedBy(b, index) {
			continue
		}
		kept[b.Status.Phase]++
		if kept[b.Status.Phase] <= keep {
			continue
		}
		if err := r.Delete(ctx, b); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete SummaIndexBackup %s beyond keep %d: %w", b.Name, keep, err)
		}
		r.event(index, nil, corev1.EventTypeNormal, "BackupRetired", "SummaIndexBackup %s deleted (keep %d)", b.Name, keep)
	}
	return r.pruneBucket(ctx, index, backups)
}

// pruneBucket runs the prune Job after the newest completed backup.
func (r *SummaIndexReconciler) pruneBucket(ctx context.Context, index *summav1.SummaIndex, backups []summav1.SummaIndexBackup) error {
	job := &batchv1.Job{}
	err := r.getLive(ctx, client.ObjectKey{Namespace: index.Namespace, Name: index.BackupPruneJobName()}, job)
	switch {
	case err == nil:
		return r.finishPrune(ctx, index, job, backups)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("get prune job: %w", err)
	}
	var newest *summav1.SummaIndexBackup
	for i := range backups {
		if backups[i].Status.Phase == summav1.BackupPhaseCompleted {
			newest = &backups[i]
			break
		}
	}
	if newest == nil || newest.Annotations[AnnotationPruned] != "" {
		return nil
	}
	if err := r.ensureBackupCredentials(ctx, index); err != nil {
		return err
	}
	job = r.pruneJob(index, newest.Name)
	if err := controllerutil.SetControllerReference(index, job, r.Scheme); err != nil {
		return fmt.Errorf("owner reference on job: %w", err)
	}
	if err := r.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create prune job %s: %w", job.Name, err)
	}
	r.event(index, job, corev1.EventTypeNormal, "BackupPruneStarted", "prune job %s keeps the newest %d backups (after %s)",
		job.Name, index.Spec.Backup.BackupKeep(), newest.Status.BackupID)
	return nil
}

// finishPrune records the end of a prune Job on its backup and deletes
// the Job.
func (r *SummaIndexReconciler) finishPrune(ctx context.Context, index *summav1.SummaIndex, job *batchv1.Job, backups []summav1.SummaIndexBackup) error {
	done, jobFailed := jobFinished(job)
	if !done || job.DeletionTimestamp != nil {
		return nil
	}
	result := "Succeeded"
	if jobFailed {
		result = "Failed"
		msg, _ := r.jobMessage(ctx, job)
		r.event(index, job, corev1.EventTypeWarning, "BackupPruneFailed", "prune job %s failed: %s", job.Name, clip(msg, 512))
	}
	for i := range backups {
		if b := &backups[i]; b.Name == job.Annotations[AnnotationPruned] && b.Annotations[AnnotationPruned] == "" {
			if err := r.markBackup(ctx, b, AnnotationPruned, result); err != nil {
				return err
			}
		}
	}
	if err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete prune job %s: %w", job.Name, err)
	}
	return nil
}

// pruneJob is the Job pruning the bucket after backup (a SummaIndexBackup
// name): it reaches the object store only, not the data volume.
func (r *SummaIndexReconciler) pruneJob(index *summav1.SummaIndex, backup string) *batchv1.Job {
	s3 := &index.Spec.Backup.S3
	args := append([]string{"backup", "prune", "--index", index.Name, "--keep", strconv.Itoa(index.Spec.Backup.BackupKeep())}, s3Args(s3)...)
	job := r.jobFor(index, index.BackupPruneJobName(), pruneContainer, args)
	job.Annotations = map[string]string{AnnotationPruned: backup}
	pod := &job.Spec.Template.Spec
	pod.InitContainers = nil
	pod.Volumes = s3Volumes(s3, index.S3CredentialsSecretName())
	pod.Containers[0].VolumeMounts = s3Mounts(s3)
	pod.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	return job
}
