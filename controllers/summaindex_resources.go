package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	summav1 "github.com/summadev/summa/api/v1"
)

// claim builds a ReadWriteOnce volume claim of index's storage class.
func claim(index *summav1.SummaIndex, name string, size resource.Quantity) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: index.Namespace, Labels: index.Labels()},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: index.Spec.Storage.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: size},
			},
		},
	}
}

// ensureDataClaim creates the data volume, adopts a retained one of the
// same name (a SummaIndex deleted with reclaimPolicy Retain), keeps its
// ownership in line with the reclaim policy (summaindex_claims.go), and
// grows it when spec.storage.size grows. Its errors carry their Degraded
// reason.
func (r *SummaIndexReconciler) ensureDataClaim(ctx context.Context, index *summav1.SummaIndex) error {
	cur := &corev1.PersistentVolumeClaim{}
	err := r.getLive(ctx, client.ObjectKey{Namespace: index.Namespace, Name: index.DataClaimName()}, cur)
	if apierrors.IsNotFound(err) {
		pvc, err := r.newClaim(index, index.DataClaimName(), index.Spec.Storage.Size)
		if err != nil {
			return failed(ReasonVolumeFailed, err)
		}
		markRestoreClaim(index, pvc)
		if err := r.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
			return failed(ReasonVolumeFailed, fmt.Errorf("create volume %s: %w", pvc.Name, err))
		}
		r.event(index, pvc, corev1.EventTypeNormal, "VolumeCreated", "data volume %s created (%s)", pvc.Name, index.Spec.Storage.Size.String())
		recordVolume(index, pvc, nil)
		return nil
	}
	if err != nil {
		return failed(ReasonVolumeFailed, fmt.Errorf("get volume %s: %w", index.DataClaimName(), err))
	}
	if cur.DeletionTimestamp != nil {
		return failed(ReasonVolumeFailed, fmt.Errorf("volume %s is being deleted; waiting for it to go before creating a new one", cur.Name))
	}
	if _, err := r.syncClaimOwnership(ctx, index, cur); err != nil {
		return failed(ReasonVolumeFailed, err)
	}
	err = r.expandClaim(ctx, index, cur)
	if failureReason(err) == ReasonVolumeExpansionRefused {
		recordVolume(index, cur, err)
	} else {
		recordVolume(index, cur, nil)
	}
	return err
}

// expandClaim asks for the volume to grow to spec.storage.size. A storage
// class without allowVolumeExpansion is not asked (the API would refuse):
// the failure says so, and the volume keeps its size; spec.storage.size
// cannot go back (CEL), so the condition stays until the class allows it
// or the volume is replaced.
func (r *SummaIndexReconciler) expandClaim(ctx context.Context, index *summav1.SummaIndex, cur *corev1.PersistentVolumeClaim) error {
	want := index.Spec.Storage.Size
	have := cur.Spec.Resources.Requests[corev1.ResourceStorage]
	if have.Cmp(want) >= 0 {
		return nil
	}
	if class := ptr.Deref(cur.Spec.StorageClassName, ""); class != "" {
		sc := &storagev1.StorageClass{}
		err := r.Get(ctx, client.ObjectKey{Name: class}, sc)
		switch {
		case err == nil && !ptr.Deref(sc.AllowVolumeExpansion, false):
			return failed(ReasonVolumeExpansionRefused, fmt.Errorf("volume %s cannot grow from %s to %s: storage class %s does not "+
				"set allowVolumeExpansion; the engine keeps running on %s (ask the cluster admin to allow expansion on the class, "+
				"or move the data to a new index)", cur.Name, have.String(), want.String(), class, have.String()))
		case err != nil && !apierrors.IsNotFound(err):
			return failed(ReasonVolumeFailed, fmt.Errorf("read storage class %s of volume %s: %w", class, cur.Name, err))
		}
	}
	patch := client.MergeFrom(cur.DeepCopy())
	if cur.Spec.Resources.Requests == nil {
		cur.Spec.Resources.Requests = corev1.ResourceList{}
	}
	cur.Spec.Resources.Requests[corev1.ResourceStorage] = want
	if err := r.Patch(ctx, cur, patch); err != nil {
		reason := ReasonVolumeFailed
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			reason = ReasonVolumeExpansionRefused
		}
		return failed(reason, fmt.Errorf("grow volume %s from %s to %s: %w", cur.Name, have.String(), want.String(), err))
	}
	r.event(index, cur, corev1.EventTypeNormal, "VolumeExpanding", "data volume %s: %s -> %s", cur.Name, have.String(), want.String())
	return nil
}

// ensureService keeps the Service in front of the engine.
func (r *SummaIndexReconciler) ensureService(ctx context.Context, index *summav1.SummaIndex) error {
	// The target port is the engine's number, not its name: the named port
	// is looked up in the app containers first, and an app's own "http"
	// port would take the engine's traffic.
	want := corev1.ServiceSpec{
		Selector: engineLabels(index),
		Ports: []corev1.ServicePort{{
			Name: EnginePortName, Port: EnginePort, TargetPort: intstr.FromInt32(EnginePort), Protocol: corev1.ProtocolTCP,
		}},
		PublishNotReadyAddresses: servicePublishesNotReady(index),
	}
	return r.ensureServiceSpec(ctx, index, index.ServiceName(), want)
}

// ensureServiceSpec creates, adopts or updates index's Service name to want.
func (r *SummaIndexReconciler) ensureServiceSpec(ctx context.Context, index *summav1.SummaIndex, name string, want corev1.ServiceSpec) error {
	cur := &corev1.Service{}
	err := r.getLive(ctx, client.ObjectKey{Namespace: index.Namespace, Name: name}, cur)
	if apierrors.IsNotFound(err) {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: index.Namespace, Labels: index.Labels()}, Spec: want}
		if err := controllerutil.SetControllerReference(index, svc, r.Scheme); err != nil {
			return fmt.Errorf("owner reference on service: %w", err)
		}
		if err := r.Create(ctx, svc); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create service %s: %w", svc.Name, err)
		}
		r.event(index, svc, corev1.EventTypeNormal, "ServiceCreated", "service %s created", svc.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get service %s: %w", name, err)
	}
	if !metav1.IsControlledBy(cur, index) {
		if !isOrphanOf(index, cur) {
			return fmt.Errorf("service %s exists and is not controlled by this SummaIndex", cur.Name)
		}
		if err := r.adoptOrphan(ctx, index, cur); err != nil {
			return err
		}
	}
	if servicePortsMatch(cur.Spec, want) {
		return nil
	}
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Selector, cur.Spec.Ports = want.Selector, want.Ports
	cur.Spec.PublishNotReadyAddresses = want.PublishNotReadyAddresses
	if err := r.Patch(ctx, cur, patch); err != nil {
		return fmt.Errorf("update service %s: %w", cur.Name, err)
	}
	return nil
}

// servicePortsMatch compares what the operator sets on its Service.
func servicePortsMatch(have, want corev1.ServiceSpec) bool {
	if len(have.Selector) != len(want.Selector) || len(have.Ports) != len(want.Ports) ||
		have.PublishNotReadyAddresses != want.PublishNotReadyAddresses {
		return false
	}
	for k, v := range want.Selector {
		if have.Selector[k] != v {
			return false
		}
	}
	for i := range want.Ports {
		h, w := have.Ports[i], want.Ports[i]
		if h.Name != w.Name || h.Port != w.Port || h.TargetPort != w.TargetPort || h.Protocol != w.Protocol {
			return false
		}
	}
	return true
}

// releaseClaim drops index's owner reference from a volume so that it outlives
// index (reclaimPolicy Retain); the labels and AnnotationIndexUID stay, so a
// new SummaIndex of the same name adopts it.
func (r *SummaIndexReconciler) releaseClaim(ctx context.Context, index *summav1.SummaIndex, name string) error {
	cur := &corev1.PersistentVolumeClaim{}
	found, err := lookedUp(r.Get(ctx, client.ObjectKey{Namespace: index.Namespace, Name: name}, cur), "volume", name)
	if !found {
		return err
	}
	if !hasOwnerUID(cur, index) {
		return nil
	}
	patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cur.OwnerReferences = withoutOwner(cur.OwnerReferences, index)
	if err := r.Patch(ctx, cur, patch); err != nil {
		return fmt.Errorf("release volume %s: %w", name, err)
	}
	r.event(index, cur, corev1.EventTypeNormal, "VolumeRetained", "volume %s kept (reclaimPolicy Retain)", name)
	return nil
}

// claimStep is the pass step of the data volume.
func (r *SummaIndexReconciler) claimStep(ctx context.Context, p *pass) error {
	return r.ensureDataClaim(ctx, p.index)
}

// serviceStep is the pass step of the engine's Service.
func (r *SummaIndexReconciler) serviceStep(ctx context.Context, p *pass) error {
	return failed(ReasonServiceFailed, r.ensureService(ctx, p.index))
}
