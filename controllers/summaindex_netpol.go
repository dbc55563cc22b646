package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// NetworkPolicies. With spec.access.networkPolicy Enabled (the default)
// the operator keeps two:
//
//   - <name>: ingress to the engine pod's port 8082 only from the
//     operator's pods (namespace Options.OperatorNamespace, label
//     app.kubernetes.io/name=summa-operator), from the pods of the index's
//     namespace labelled summa.dev/client=<name>, and from the peers of
//     spec.access.allowFrom. Other ingress to the engine pod is refused;
//     its egress is left alone (app containers of spec.podTemplate share
//     the pod's network).
//   - <name>-jobs: no ingress and no egress at all for the doctor and
//     backup Jobs' pods, which need no network.
//
// With Disabled the operator deletes the ones it made and makes none.

const (
	// LabelAppName is the standard label naming the application; the
	// operator's own pods carry app.kubernetes.io/name=summa-operator.
	LabelAppName = "app.kubernetes.io/name"
	// OperatorAppName is LabelAppName's value on the operator's pods.
	OperatorAppName = "summa-operator"
	// labelNamespaceName is set by the API server on every namespace.
	labelNamespaceName = "kubernetes.io/metadata.name"
)

// desiredNetworkPolicy is the engine's NetworkPolicy for an operator
// running in operatorNamespace ("" when it runs outside the cluster, so
// that no pod of it is admitted).
func desiredNetworkPolicy(index *summav1.SummaIndex, operatorNamespace string) networkingv1.NetworkPolicySpec {
	var from []networkingv1.NetworkPolicyPeer
	if operatorNamespace != "" {
		from = append(from, networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelNamespaceName: operatorNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{LabelAppName: OperatorAppName}},
		})
	}
	from = append(from, networkingv1.NetworkPolicyPeer{
		PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{summav1.LabelClient: index.Name}},
	})
	for _, p := range index.Spec.Access.AllowFrom {
		from = append(from, *p.DeepCopy())
	}
	selector := metav1.LabelSelector{MatchLabels: engineLabels(index)}
	if index.EffectiveReplicas() > 0 {
		// Read followers (summaindex_replicas.go): the same peers reach
		// them, and they reach the leader.
		selector, from = followersNetworkPolicy(index, from)
	}
	return networkingv1.NetworkPolicySpec{
		PodSelector: selector,
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			Ports: []networkingv1.NetworkPolicyPort{{
				Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(EnginePort)),
			}},
			From: from,
		}},
	}
}

// desiredJobsNetworkPolicy selects the doctor and backup Jobs' pods and
// admits nothing in or out.
func desiredJobsNetworkPolicy(index *summav1.SummaIndex) networkingv1.NetworkPolicySpec {
	return jobPodsNetworkPolicy(index, nil, backupContainer, doctorContainer)
}

// jobPodsNetworkPolicy selects the pods of index's Jobs of the given
// components and admits nothing in, and out only what egress admits.
func jobPodsNetworkPolicy(index *summav1.SummaIndex, egress []networkingv1.NetworkPolicyEgressRule,
	components ...string) networkingv1.NetworkPolicySpec {
	return networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{
			MatchLabels: index.Labels(),
			MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: LabelComponent, Operator: metav1.LabelSelectorOpIn, Values: components,
			}},
		},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		Egress:      egress,
	}
}

// ensureNetworkPolicies makes index's NetworkPolicies what the spec asks for.
func (r *SummaIndexReconciler) ensureNetworkPolicies(ctx context.Context, index *summav1.SummaIndex) error {
	policies := map[string]networkingv1.NetworkPolicySpec{
		index.NetworkPolicyName():     desiredNetworkPolicy(index, r.Options.OperatorNamespace),
		index.JobsNetworkPolicyName(): desiredJobsNetworkPolicy(index),
		// The restore and prune Jobs reach the object store only.
		index.ObjectStoreJobsNetworkPolicyName(): desiredObjectStoreJobsNetworkPolicy(index),
	}
	for _, name := range []string{index.NetworkPolicyName(), index.JobsNetworkPolicyName(), index.ObjectStoreJobsNetworkPolicyName()} {
		var err error
		switch {
		case name == index.ObjectStoreJobsNetworkPolicyName() && (!index.NetworkPolicyEnabled() || index.RestoreS3() == nil):
			err = r.deleteObjectStoreJobsPolicy(ctx, index)
		case index.NetworkPolicyEnabled():
			err = r.ensureNetworkPolicy(ctx, index, name, policies[name])
		default:
			err = r.deleteNetworkPolicy(ctx, index, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ensureNetworkPolicy creates or updates one NetworkPolicy.
func (r *SummaIndexReconciler) ensureNetworkPolicy(ctx context.Context, index *summav1.SummaIndex, name string, spec networkingv1.NetworkPolicySpec) error {
	cur := &networkingv1.NetworkPolicy{}
	err := r.getLive(ctx, client.ObjectKey{Namespace: index.Namespace, Name: name}, cur)
	if apierrors.IsNotFound(err) {
		np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: index.Namespace, Labels: index.Labels()}, Spec: spec}
		if err := r.createOwned(ctx, index, np, "network policy", "delete or rename it, or set spec.access.networkPolicy to Disabled"); err != nil {
			return err
		}
		r.event(index, np, corev1.EventTypeNormal, "NetworkPolicyCreated", "network policy %s created", name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get network policy %s: %w", name, err)
	}
	if err := r.checkOwned(ctx, index, cur, ""); err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(cur.Spec, spec) {
		return nil
	}
	cur.Spec = spec
	if err := r.Update(ctx, cur); err != nil {
		return fmt.Errorf("update network policy %s: %w", name, err)
	}
	r.event(index, cur, corev1.EventTypeNormal, "NetworkPolicyUpdated", "network policy %s updated", name)
	return nil
}

// deleteNetworkPolicy deletes one of index's NetworkPolicies, if it exists.
func (r *SummaIndexReconciler) deleteNetworkPolicy(ctx context.Context, index *summav1.SummaIndex, name string) error {
	cur := &networkingv1.NetworkPolicy{}
	found, err := lookedUp(r.getLive(ctx, client.ObjectKey{Namespace: index.Namespace, Name: name}, cur), "network policy", name)
	if !found {
		return err
	}
	if !metav1.IsControlledBy(cur, index) || cur.DeletionTimestamp != nil {
		return nil
	}
	if err := r.deleteExact(ctx, cur, "network policy"); err != nil {
		return err
	}
	r.event(index, cur, corev1.EventTypeNormal, "NetworkPolicyDeleted", "network policy %s deleted (spec.access.networkPolicy Disabled)", name)
	return nil
}
