package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
)

// reconcileDelete runs the deletion behind the finalizer. Every step is
// decided from what exists, so a deletion interrupted anywhere (operator
// killed, API errors) resumes where it stood.
//
// Delete: drain, DELETE the index in the engine and wait until the engine
// no longer has it, delete the pod, delete the volume and its backups, drop
// the finalizer (drainThenDeleteIndex).
//
// Retain: drop any owner reference of the volume and its backups first (a
// volume made by an earlier version still has one, and a foreground
// deletion's garbage collector would take it), drain, stop the pod, drop the
// finalizer.
//
// Either way a doctor run in progress ends first, its Job finished or
// stopped in order (summaindex_doctor.go). The volumes stay, labelled, for a new SummaIndex of the same
// name to adopt.
func (r *SummaIndexReconciler) reconcileDelete(ctx context.Context, index *summav1.SummaIndex, sw *statusWriter) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(index, summav1.Finalizer) {
		return reconcile.Result{}, nil
	}
	policy := index.Spec.Storage.EffectiveReclaimPolicy()
	if index.Status.Phase != summav1.PhaseDeleting {
		r.event(index, nil, corev1.EventTypeNormal, "Deleting", "deleting (reclaimPolicy %s)", policy)
	}
	notReady(index, summav1.PhaseDeleting, "Deleting", "the SummaIndex is being deleted (reclaimPolicy "+string(policy)+")", true)
	claims, err := r.ownedClaims(ctx, index)
	if err != nil {
		return reconcile.Result{}, err
	}
	if policy != summav1.ReclaimDelete {
		for _, name := range claims {
			if err := r.releaseClaim(ctx, index, name); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	// Followers take no writes: their pods go at once (their volumes are
	// among claims).
	if _, err := r.deleteAllFollowers(ctx, index, "the index is deleted"); err != nil {
		return reconcile.Result{}, err
	}
	// A doctor run ends first: its Job is never killed mid-repair by the
	// deletion (summaindex_doctor.go).
	if hold, res, err := r.doctorBeforeDelete(ctx, index, policy); hold || err != nil {
		return res, err
	}
	pod, err := r.enginePod(ctx, index)
	if err != nil {
		return reconcile.Result{}, err
	}
	if pod != nil {
		if pod.DeletionTimestamp != nil {
			return reconcile.Result{RequeueAfter: terminatingPoll}, nil
		}
		if r.deletionTimedOut(index) {
			return reconcile.Result{RequeueAfter: pollInterval}, r.stopUnasked(ctx, index, pod, policy)
		}
		if policy == summav1.ReclaimDelete && engineRunning(pod) {
			gone, err := r.drainThenDeleteIndex(ctx, index, pod)
			if err != nil || !gone {
				return reconcile.Result{RequeueAfter: pollInterval}, err
			}
			// Drained, and the index is gone: nothing is left to commit.
			index.Status.DrainStartTime = nil
			return reconcile.Result{RequeueAfter: pollInterval}, r.deletePod(ctx, index, pod, purposeDelete, "the engine deleted the index")
		}
		if _, err := r.drainAndStop(ctx, index, pod, purposeDelete, true); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: pollInterval}, nil
	}
	if policy == summav1.ReclaimDelete {
		for _, name := range claims {
			if err := r.deleteClaim(ctx, index, name); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	// Status is written before the finalizer goes: afterwards the object
	// may be gone.
	if err := sw.write(ctx, index); err != nil {
		return reconcile.Result{}, err
	}
	if err := removeFinalizer(ctx, r.Client, index); err != nil {
		return reconcile.Result{}, err
	}
	r.event(index, nil, corev1.EventTypeNormal, "Deleted", "finalizer removed (reclaimPolicy %s)", policy)
	return reconcile.Result{}, nil
}

// deletionTimedOut reports whether index has been deleting for longer than
// spec.lifecycle.deletionTimeoutSeconds.
func (r *SummaIndexReconciler) deletionTimedOut(index *summav1.SummaIndex) bool {
	return index.DeletionTimestamp != nil && r.Options.Now().Sub(index.DeletionTimestamp.Time) > index.Spec.Lifecycle.DeletionTimeout()
}

// stopUnasked deletes the engine pod of a deletion that timed out without
// asking the engine anything more: that is what the deletion asked for, and
// the engine still drains in its SIGTERM handler within its grace. With
// reclaimPolicy Delete the engine never deleted the index; the volume is
// deleted next all the same.
func (r *SummaIndexReconciler) stopUnasked(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod, policy summav1.ReclaimPolicy) error {
	index.Status.DrainStartTime = nil
	r.event(index, pod, corev1.EventTypeWarning, "DeletionTimedOut",
		"the engine of %s did not complete the deletion within spec.lifecycle.deletionTimeoutSeconds (%s); it was not asked again: "+
			"its pod is deleted (reclaimPolicy %s)", pod.Name, index.Spec.Lifecycle.DeletionTimeout(), policy)
	return r.deletePod(ctx, index, pod, purposeDelete, "the deletion timed out")
}

// drainThenDeleteIndex deletes index's index in the engine in the order
// the contract gives: drain (writes accepted are committed, maintenance
// at rest), then DELETE, and reports whether the index is gone. The
// engine's deletion runs detached; it is polled. Each step is decided
// from what the engine reports, so an operator killed between them
// resumes: an index already deleting is only waited for, and a drain
// already done is not asked again.
func (r *SummaIndexReconciler) drainThenDeleteIndex(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod) (bool, error) {
	c, err := r.engineFor(ctx, index, pod)
	if err != nil {
		return false, err
	}
	cctx, cancel := context.WithTimeout(ctx, r.Options.EngineTimeout)
	defer cancel()
	st, err := c.GetIndex(cctx, index.Name)
	if engineclient.IsCode(err, engineclient.CodeIndexNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read index %s before deleting it: %w", index.Name, err)
	}
	if st.State == "deleting" {
		return false, nil
	}
	if out, _, err := r.drainEngine(ctx, index, pod, purposeDelete, true); err != nil || out != drainDone {
		return false, err
	}
	err = c.DeleteIndex(cctx, index.Name)
	r.engineCalled(ctx, "delete-index")
	if engineclient.IsCode(err, engineclient.CodeIndexNotFound) {
		return true, nil
	}
	if err != nil && !engineclient.IsCode(err, engineclient.CodeIndexDeleting) {
		return false, fmt.Errorf("delete index %s in the engine: %w", index.Name, err)
	}
	r.event(index, pod, corev1.EventTypeNormal, "IndexDeleting", "the engine deletes index %s (drained first)", index.Name)
	return false, nil
}

// ownedClaims lists the volumes of index (data and backups): labelled for index,
// and index's by owner reference or AnnotationIndexUID (ownsClaim).
func (r *SummaIndexReconciler) ownedClaims(ctx context.Context, index *summav1.SummaIndex) ([]string, error) {
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, list, client.InNamespace(index.Namespace), client.MatchingLabels(index.Labels())); err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	var names []string
	for i := range list.Items {
		if pvc := &list.Items[i]; ownsClaim(index, pvc) || hasOwnerUID(pvc, index) {
			names = append(names, pvc.Name)
		}
	}
	return names, nil
}

// deleteClaim deletes one of index's volumes (reclaimPolicy Delete).
func (r *SummaIndexReconciler) deleteClaim(ctx context.Context, index *summav1.SummaIndex, name string) error {
	pvc := &corev1.PersistentVolumeClaim{}
	found, err := lookedUp(r.Get(ctx, client.ObjectKey{Namespace: index.Namespace, Name: name}, pvc), "volume", name)
	if !found {
		return err
	}
	if pvc.DeletionTimestamp != nil {
		return nil
	}
	if err := r.deleteExact(ctx, pvc, "volume"); err != nil {
		return err
	}
	r.event(index, pvc, corev1.EventTypeNormal, "VolumeDeleted", "volume %s deleted (reclaimPolicy Delete)", name)
	return nil
}

// deleteExact deletes obj, the very object that was read (a UID
// precondition: not a newer one of the same name); one already gone is no
// error. what names its kind in the error.
func (r *SummaIndexReconciler) deleteExact(ctx context.Context, obj client.Object, what string) error {
	uid := obj.GetUID()
	if err := r.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s: %w", what, obj.GetName(), err)
	}
	return nil
}
