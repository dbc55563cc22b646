package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/client"
)

// Growing the data volume by itself (spec.storage.autoGrow): when the
// engine reports at least thresholdPercent of its volume in use, or refuses
// writes for lack of space, the operator asks the claim for half as much
// again (at least 1Gi more), never past autoGrow.maxSize, and records a
// VolumeAutoGrow event. It does not ask while a resize is under way (the
// claim asks for more than it has), nor when the storage class does not
// allow expansion (a VolumeAutoGrowRefused Warning event says so). The
// grown size lives on the claim: ensureDataClaim never shrinks it back to
// spec.storage.size.

// ReasonVolumeAutoGrow is the event of an automatic growth.
const ReasonVolumeAutoGrow = "VolumeAutoGrow"

// ReasonVolumeAutoGrowRefused is the Warning event of a growth the storage
// class does not allow.
const ReasonVolumeAutoGrowRefused = "VolumeAutoGrowRefused"

// autoGrow grows index's data volume when spec.storage.autoGrow and the
// engine's report st call for it. Failures are events and log lines: the
// next pass tries again.
func (r *SummaIndexReconciler) autoGrow(ctx context.Context, index *summav1.SummaIndex, st *client.StorageStatus) {
	if !autoGrowDue(index, st) {
		return
	}
	ag := index.Spec.Storage.AutoGrow
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.Get(ctx, ctrlclient.ObjectKey{Namespace: index.Namespace, Name: index.DataClaimName()}, pvc); err != nil {
		log.FromContext(ctx).Info("Volume auto-grow: cannot read the claim", "error", err.Error())
		return
	}
	have := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if capacity, ok := pvc.Status.Capacity[corev1.ResourceStorage]; ok && capacity.Cmp(have) < 0 {
		return // a resize is under way
	}
	want, ok := nextSize(have, ag.MaxSize)
	if !ok {
		return
	}
	if class := ptr.Deref(pvc.Spec.StorageClassName, ""); class != "" {
		sc := &storagev1.StorageClass{}
		if err := r.Get(ctx, ctrlclient.ObjectKey{Name: class}, sc); err == nil && !ptr.Deref(sc.AllowVolumeExpansion, false) {
			msg := fmt.Sprintf("volume %s is %d%% used but cannot grow: storage class %s does not set allowVolumeExpansion",
				pvc.Name, st.UsedBytes*100/(st.FreeBytes+st.UsedBytes), class)
			if r.warnings.due(index, ReasonVolumeAutoGrowRefused, msg) {
				r.event(index, pvc, corev1.EventTypeWarning, ReasonVolumeAutoGrowRefused, "%s", msg)
			}
			return
		}
	}
	patch := ctrlclient.MergeFrom(pvc.DeepCopy())
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = want
	if err := r.Patch(ctx, pvc, patch); err != nil {
		log.FromContext(ctx).Info("Volume auto-grow refused", "claim", pvc.Name, "error", err.Error())
		return
	}
	r.event(index, pvc, corev1.EventTypeNormal, ReasonVolumeAutoGrow, "data volume %s: %s -> %s (%s free, %s used; autoGrow.maxSize %s)",
		pvc.Name, have.String(), want.String(), bytesString(st.FreeBytes), bytesString(st.UsedBytes), ag.MaxSize.String())
}

// autoGrowDue tells whether spec.storage.autoGrow asks for a growth at
// the engine's report st: the volume is full, or used past the threshold.
func autoGrowDue(index *summav1.SummaIndex, st *client.StorageStatus) bool {
	ag := index.Spec.Storage.AutoGrow
	if ag == nil || st == nil || st.FreeBytes+st.UsedBytes <= 0 {
		return false
	}
	return st.Full || st.UsedBytes*100 >= int64(ag.Threshold())*(st.FreeBytes+st.UsedBytes)
}

// nextSize is the size after one growth from have: half as much again,
// at least 1Gi more, at most maxSize; false when have is at maxSize.
func nextSize(have, maxSize resource.Quantity) (resource.Quantity, bool) {
	if have.Cmp(maxSize) >= 0 {
		return resource.Quantity{}, false
	}
	n := have.Value() + max(have.Value()/2, 1<<30)
	if n > maxSize.Value() {
		n = maxSize.Value()
	}
	return *resource.NewQuantity(n, resource.BinarySI), true
}
