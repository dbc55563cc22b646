package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	summav1 "github.com/summadev/summa/api/v1"
)

// Scheduled backups, status.lastBackup and the backup metrics.
//
// spec.backup.schedule is a standard cron expression (five fields or a
// descriptor, github.com/robfig/cron/v3) read in UTC on
// Options.BackupClock. When a run is due, the operator creates the
// SummaIndexBackup <name>-<yyyymmdd-hhmmss> of that run (owned by the
// SummaIndex, annotated summa.dev/scheduled-at): the name makes a run's
// creation idempotent across operator restarts. Runs missed while the
// operator was away collapse into the latest one, and no run starts while
// another backup of the index is unfinished (the next pass looks again).

// backupBusyPoll is the requeue of a due run waiting for an unfinished
// backup.
const backupBusyPoll = 5 * time.Second

// backupsOf lists the SummaIndexBackups of index (spec.index), newest first.
func (r *SummaIndexReconciler) backupsOf(ctx context.Context, index *summav1.SummaIndex) ([]summav1.SummaIndexBackup, error) {
	list := &summav1.SummaIndexBackupList{}
	if err := r.List(ctx, list, client.InNamespace(index.Namespace)); err != nil {
		return nil, fmt.Errorf("list SummaIndexBackups: %w", err)
	}
	var out []summav1.SummaIndexBackup
	for _, b := range list.Items {
		if b.Spec.Index == index.Name {
			out = append(out, b)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[j].CreationTimestamp.Before(&out[i].CreationTimestamp) ||
			(out[i].CreationTimestamp.Equal(&out[j].CreationTimestamp) && out[i].Name > out[j].Name)
	})
	return out, nil
}

// recordLastBackup sets status.lastBackup from the newest completed
// backup and the last-success gauge.
func recordLastBackup(index *summav1.SummaIndex, backups []summav1.SummaIndexBackup) {
	var last *summav1.SummaIndexBackup
	for i := range backups {
		b := &backups[i]
		if b.Status.Phase != summav1.BackupPhaseCompleted || b.Status.CompletedAt == nil {
			continue
		}
		if last == nil || last.Status.CompletedAt.Before(b.Status.CompletedAt) {
			last = b
		}
	}
	success := index.CreationTimestamp.Time
	if last != nil {
		index.Status.LastBackup = &summav1.LastBackup{ID: last.Status.BackupID, Generation: last.Status.Generation,
			CompletedAt: last.Status.CompletedAt.DeepCopy()}
		success = last.Status.CompletedAt.Time
	}
	if index.Spec.Backup != nil {
		lastBackupSuccess.WithLabelValues(index.Namespace, index.Name).Set(float64(success.Unix()))
	}
}

// ensureBackupCredentials keeps the engine's credentials file of
// spec.backup.s3 (before the pod that mounts it).
func (r *SummaIndexReconciler) ensureBackupCredentials(ctx context.Context, index *summav1.SummaIndex) error {
	if index.Spec.Backup == nil || index.DeletionTimestamp != nil {
		return nil
	}
	return r.ensureS3Credentials(ctx, index, &index.Spec.Backup.S3, index.S3CredentialsSecretName())
}

// reconcileBackups records the last backup, starts a scheduled one when
// due and prunes after a success; it returns when to look again (zero:
// no wish).
func (r *SummaIndexReconciler) reconcileBackups(ctx context.Context, index *summav1.SummaIndex) (time.Duration, error) {
	if index.DeletionTimestamp != nil {
		return 0, nil
	}
	backups, err := r.backupsOf(ctx, index)
	if err != nil {
		return 0, err
	}
	recordLastBackup(index, backups)
	if index.Spec.Backup == nil {
		forgetBackupMetrics(index.Namespace, index.Name)
		return 0, nil
	}
	var wait time.Duration
	if spec := index.Spec.Backup.Schedule; spec != "" {
		sched, perr := cron.ParseStandard(spec)
		if perr != nil {
			backupSchedulePeriod.DeleteLabelValues(index.Namespace, index.Name)
			err = failed(ReasonInvalidBackupSchedule, fmt.Errorf("spec.backup.schedule %q is not a valid cron expression (five fields, UTC): %w", spec, perr))
		} else {
			now := r.Options.BackupClock().UTC()
			backupSchedulePeriod.WithLabelValues(index.Namespace, index.Name).Set(schedulePeriod(sched, now).Seconds())
			wait, err = r.scheduleBackup(ctx, index, sched, backups, now)
		}
	} else {
		backupSchedulePeriod.DeleteLabelValues(index.Namespace, index.Name)
	}
	return wait, errors.Join(err, r.retainBackups(ctx, index, backups))
}

// schedulePeriod is the longest gap between the next runs of sched.
func schedulePeriod(sched cron.Schedule, now time.Time) time.Duration {
	var longest time.Duration
	t := sched.Next(now)
	for range 32 {
		n := sched.Next(t)
		if n.IsZero() {
			break
		}
		longest = max(longest, n.Sub(t))
		t = n
	}
	return longest
}

// scheduledAt is the schedule time of a scheduled backup.
func scheduledAt(b *summav1.SummaIndexBackup) (time.Time, bool) {
	v, ok := b.Annotations[summav1.AnnotationScheduledAt]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	return t, err == nil
}

// scheduleBackup creates the SummaIndexBackup of the latest due run of
// sched, if any, and returns the time until the next run.
func (r *SummaIndexReconciler) scheduleBackup(ctx context.Context, index *summav1.SummaIndex, sched cron.Schedule, backups []summav1.SummaIndexBackup, now time.Time) (time.Duration, error) {
	base := index.CreationTimestamp.UTC()
	busy := false
	for i := range backups {
		if t, ok := scheduledAt(&backups[i]); ok && t.After(base) {
			base = t
		}
		busy = busy || !backups[i].Finished()
	}
	due := sched.Next(base)
	if due.IsZero() || due.After(now) {
		return max(pollInterval, due.Sub(now)), nil
	}
	for range 100000 { // the latest missed run
		n := sched.Next(due)
		if n.IsZero() || n.After(now) {
			break
		}
		due = n
	}
	if busy {
		return backupBusyPoll, nil
	}
	b := &summav1.SummaIndexBackup{
		ObjectMeta: metav1.ObjectMeta{Name: index.Name + "-" + due.Format("20060102-150405"), Namespace: index.Namespace,
			Labels: index.Labels(), Annotations: map[string]string{summav1.AnnotationScheduledAt: due.Format(time.RFC3339)}},
		Spec: summav1.SummaIndexBackupSpec{Index: index.Name},
	}
	if err := controllerutil.SetControllerReference(index, b, r.Scheme); err != nil {
		return 0, fmt.Errorf("owner reference on backup: %w", err)
	}
	if err := r.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return 0, failed(ReasonBackupFailed, fmt.Errorf("create scheduled SummaIndexBackup %s: %w", b.Name, err))
	}
	r.event(index, nil, corev1.EventTypeNormal, "BackupScheduled", "scheduled backup %s created for the run of %s", b.Name, due.Format(time.RFC3339))
	return max(pollInterval, sched.Next(due).Sub(now)), nil
}

// markBackup sets an annotation on a backup.
func (r *SummaIndexReconciler) markBackup(ctx context.Context, b *summav1.SummaIndexBackup, key, value string) error {
	if err := r.annotate(ctx, b, key, value); err != nil {
		return fmt.Errorf("SummaIndexBackup %s: %w", b.Name, err)
	}
	return nil
}

// isOwnedBy reports whether index controls b (a scheduled backup).
func isOwnedBy(b *summav1.SummaIndexBackup, index *summav1.SummaIndex) bool {
	return ptr.Deref(metav1.GetControllerOf(b), metav1.OwnerReference{}).UID == index.UID
}

// indexOfBackup maps a SummaIndexBackup to the SummaIndex it backs up.
func indexOfBackup(_ context.Context, obj client.Object) []reconcile.Request {
	b, ok := obj.(*summav1.SummaIndexBackup)
	if !ok || b.Spec.Index == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.Index}}}
}

// backupCredentialsStep is the pass step of the S3 credentials Secret of
// spec.backup.
func (r *SummaIndexReconciler) backupCredentialsStep(ctx context.Context, p *pass) error {
	return r.ensureBackupCredentials(ctx, p.index)
}

// backupsStep is the pass step of the scheduled backups and their
// retention.
func (r *SummaIndexReconciler) backupsStep(ctx context.Context, p *pass) error {
	wait, err := r.reconcileBackups(ctx, p.index)
	p.requeue(reconcile.Result{RequeueAfter: wait})
	return err
}
