package controllers

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	summav1 "github.com/summadev/summa/api/v1"
)

// Read followers (spec.replicas). Follower k of index <name> is the pod
// <name>-r<k> on its own volume <name>-r<k>-data, built from the same
// inputs as the leader's pod (image, resources, engine flags, pod template,
// access, grace) and at the same revision, with three differences: it runs
// summa-server --follow against the leader's Service with the read token
// and the CA, its labels say summa.dev/role=follower and
// summa.dev/component=follower (so that the leader's Service, which
// selects component=engine, never routes writes to it), and unless
// spec.podTemplate sets a pod anti-affinity it prefers a node without
// another pod of the index. Every step is decided from the pods and
// volumes that exist (summaindex_rolling.go has the rolling restart).

const (
	// ComponentFollower is LabelComponent's value on follower pods.
	ComponentFollower = "follower"
	// followTokenFile is the follower's read token of the leader (the
	// index's own read token: the followers accept the same tokens).
	followTokenFile = CredentialsMountPath + "/" + summav1.ReadTokenKey
	// followCAFile is the CA that verifies the leader (ca.crt of the TLS
	// Secret, mounted next to tls.crt and tls.key in followers).
	followCAFile = TLSMountPath + "/" + summav1.CACertKey
	// antiAffinityWeight is the weight of the preferred spread over nodes.
	antiAffinityWeight = 100
	// topologyHostname spreads over nodes.
	topologyHostname = "kubernetes.io/hostname"
)

// followerLabels are the labels of index's follower pods.
func followerLabels(index *summav1.SummaIndex) map[string]string {
	l := index.Labels()
	l[LabelComponent] = ComponentFollower
	l[summav1.LabelRole] = summav1.RoleFollower
	l[summav1.LabelServing] = "true"
	return l
}

// servingSelector selects every pod of index that answers searches.
func servingSelector(index *summav1.SummaIndex) map[string]string {
	l := index.Labels()
	l[summav1.LabelServing] = "true"
	return l
}

// leaderURL is the URL followers reach the leader at: its Service.
func leaderURL(index *summav1.SummaIndex, acc access) string {
	scheme := "http"
	if acc.tlsSecret != "" {
		scheme = "https"
	}
	return scheme + "://" + index.ServiceHost() + ":" + strconv.Itoa(EnginePort)
}

// followArgs are the follower's flags (engine.md, Replication).
func followArgs(index *summav1.SummaIndex, acc access) []string {
	args := []string{"--follow=" + leaderURL(index, acc)}
	if acc.credentialsSecret != "" {
		args = append(args, "--follow-token-file="+followTokenFile)
	}
	if acc.tlsSecret != "" && acc.caPresent {
		args = append(args, "--follow-ca-file="+followCAFile)
	}
	return args
}

// desiredFollower builds follower k of index from the leader's desired pod.
func desiredFollower(index *summav1.SummaIndex, in podInputs, k int) *corev1.Pod {
	pod := desiredPod(index, in)
	pod.Name = index.FollowerPodName(k)
	if id := index.Spec.Doctor.RequestID; id != "" {
		pod.Annotations[AnnotationDoctorRequest] = id
	}
	for key, v := range followerLabels(index) {
		pod.Labels[key] = v
	}
	withoutObjectStore(pod)
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == EngineContainerName {
				list[i].Args = append(list[i].Args, followArgs(index, in.access)...)
			}
		}
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.Name == dataVolumeName && v.PersistentVolumeClaim != nil:
			v.PersistentVolumeClaim.ClaimName = index.FollowerClaimName(k)
		case v.Name == tlsVolumeName && v.Secret != nil && in.access.caPresent:
			v.Secret.Items = append(v.Secret.Items, corev1.KeyToPath{Key: summav1.CACertKey, Path: path.Base(followCAFile)})
		}
	}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.PodAntiAffinity == nil {
		pod.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: antiAffinityWeight,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: servingSelector(index)},
					TopologyKey:   topologyHostname,
				},
			}},
		}
	}
	return pod
}

// withoutObjectStore takes the object store (spec.backup.s3) out of a
// follower's pod: its --s3-* flags, and the volumes and mounts of its
// credentials and CA. Backups and restores are the leader's; a follower
// holds no credential it does not use.
func withoutObjectStore(pod *corev1.Pod) {
	s3Volume := func(name string) bool { return name == s3CredentialsVolumeName || name == s3CAVolumeName }
	pod.Spec.Volumes = slices.DeleteFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return s3Volume(v.Name) })
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return s3Volume(m.Name) })
			if c.Name == EngineContainerName {
				c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--s3-") })
			}
		}
	}
}

// followerPods returns index's follower pods by k (those controlled by index).
func (r *SummaIndexReconciler) followerPods(ctx context.Context, index *summav1.SummaIndex) (map[int]*corev1.Pod, error) {
	list := &corev1.PodList{}
	sel := index.Labels()
	sel[LabelComponent] = ComponentFollower
	if err := r.List(ctx, list, client.InNamespace(index.Namespace), client.MatchingLabels(sel)); err != nil {
		return nil, fmt.Errorf("list follower pods: %w", err)
	}
	out := map[int]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		if k := index.FollowerIndex(p.Name); k > 0 && metav1.IsControlledBy(p, index) {
			out[k] = p
		}
	}
	return out, nil
}

// followerClaims returns index's follower volumes by k.
func (r *SummaIndexReconciler) followerClaims(ctx context.Context, index *summav1.SummaIndex) (map[int]*corev1.PersistentVolumeClaim, error) {
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, list, client.InNamespace(index.Namespace), client.MatchingLabels(index.Labels())); err != nil {
		return nil, fmt.Errorf("list follower volumes: %w", err)
	}
	out := map[int]*corev1.PersistentVolumeClaim{}
	for i := range list.Items {
		c := &list.Items[i]
		if k := index.FollowerIndex(c.Name); k > 0 && c.Name == index.FollowerClaimName(k) {
			out[k] = c
		}
	}
	return out, nil
}

// ensureFollowerClaim creates follower k's volume, or keeps an existing
// one owned per the reclaim policy and at spec.storage.size. It reports
// whether the volume is usable (exists and is not being deleted).
func (r *SummaIndexReconciler) ensureFollowerClaim(ctx context.Context, index *summav1.SummaIndex, k int, cur *corev1.PersistentVolumeClaim) (bool, error) {
	if cur == nil {
		pvc, err := r.newClaim(index, index.FollowerClaimName(k), index.Spec.Storage.Size)
		if err != nil {
			return false, failed(ReasonVolumeFailed, err)
		}
		if err := r.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, failed(ReasonVolumeFailed, fmt.Errorf("create follower volume %s: %w", pvc.Name, err))
		}
		r.event(index, pvc, corev1.EventTypeNormal, "VolumeCreated", "follower volume %s created (%s)", pvc.Name, index.Spec.Storage.Size.String())
		return true, nil
	}
	if cur.DeletionTimestamp != nil {
		return false, nil
	}
	if _, err := r.syncClaimOwnership(ctx, index, cur); err != nil {
		return false, failed(ReasonVolumeFailed, err)
	}
	return true, r.expandClaim(ctx, index, cur)
}

// createFollower creates follower k at the desired revision.
func (r *SummaIndexReconciler) createFollower(ctx context.Context, index *summav1.SummaIndex, desired *corev1.Pod) error {
	if err := controllerutil.SetControllerReference(index, desired, r.Scheme); err != nil {
		return fmt.Errorf("owner reference on follower pod: %w", err)
	}
	if err := r.checkDesiredPod(ctx, index, desired); err != nil {
		return err
	}
	if err := r.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
		return failed(ReasonPodFailed, fmt.Errorf("create follower pod %s: %w", desired.Name, err))
	}
	r.event(index, desired, corev1.EventTypeNormal, "FollowerCreated", "follower pod %s created (revision %s)",
		desired.Name, desired.Annotations[AnnotationRevision])
	return nil
}

// deleteFollowerPod deletes a follower pod (no drain: a follower takes no
// writes) with a precondition on its UID.
func (r *SummaIndexReconciler) deleteFollowerPod(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod, why string) error {
	if pod.DeletionTimestamp != nil {
		return nil
	}
	if err := r.deletePodExact(ctx, pod); err != nil {
		return failed(ReasonPodFailed, fmt.Errorf("delete follower pod %s: %w", pod.Name, err))
	}
	r.event(index, pod, corev1.EventTypeNormal, "FollowerDeleted", "follower pod %s deleted (%s)", pod.Name, why)
	return nil
}

// removeFollowersAbove deletes the followers numbered above n and their
// volumes as the reclaim policy says (Delete: deleted; Retain: released,
// labelled, for a later scale-up or inspection). It reports whether any
// of their pods still exists.
func (r *SummaIndexReconciler) removeFollowersAbove(ctx context.Context, index *summav1.SummaIndex, n int,
	pods map[int]*corev1.Pod, claims map[int]*corev1.PersistentVolumeClaim) (bool, error) {
	left := false
	for k, p := range pods {
		if k > n {
			left = true
			if err := r.deleteFollowerPod(ctx, index, p, "scaled down to "+strconv.Itoa(n)+" replicas"); err != nil {
				return left, err
			}
		}
	}
	ks := make([]int, 0, len(claims))
	for k := range claims {
		if k > n {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	for _, k := range ks {
		c := claims[k]
		if !ownsClaim(index, c) && !hasOwnerUID(c, index) {
			continue
		}
		var err error
		if index.Spec.Storage.EffectiveReclaimPolicy() == summav1.ReclaimDelete {
			err = r.deleteClaim(ctx, index, c.Name)
		} else {
			err = r.releaseClaim(ctx, index, c.Name)
		}
		if err != nil {
			return left, failed(ReasonVolumeFailed, err)
		}
	}
	return left, nil
}

// syncLeaderRoleLabels gives a leader pod made before read followers
// existed its role and serving labels (labels are not part of the
// revision: no restart).
func (r *SummaIndexReconciler) syncLeaderRoleLabels(ctx context.Context, pod *corev1.Pod) error {
	if pod == nil || pod.DeletionTimestamp != nil ||
		(pod.Labels[summav1.LabelRole] == summav1.RoleLeader && pod.Labels[summav1.LabelServing] == "true") {
		return nil
	}
	patch := client.MergeFrom(pod.DeepCopy())
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[summav1.LabelRole] = summav1.RoleLeader
	pod.Labels[summav1.LabelServing] = "true"
	if err := r.Patch(ctx, pod, patch); err != nil {
		return failed(ReasonPodFailed, fmt.Errorf("label engine pod %s as the leader: %w", pod.Name, err))
	}
	return nil
}

// syncFollowerAccess tells a follower about changed tokens or a renewed
// certificate (as syncAccessAnnotation does for the leader).
func (r *SummaIndexReconciler) syncFollowerAccess(ctx context.Context, pod *corev1.Pod, acc access) error {
	if acc.hash == "" || pod.DeletionTimestamp != nil || pod.Annotations[AnnotationAccessHash] == acc.hash {
		return nil
	}
	if err := r.patchAccessHash(ctx, pod, acc.hash); err != nil {
		return failed(ReasonPodFailed, err)
	}
	return nil
}

// deleteAllFollowers deletes every follower pod of index (suspend, deletion)
// and reports whether any still exists.
func (r *SummaIndexReconciler) deleteAllFollowers(ctx context.Context, index *summav1.SummaIndex, why string) (bool, error) {
	pods, err := r.followerPods(ctx, index)
	if err != nil {
		return false, failed(ReasonPodFailed, err)
	}
	for _, p := range pods {
		if err := r.deleteFollowerPod(ctx, index, p, why); err != nil {
			return true, err
		}
	}
	return len(pods) > 0, nil
}

// followersNetworkPolicy widens the engine's NetworkPolicy to index's
// followers: it selects the leader and the followers, and admits the
// followers (which copy from the leader) besides the peers from.
func followersNetworkPolicy(index *summav1.SummaIndex, from []networkingv1.NetworkPolicyPeer) (metav1.LabelSelector, []networkingv1.NetworkPolicyPeer) {
	sel := metav1.LabelSelector{
		MatchLabels: index.Labels(),
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: LabelComponent, Operator: metav1.LabelSelectorOpIn, Values: []string{ComponentEngine, ComponentFollower},
		}},
	}
	followers := index.Labels()
	followers[LabelComponent] = ComponentFollower
	return sel, append(from, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: followers}})
}
