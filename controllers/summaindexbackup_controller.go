package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
)

// SummaIndexBackup: one online backup of an index. The reconciler asks the
// index's leader engine for it (POST /v1/indexes/{index}/backups, admin
// token, as engineFor speaks to the engine), records the engine's backup
// ID in status before anything else, then polls GET .../backups/{id} at
// backupPoll until the engine says completed or failed. It never blocks
// a worker: every wait is a requeue.

// backupPoll is the requeue of a running backup.
const backupPoll = 2 * time.Second

// backupWaitEngine is the requeue of a backup waiting for its engine.
const backupWaitEngine = 5 * time.Second

// SummaIndexBackupReconciler reconciles SummaIndexBackup objects.
type SummaIndexBackupReconciler struct {
	// Client reads and writes the API server.
	client.Client
	// Scheme knows the API types.
	Scheme *runtime.Scheme
	// Recorder emits the backups' events.
	Recorder events.EventRecorder
	// Indexes is the SummaIndex reconciler, whose engine clients (TLS,
	// admin token) this one uses.
	Indexes *SummaIndexReconciler
}

// Reconcile runs one step of a backup and writes its status when it
// changed.
func (r *SummaIndexBackupReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	b := &summav1.SummaIndexBackup{}
	if err := r.Get(ctx, req.NamespacedName, b); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if b.Finished() {
		return reconcile.Result{}, nil
	}
	before := b.Status.DeepCopy()
	res, err := r.step(ctx, b)
	if !equality.Semantic.DeepEqual(*before, b.Status) {
		if werr := r.Status().Update(ctx, b); werr != nil {
			if apierrors.IsConflict(werr) || apierrors.IsNotFound(werr) {
				return reconcile.Result{Requeue: true}, nil
			}
			return res, errors.Join(err, fmt.Errorf("update status of backup %s: %w", b.Name, werr))
		}
		if b.Finished() {
			r.finished(b)
		}
	}
	return res, err
}

// finished records the event and metric of a backup that just ended.
func (r *SummaIndexBackupReconciler) finished(b *summav1.SummaIndexBackup) {
	backupsTotal.WithLabelValues(b.Namespace, b.Spec.Index, string(b.Status.Phase)).Inc()
	if r.Recorder == nil {
		return
	}
	if b.Status.Phase == summav1.BackupPhaseCompleted {
		r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, "BackupCompleted", "BackupCompleted",
			"backup %s of %s completed: generation %d, %d documents, %d bytes uploaded",
			b.Status.BackupID, b.Spec.Index, b.Status.Generation, b.Status.Documents, b.Status.Bytes)
		return
	}
	r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, "BackupFailed", "BackupFailed", "backup of %s failed: %s", b.Spec.Index, b.Status.Message)
}

// fail ends b as Failed with message.
func (r *SummaIndexBackupReconciler) fail(b *summav1.SummaIndexBackup, message string) {
	b.Status.Phase = summav1.BackupPhaseFailed
	b.Status.Message = message
	b.Status.CompletedAt = ptr.To(metav1.NewTime(r.Indexes.Options.Now()))
}

// step moves b one step: find the engine, start the backup, follow it.
func (r *SummaIndexBackupReconciler) step(ctx context.Context, b *summav1.SummaIndexBackup) (reconcile.Result, error) {
	if b.Status.Phase == "" {
		b.Status.Phase = summav1.BackupPhasePending
	}
	index := &summav1.SummaIndex{}
	err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Index}, index)
	if apierrors.IsNotFound(err) {
		r.fail(b, fmt.Sprintf("SummaIndex %s does not exist in namespace %s", b.Spec.Index, b.Namespace))
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get SummaIndex %s: %w", b.Spec.Index, err)
	}
	pod, err := r.Indexes.enginePod(ctx, index)
	if err != nil {
		return reconcile.Result{}, err
	}
	if pod == nil || !engineReady(pod) {
		b.Status.Message = "waiting for the engine of SummaIndex " + index.Name + " to be ready"
		return reconcile.Result{RequeueAfter: backupWaitEngine}, nil
	}
	if s3 := backupS3(index); s3 != nil && b.Status.BackupID == "" && !engineHasObjectStore(pod, s3) {
		// spec.backup was set (or changed) and the leader has not yet
		// restarted with it: the engine would answer BackupNotConfigured.
		b.Status.Message = "waiting for the engine of SummaIndex " + index.Name + " to restart with its spec.backup.s3"
		return reconcile.Result{RequeueAfter: backupWaitEngine}, nil
	}
	cl, err := r.Indexes.engineFor(ctx, index, pod)
	if err != nil {
		b.Status.Message = err.Error()
		return reconcile.Result{RequeueAfter: backupWaitEngine}, nil
	}
	if b.Status.BackupID == "" {
		return r.start(ctx, b, index, cl)
	}
	return r.follow(ctx, b, index, cl)
}

// engineHasObjectStore reports whether pod's engine container runs with
// the object store s (every --s3-* flag of s).
func engineHasObjectStore(pod *corev1.Pod, s3 *summav1.S3Spec) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name != EngineContainerName {
				continue
			}
			have := map[string]bool{}
			for _, a := range list[i].Args {
				have[a] = true
			}
			for _, a := range s3Args(s3) {
				if !have[a] {
					return false
				}
			}
			return true
		}
	}
	return false
}

// start asks the engine for the backup and records its ID.
func (r *SummaIndexBackupReconciler) start(ctx context.Context, b *summav1.SummaIndexBackup, index *summav1.SummaIndex, cl *engineclient.Client) (reconcile.Result, error) {
	bk, err := cl.StartBackup(ctx, index.Name)
	var apiErr *engineclient.APIError
	switch {
	case engineclient.IsCode(err, engineclient.CodeBackupNotConfigured):
		r.fail(b, "the engine of SummaIndex "+index.Name+" has no object store (BackupNotConfigured): set spec.backup.s3 on it")
		return reconcile.Result{}, nil
	case errors.As(err, &apiErr) && !apiErr.Retryable && apiErr.StatusCode < 500:
		r.fail(b, "the engine refused the backup: "+err.Error())
		return reconcile.Result{}, nil
	case err != nil:
		b.Status.Message = "starting the backup: " + err.Error()
		return reconcile.Result{RequeueAfter: backupWaitEngine}, nil
	}
	b.Status.Phase = summav1.BackupPhaseRunning
	b.Status.BackupID = bk.ID
	r.copyFigures(b, bk)
	b.Status.Message = "the engine uploads generation " + fmt.Sprint(bk.Generation)
	return reconcile.Result{RequeueAfter: backupPoll}, nil
}

// follow reads the backup's progress from the engine.
func (r *SummaIndexBackupReconciler) follow(ctx context.Context, b *summav1.SummaIndexBackup, index *summav1.SummaIndex, cl *engineclient.Client) (reconcile.Result, error) {
	bk, err := cl.GetBackup(ctx, index.Name, b.Status.BackupID)
	switch {
	case engineclient.IsCode(err, engineclient.CodeBackupNotFound):
		r.fail(b, "the engine no longer runs backup "+b.Status.BackupID+" and the bucket has no manifest of it (the engine restarted while it ran)")
		return reconcile.Result{}, nil
	case err != nil:
		b.Status.Message = "reading the backup's progress: " + err.Error()
		return reconcile.Result{RequeueAfter: backupWaitEngine}, nil
	}
	r.copyFigures(b, bk)
	switch bk.State {
	case engineclient.BackupCompleted:
		b.Status.Phase = summav1.BackupPhaseCompleted
		b.Status.Message = ""
		b.Status.CompletedAt = ptr.To(metav1.NewTime(r.Indexes.Options.Now()))
		if bk.CompletedAt != nil {
			b.Status.CompletedAt = ptr.To(metav1.NewTime(*bk.CompletedAt))
		}
		return reconcile.Result{}, nil
	case engineclient.BackupFailed:
		r.fail(b, "the engine's backup failed: "+bk.Error)
		return reconcile.Result{}, nil
	}
	b.Status.Message = fmt.Sprintf("uploading: %d of %d files", bk.FilesDone, bk.Files)
	return reconcile.Result{RequeueAfter: backupPoll}, nil
}

// copyFigures copies the engine's figures into b's status.
func (r *SummaIndexBackupReconciler) copyFigures(b *summav1.SummaIndexBackup, bk *engineclient.Backup) {
	b.Status.Generation = int64(bk.Generation) //nolint:gosec // generations stay far below 2^63
	b.Status.Documents = int64(bk.Documents)   //nolint:gosec // as above
	b.Status.Bytes = bk.Bytes
	b.Status.ReusedBytes = bk.ReusedBytes
	if !bk.StartedAt.IsZero() {
		b.Status.StartedAt = ptr.To(metav1.NewTime(bk.StartedAt))
	}
}

// SetupWithManager registers the reconciler. Indexes must be set up
// first (its options are defaulted there).
func (r *SummaIndexBackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Indexes == nil {
		return errors.New("SummaIndexBackupReconciler needs Indexes")
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&summav1.SummaIndexBackup{}).
		Named("summaindexbackup").
		WithOptions(controller.Options{SkipNameValidation: ptr.To(r.Indexes.Options.SkipNameValidation),
			MaxConcurrentReconciles: r.Indexes.Options.MaxConcurrentReconciles}).
		Complete(r)
}
