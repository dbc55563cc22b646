package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	summav1 "github.com/summadev/summa/api/v1"
)

// The read Service and the PodDisruptionBudget of an index's serving pods.
//
//   - Service <name>-read (port http 8082) selects every pod of the index
//     labelled summa.dev/serving=true, leader and followers; Kubernetes
//     routes only to the ready ones. It exists whatever spec.replicas is,
//     so that clients can use it before followers are added.
//   - PodDisruptionBudget <name> (with spec.replicas >= 1) selects the
//     same pods with minAvailable N (spec.replicas) of the N+1 pods: a
//     node drain evicts one of them at a time, so some pod keeps answering
//     searches. minAvailable as a number, not maxUnavailable: with
//     maxUnavailable (or a percentage) the disruption controller reads the
//     expected pod count from the pods' controller's scale subresource,
//     which a SummaIndex does not have (and its scale would not count the
//     leader), so the budget would never allow any eviction ("does not
//     implement the scale subresource"); with a number it counts the
//     matching pods. It is deleted when
//     spec.replicas goes back to 0 (a single pod cannot be kept up through
//     an eviction anyway, and a budget would only block node drains).

// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;delete

// ensureReadService keeps Service <name>-read in front of every serving
// pod.
func (r *SummaIndexReconciler) ensureReadService(ctx context.Context, index *summav1.SummaIndex) error {
	if !index.HasReadService() {
		return nil // a name of 59 to 63 characters, without followers (CEL)
	}
	want := corev1.ServiceSpec{
		Selector: servingSelector(index),
		Ports: []corev1.ServicePort{{
			Name: EnginePortName, Port: EnginePort, TargetPort: intstr.FromInt32(EnginePort), Protocol: corev1.ProtocolTCP,
		}},
	}
	return r.ensureServiceSpec(ctx, index, index.ReadServiceName(), want)
}

// desiredPDB is index's PodDisruptionBudget spec: all but one of its
// EffectiveReplicas()+1 serving pods available.
func desiredPDB(index *summav1.SummaIndex) policyv1.PodDisruptionBudgetSpec {
	minAvailable := intstr.FromInt32(int32(index.EffectiveReplicas()))
	return policyv1.PodDisruptionBudgetSpec{
		Selector:     &metav1.LabelSelector{MatchLabels: servingSelector(index)},
		MinAvailable: &minAvailable,
	}
}

// ensurePDB keeps index's PodDisruptionBudget while it has followers and
// deletes it otherwise.
func (r *SummaIndexReconciler) ensurePDB(ctx context.Context, index *summav1.SummaIndex) error {
	name := index.PodDisruptionBudgetName()
	cur := &policyv1.PodDisruptionBudget{}
	err := r.getLive(ctx, client.ObjectKey{Namespace: index.Namespace, Name: name}, cur)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get pod disruption budget %s: %w", name, err)
	}
	exists := err == nil
	if exists && !metav1.IsControlledBy(cur, index) {
		return fmt.Errorf("pod disruption budget %s exists and is not controlled by this SummaIndex", name)
	}
	if index.EffectiveReplicas() == 0 {
		if !exists || cur.DeletionTimestamp != nil {
			return nil
		}
		if err := r.deleteExact(ctx, cur, "pod disruption budget"); err != nil {
			return err
		}
		r.event(index, cur, corev1.EventTypeNormal, "PodDisruptionBudgetDeleted", "pod disruption budget %s deleted (no followers)", name)
		return nil
	}
	spec := desiredPDB(index)
	if !exists {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: index.Namespace, Labels: index.Labels()}, Spec: spec}
		if err := controllerutil.SetControllerReference(index, pdb, r.Scheme); err != nil {
			return fmt.Errorf("owner reference on pod disruption budget: %w", err)
		}
		if err := r.Create(ctx, pdb); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create pod disruption budget %s: %w", name, err)
		}
		r.event(index, pdb, corev1.EventTypeNormal, "PodDisruptionBudgetCreated", "pod disruption budget %s created (minAvailable %d)", name, index.EffectiveReplicas())
		return nil
	}
	if equality.Semantic.DeepEqual(cur.Spec.Selector, spec.Selector) && equality.Semantic.DeepEqual(cur.Spec.MinAvailable, spec.MinAvailable) &&
		cur.Spec.MaxUnavailable == nil {
		return nil
	}
	cur.Spec = spec
	if err := r.Update(ctx, cur); err != nil {
		return fmt.Errorf("update pod disruption budget %s: %w", name, err)
	}
	return nil
}

// readServiceStep is the pass step of Service <name>-read.
func (r *SummaIndexReconciler) readServiceStep(ctx context.Context, p *pass) error {
	return failed(ReasonServiceFailed, r.ensureReadService(ctx, p.index))
}

// pdbStep is the pass step of the PodDisruptionBudget.
func (r *SummaIndexReconciler) pdbStep(ctx context.Context, p *pass) error {
	return failed(ReasonPodFailed, r.ensurePDB(ctx, p.index))
}
