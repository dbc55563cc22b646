package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	summav1 "github.com/summadev/summa/api/v1"
)

// A SummaIndex deleted with orphan propagation (kubectl delete
// --cascade=orphan) leaves its objects behind: the garbage collector strips
// their owner references, and they keep the operator's labels. A new
// SummaIndex of the same name takes them over, the way a ReplicaSet adopts
// orphaned pods that match it:
//
//   - the engine pod, the Service and the NetworkPolicies are adopted (a
//     controller reference to the new index), and reconciled from there
//     like any of its objects (a pod of another revision is drained and
//     restarted);
//   - the generated Secrets (tokens and TLS) are replaced, not adopted: a
//     Secret's labels prove nothing about who wrote its values, so the
//     operator deletes it and issues new ones.
//
// An object of a generated name without the operator's labels is still
// refused, as before.

// isOrphanOf reports whether obj is an object the operator made for an
// index of index's name that nothing controls any more.
func isOrphanOf(index *summav1.SummaIndex, obj client.Object) bool {
	l := obj.GetLabels()
	return metav1.GetControllerOf(obj) == nil && obj.GetDeletionTimestamp() == nil &&
		l[summav1.LabelManagedBy] == summav1.ManagedByValue && l[summav1.LabelIndex] == index.Name
}

// adoptOrphan sets index as the controller of obj, an orphan of index's name
// (isOrphanOf), with an event. The patch carries obj's resourceVersion, so
// a concurrent change makes it fail and the next pass look again.
func (r *SummaIndexReconciler) adoptOrphan(ctx context.Context, index *summav1.SummaIndex, obj client.Object) error {
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	if err := controllerutil.SetControllerReference(index, obj, r.Scheme); err != nil {
		return fmt.Errorf("owner reference on %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	if err := r.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("adopt %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	r.event(index, obj, corev1.EventTypeNormal, "Adopted",
		"%s %s, left by a SummaIndex of the same name deleted with orphan propagation, adopted", kindOf(obj), obj.GetName())
	return nil
}

// replaceOrphanSecret deletes s, a generated Secret orphaned by an earlier
// SummaIndex of index's name, so that the next pass issues a new one. It
// returns the error that holds the pass until then.
func (r *SummaIndexReconciler) replaceOrphanSecret(ctx context.Context, index *summav1.SummaIndex, s client.Object) error {
	if err := r.deleteExact(ctx, s, "orphaned secret"); err != nil {
		return err
	}
	r.event(index, s, corev1.EventTypeNormal, "SecretReplaced",
		"secret %s, left by a SummaIndex of the same name deleted with orphan propagation, deleted to be issued anew", s.GetName())
	return &accessError{reason: ReasonWaitingForGarbageCollection, msg: fmt.Sprintf(
		"Secret %s was left by a deleted SummaIndex of the same name; it is replaced", s.GetName())}
}

// kindOf names obj's Go type (Pod, Service, Secret, ...).
func kindOf(obj client.Object) string {
	kind := fmt.Sprintf("%T", obj)
	return kind[strings.LastIndexByte(kind, '.')+1:]
}
