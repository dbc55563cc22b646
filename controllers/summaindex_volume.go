package controllers

import (
	corev1 "k8s.io/api/core/v1"

	summav1 "github.com/summadev/summa/api/v1"
)

// ReasonVolumeExpansionFailed: the storage reported a failed expansion of
// the data volume (the claim's ControllerResizeError or NodeResizeError,
// or an infeasible resize).
const ReasonVolumeExpansionFailed = "VolumeExpansionFailed"

// recordVolume shows pvc, the data volume, in status.volume: the size it
// asks for, the size it has, and where a resize stands, from the claim's
// conditions and allocated resource statuses. refused is the error of an
// expansion the operator did not ask for because the class forbids it.
func recordVolume(index *summav1.SummaIndex, pvc *corev1.PersistentVolumeClaim, refused error) {
	v := &summav1.VolumeStatus{ClaimName: pvc.Name}
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		v.Requested = &q
	}
	if q, ok := pvc.Status.Capacity[corev1.ResourceStorage]; ok {
		v.Capacity = &q
	}
	v.Resize, v.Message = resizeState(pvc)
	if refused != nil {
		v.Resize, v.Message = summav1.VolumeResizeRefused, refused.Error()
	}
	index.Status.Volume = v
}

// resizeState reads where a resize of pvc stands.
func resizeState(pvc *corev1.PersistentVolumeClaim) (string, string) {
	for _, c := range pvc.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case corev1.PersistentVolumeClaimControllerResizeError, corev1.PersistentVolumeClaimNodeResizeError:
			return summav1.VolumeResizeFailed, string(c.Type) + ": " + c.Message
		}
	}
	switch pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] {
	case corev1.PersistentVolumeClaimControllerResizeInfeasible, corev1.PersistentVolumeClaimNodeResizeInfeasible:
		return summav1.VolumeResizeFailed, "the storage reports the new size infeasible"
	}
	for _, c := range pvc.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case corev1.PersistentVolumeClaimResizing:
			return summav1.VolumeResizeInProgress, c.Message
		case corev1.PersistentVolumeClaimFileSystemResizePending:
			msg := c.Message
			if msg == "" {
				msg = "the file system grows when the kubelet next mounts the volume"
			}
			return summav1.VolumeResizeFileSystemPending, msg
		}
	}
	switch pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] {
	case corev1.PersistentVolumeClaimControllerResizeInProgress, corev1.PersistentVolumeClaimNodeResizeInProgress:
		return summav1.VolumeResizeInProgress, ""
	case corev1.PersistentVolumeClaimNodeResizePending:
		return summav1.VolumeResizeFileSystemPending, "the file system grows when the kubelet next mounts the volume"
	}
	want, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	have, known := pvc.Status.Capacity[corev1.ResourceStorage]
	if ok && known && have.Cmp(want) < 0 {
		return summav1.VolumeResizePending, "asked for " + want.String() + ", has " + have.String()
	}
	return summav1.VolumeResizeNone, ""
}
