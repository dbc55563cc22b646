package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	summav1 "github.com/summadev/summa/api/v1"
)

// The ownership of an index's volumes (its data volume and its doctor
// backups) follows spec.storage.reclaimPolicy from the moment a volume
// exists, as ECK's volumeClaimDeletePolicy does:
//
//   - Retain: the volume carries no owner reference to the SummaIndex. The
//     garbage collector therefore never deletes it, whatever the deletion's
//     propagation (background, foreground, orphan), whether the operator
//     runs, and whether someone removed the finalizer by hand. The volume
//     is the index's by its name, its summa.dev/index label and the
//     AnnotationIndexUID annotation.
//   - Delete: the volume is controlled by the SummaIndex, so that the
//     garbage collector cleans it up even after an index whose operator is
//     gone.
//
// A change of policy changes the references on the next pass.

// AnnotationIndexUID, on a volume, is the UID of the SummaIndex that uses
// it. A retained volume has no owner reference; this records which index
// it belongs to now, so that a new SummaIndex of the same name knows it
// adopts it (and says so once).
const AnnotationIndexUID = "summa.dev/index-uid"

// ownsClaim reports whether pvc is one of index's volumes: controlled by index
// (reclaimPolicy Delete, or a volume of an earlier version) or marked with
// index's UID (reclaimPolicy Retain).
func ownsClaim(index *summav1.SummaIndex, pvc *corev1.PersistentVolumeClaim) bool {
	return metav1.IsControlledBy(pvc, index) || (index.UID != "" && pvc.Annotations[AnnotationIndexUID] == string(index.UID))
}

// newClaim builds a volume of index named name, owned as index's reclaimPolicy
// asks.
func (r *SummaIndexReconciler) newClaim(index *summav1.SummaIndex, name string, size resource.Quantity) (*corev1.PersistentVolumeClaim, error) {
	pvc := claim(index, name, size)
	pvc.Annotations = map[string]string{AnnotationIndexUID: string(index.UID)}
	if index.Spec.Storage.EffectiveReclaimPolicy() == summav1.ReclaimDelete {
		if err := controllerutil.SetControllerReference(index, pvc, r.Scheme); err != nil {
			return nil, fmt.Errorf("owner reference on volume %s: %w", name, err)
		}
	}
	return pvc, nil
}

// syncClaimOwnership brings cur, one of index's volumes, in line with index's
// reclaimPolicy: its owner reference to index (none for Retain, a controller
// reference for Delete) and AnnotationIndexUID. A volume of index's name that
// is labelled for another index, or controlled by anything but index, is
// refused. It reports whether index took the volume over from an earlier
// SummaIndex of the same name (a retained volume adopted).
func (r *SummaIndexReconciler) syncClaimOwnership(ctx context.Context, index *summav1.SummaIndex, cur *corev1.PersistentVolumeClaim) (bool, error) {
	if owner := metav1.GetControllerOf(cur); owner != nil && owner.UID != index.UID {
		return false, fmt.Errorf("volume %s is controlled by %s %s, not by this SummaIndex", cur.Name, owner.Kind, owner.Name)
	}
	if cur.Labels[summav1.LabelIndex] != index.Name {
		return false, fmt.Errorf("volume %s exists and does not carry %s=%s: refusing to adopt it", cur.Name, summav1.LabelIndex, index.Name)
	}
	adopted := !ownsClaim(index, cur)
	policy := index.Spec.Storage.EffectiveReclaimPolicy()
	patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
	changed := false
	if cur.Annotations[AnnotationIndexUID] != string(index.UID) {
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[AnnotationIndexUID] = string(index.UID)
		changed = true
	}
	owned := metav1.IsControlledBy(cur, index)
	switch {
	case policy == summav1.ReclaimDelete && !owned:
		if err := controllerutil.SetControllerReference(index, cur, r.Scheme); err != nil {
			return false, fmt.Errorf("owner reference on volume %s: %w", cur.Name, err)
		}
		changed = true
	case policy != summav1.ReclaimDelete && hasOwnerUID(cur, index):
		cur.OwnerReferences = withoutOwner(cur.OwnerReferences, index)
		changed = true
	}
	if !changed {
		return false, nil
	}
	if err := r.Patch(ctx, cur, patch); err != nil {
		return false, fmt.Errorf("set the ownership of volume %s (reclaimPolicy %s): %w", cur.Name, policy, err)
	}
	switch {
	case adopted:
		r.event(index, cur, corev1.EventTypeNormal, "VolumeAdopted", "retained volume %s adopted (reclaimPolicy %s)", cur.Name, policy)
	case policy == summav1.ReclaimDelete && !owned:
		r.event(index, cur, corev1.EventTypeNormal, "VolumeOwnershipUpdated",
			"volume %s is now owned by the SummaIndex: reclaimPolicy Delete deletes it with the index", cur.Name)
	case policy != summav1.ReclaimDelete && owned:
		r.event(index, cur, corev1.EventTypeNormal, "VolumeOwnershipUpdated",
			"owner reference removed from volume %s: reclaimPolicy %s keeps it through any deletion of the index", cur.Name, policy)
	}
	return adopted, nil
}

// hasOwnerUID reports whether obj has an owner reference to index.
func hasOwnerUID(obj metav1.Object, index *summav1.SummaIndex) bool {
	for _, o := range obj.GetOwnerReferences() {
		if o.UID == index.UID {
			return true
		}
	}
	return false
}

// withoutOwner returns refs less those to index.
func withoutOwner(refs []metav1.OwnerReference, index *summav1.SummaIndex) []metav1.OwnerReference {
	var kept []metav1.OwnerReference
	for _, o := range refs {
		if o.UID != index.UID {
			kept = append(kept, o)
		}
	}
	return kept
}
