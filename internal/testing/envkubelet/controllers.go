package envkubelet

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// pvcProtection is the finalizer of claims in use.
const pvcProtection = "kubernetes.io/pvc-protection"

// syncAPI is one pass of the loop that talks to the API server: node,
// claims, scheduler and kubelet, job controller, garbage collector. A part
// whose list fails is skipped until the next pass.
func (k *Kubelet) syncAPI(ctx context.Context) {
	if !k.nodeDone {
		k.ensureNode(ctx)
	}
	var (
		pods     corev1.PodList
		claims   corev1.PersistentVolumeClaimList
		jobs     batchv1.JobList
		services corev1.ServiceList
		secrets  corev1.SecretList
		policies networkingv1.NetworkPolicyList
	)
	podsOK := k.list(ctx, "pods", &pods)
	claimsOK := k.list(ctx, "persistentvolumeclaims", &claims)
	jobsOK := k.list(ctx, "jobs", &jobs)
	servicesOK := k.list(ctx, "services", &services)
	secretsOK := k.list(ctx, "secrets", &secrets)
	policiesOK := k.list(ctx, "networkpolicies", &policies)
	if secretsOK {
		k.mu.Lock()
		k.secrets = map[secretKey]*corev1.Secret{}
		for i := range secrets.Items {
			s := &secrets.Items[i]
			k.secrets[secretKey{s.Namespace, s.Name}] = s
		}
		k.mu.Unlock()
	}
	if !podsOK {
		return
	}
	if claimsOK {
		k.syncClaims(ctx, claims.Items, pods.Items)
	}
	k.syncPods(ctx, pods.Items, claims.Items, claimsOK)
	if jobsOK {
		k.syncJobs(ctx, jobs.Items, pods.Items)
	}
	if ctx.Err() != nil || !claimsOK || !jobsOK || !servicesOK || !secretsOK || !policiesOK {
		return
	}
	objs := appendObjects(nil, pods.Items)
	objs = appendObjects(objs, claims.Items)
	objs = appendObjects(objs, jobs.Items)
	objs = appendObjects(objs, services.Items)
	objs = appendObjects(objs, secrets.Items)
	objs = appendObjects(objs, policies.Items)
	if !k.opts.NoGarbageCollector {
		k.collectGarbage(ctx, objs)
	}
}

// appendObjects appends a pointer to each of a list's items to objs.
func appendObjects[T any, PT interface {
	*T
	client.Object
}](objs []client.Object, items []T) []client.Object {
	for i := range items {
		objs = append(objs, PT(&items[i]))
	}
	return objs
}

// list lists all objects of a kind and reports whether it worked.
func (k *Kubelet) list(ctx context.Context, what string, list client.ObjectList) bool {
	err := k.c.List(ctx, list)
	k.apiErr("list "+what, err)
	return err == nil
}

// apiErr logs a failed API call, quietly for conflicts and missing objects
// and for an error repeated from the last pass.
func (k *Kubelet) apiErr(what string, err error) {
	if err == nil || apierrors.IsNotFound(err) || errors.Is(err, context.Canceled) {
		delete(k.lastErr, what)
		return
	}
	if apierrors.IsConflict(err) || k.lastErr[what] == err.Error() {
		k.log.V(1).Info("API call failed", "call", what, "error", err.Error())
		return
	}
	k.lastErr[what] = err.Error()
	k.log.Error(err, "API call failed", "call", what)
}

// ensureNode registers the Ready node once.
func (k *Kubelet) ensureNode(ctx context.Context) {
	name := k.opts.NodeName
	node := &corev1.Node{}
	err := k.c.Get(ctx, client.ObjectKey{Name: name}, node)
	if apierrors.IsNotFound(err) {
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelHostname: name, corev1.LabelOSStable: runtime.GOOS, corev1.LabelArchStable: runtime.GOARCH,
		}}}
		err = k.c.Create(ctx, node)
	}
	if err != nil {
		k.apiErr("register node", err)
		return
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			k.nodeDone = true
			return
		}
	}
	orig := node.DeepCopy()
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory:           resource.MustParse("16Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
	}
	node.Status = corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity,
		Phase: corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "envkubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: hostIP}, {Type: corev1.NodeHostName, Address: name}},
		NodeInfo: corev1.NodeSystemInfo{OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
			KubeletVersion: "envkubelet", ContainerRuntimeVersion: "envkubelet://local-processes"},
	}
	if err := k.c.Status().Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		k.apiErr("node status", err)
		return
	}
	k.log.Info("Node registered", "node", name)
	k.nodeDone = true
}

// syncPods binds unscheduled pods to the node and runs the node's pods:
// admits new ones, notes deletions, writes statuses, removes pods whose
// containers stopped after their deletion and forgets pods gone from the
// API (killing what still runs). claimsOK tells whether claims is valid.
func (k *Kubelet) syncPods(ctx context.Context, pods []corev1.Pod, claims []corev1.PersistentVolumeClaim, claimsOK bool) {
	usable := map[[2]string]bool{}
	for _, c := range claims {
		usable[[2]string{c.Namespace, c.Name}] = c.DeletionTimestamp == nil
	}
	seen := map[types.UID]bool{}
	for i := range pods {
		pod := &pods[i]
		switch pod.Spec.NodeName {
		case "":
			if pod.DeletionTimestamp == nil && len(pod.Spec.SchedulingGates) == 0 {
				k.bind(ctx, pod)
			}
			continue
		case k.opts.NodeName:
			seen[pod.UID] = true
			k.syncPod(ctx, pod, func(claim string) bool { return claimsOK && usable[[2]string{pod.Namespace, claim}] })
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for uid, p := range k.pods {
		if seen[uid] {
			continue
		}
		if !p.vanished && p.anyRunning() {
			k.log.Info("Pod is gone from the API; killing its containers", "pod", p.ns+"/"+p.name)
		}
		p.vanished = true
		if p.done {
			k.forget(p)
		}
	}
}

// forget drops a pod whose containers stopped, with its emptyDir
// volumes. k.mu is held.
func (k *Kubelet) forget(p *pod) {
	delete(k.pods, p.uid)
	p.release()
	_ = os.RemoveAll(filepath.Join(p.dir, "volumes"))
}

// bind schedules the pod to the node.
func (k *Kubelet) bind(ctx context.Context, pod *corev1.Pod) {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: k.opts.NodeName},
	}
	if err := k.c.SubResource("binding").Create(ctx, pod, b); err != nil {
		k.apiErr("bind pod "+pod.Namespace+"/"+pod.Name, err)
		return
	}
	k.log.V(1).Info("Pod bound", "pod", pod.Namespace+"/"+pod.Name, "node", k.opts.NodeName)
}

// syncPod runs one pod of the node. usable tells whether a claim may be
// mounted.
func (k *Kubelet) syncPod(ctx context.Context, pod *corev1.Pod, usable func(claim string) bool) {
	k.mu.Lock()
	p := k.pods[pod.UID]
	if p == nil {
		terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
		ready := !terminal && pod.DeletionTimestamp == nil && !k.stopped
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && !usable(v.PersistentVolumeClaim.ClaimName) {
				ready = false
			}
		}
		if ok, why := k.secretsReady(pod); !ok && ready {
			ready = false
			k.log.V(1).Info("Pod waits for its Secrets", "pod", pod.Namespace+"/"+pod.Name, "why", why)
		}
		k.mu.Unlock()
		if pod.DeletionTimestamp != nil {
			k.deletePod(ctx, pod) // never ran here
		}
		if !ready {
			return
		}
		k.mu.Lock()
		p = k.admit(pod)
	}
	now := time.Now()
	p.refreshSecretVolumes(pod, now)
	if pod.DeletionTimestamp != nil {
		grace := pod.Spec.TerminationGracePeriodSeconds
		if pod.DeletionGracePeriodSeconds != nil {
			grace = pod.DeletionGracePeriodSeconds
		}
		g := 30 * time.Second
		if grace != nil {
			g = time.Duration(*grace) * time.Second
		}
		p.requestDelete(now, g)
	}
	status := p.status(pod, now)
	remove := p.done && p.deleting
	k.mu.Unlock()
	if !equality.Semantic.DeepEqual(status, pod.Status) {
		orig := pod.DeepCopy()
		pod.Status = status
		k.apiErr("pod status "+pod.Namespace+"/"+pod.Name, k.c.Status().Patch(ctx, pod, client.StrategicMergeFrom(orig)))
	}
	if remove && k.deletePod(ctx, pod) {
		k.mu.Lock()
		k.forget(p)
		k.mu.Unlock()
	}
}

// deletePod removes the pod from the API at once and reports whether it
// is gone.
func (k *Kubelet) deletePod(ctx context.Context, pod *corev1.Pod) bool {
	err := k.c.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
	if err == nil {
		k.log.Info("Pod removed", "pod", pod.Namespace+"/"+pod.Name)
	}
	k.apiErr("delete pod "+pod.Namespace+"/"+pod.Name, err)
	return err == nil || apierrors.IsNotFound(err)
}

// admit sets up a pod: address, directories, volumes and containers.
// k.mu is held.
func (k *Kubelet) admit(obj *corev1.Pod) *pod {
	p := &pod{
		k: k, uid: obj.UID, ns: obj.Namespace, name: obj.Name, obj: obj.DeepCopy(),
		dir:     filepath.Join(k.opts.Root, "pods", string(obj.UID)),
		volumes: map[string]string{}, startTime: time.Now(),
	}
	p.ip, p.reservation = k.allocIP()
	for _, v := range p.obj.Spec.Volumes {
		dir := filepath.Join(p.dir, "volumes", v.Name)
		if v.PersistentVolumeClaim != nil {
			dir = k.ClaimDir(p.ns, v.PersistentVolumeClaim.ClaimName)
		} else if v.EmptyDir == nil && v.Secret == nil {
			k.log.Info("Volume type not supported; using an empty directory", "pod", p.ns+"/"+p.name, "volume", v.Name)
		}
		p.volumes[v.Name] = dir
	}
	for _, dir := range append([]string{p.dir, filepath.Join(k.opts.Root, "termination")}, mapValues(p.volumes)...) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			k.log.Error(err, "Cannot create a pod directory", "pod", p.ns+"/"+p.name)
		}
	}
	p.annotations = maps.Clone(obj.Annotations)
	p.syncSecretVolumes(time.Now())
	for _, c := range p.obj.Spec.InitContainers {
		kind := initKind
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			kind = sidecarKind
		}
		p.inits = append(p.inits, &container{spec: c, kind: kind})
	}
	for _, c := range p.obj.Spec.Containers {
		p.apps = append(p.apps, &container{spec: c, kind: appKind})
	}
	k.pods[p.uid] = p
	k.log.Info("Pod admitted", "pod", p.ns+"/"+p.name, "ip", p.ip)
	return p
}

// mapValues returns a map's values.
func mapValues(m map[string]string) []string {
	var vs []string
	for _, v := range m {
		vs = append(vs, v)
	}
	return vs
}

// syncClaims binds Pending claims (and grows bound ones whose request
// grew), removes the protection finalizer of deleted claims no pod uses,
// and deletes the directory of claims gone from the API.
func (k *Kubelet) syncClaims(ctx context.Context, claims []corev1.PersistentVolumeClaim, pods []corev1.Pod) {
	live := map[types.UID]bool{}
	for i := range claims {
		pvc := &claims[i]
		live[pvc.UID] = true
		k.mu.Lock()
		k.claims[pvc.UID] = [2]string{pvc.Namespace, pvc.Name}
		k.mu.Unlock()
		if pvc.DeletionTimestamp != nil {
			k.mu.Lock()
			inUse := k.claimInUse(pvc.Namespace, pvc.Name, nil) || k.claimInUse(pvc.Namespace, pvc.Name, pods)
			k.mu.Unlock()
			if controllerutil.ContainsFinalizer(pvc, pvcProtection) && !inUse {
				orig := pvc.DeepCopy()
				controllerutil.RemoveFinalizer(pvc, pvcProtection)
				err := k.c.Patch(ctx, pvc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
				k.apiErr("unprotect claim "+pvc.Namespace+"/"+pvc.Name, err)
			}
			continue
		}
		req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		capacity := pvc.Status.Capacity[corev1.ResourceStorage]
		if pvc.Status.Phase == corev1.ClaimBound && req.Cmp(capacity) <= 0 {
			continue
		}
		orig := pvc.DeepCopy()
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.AccessModes = pvc.Spec.AccessModes
		if !req.IsZero() {
			pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: req}
		}
		k.apiErr("claim status "+pvc.Namespace+"/"+pvc.Name, k.c.Status().Patch(ctx, pvc, client.MergeFrom(orig)))
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for uid, key := range k.claims {
		if live[uid] || k.claimInUse(key[0], key[1], nil) {
			continue
		}
		delete(k.claims, uid)
		if err := os.RemoveAll(k.ClaimDir(key[0], key[1])); err != nil {
			k.log.Error(err, "Cannot delete a claim's directory", "claim", key[0]+"/"+key[1])
		}
		k.log.Info("Claim is gone; deleted its directory", "claim", key[0]+"/"+key[1])
	}
}

// claimInUse reports whether a pod that is not terminated uses the claim:
// one of pods, or (with pods nil, k.mu held) a pod still running here.
func (k *Kubelet) claimInUse(ns, claim string, pods []corev1.Pod) bool {
	uses := func(spec *corev1.PodSpec) bool {
		for _, v := range spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
				return true
			}
		}
		return false
	}
	if pods == nil {
		for _, p := range k.pods {
			if p.ns == ns && !p.done && uses(&p.obj.Spec) {
				return true
			}
		}
		return false
	}
	for i := range pods {
		pod := &pods[i]
		if pod.Namespace == ns && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed &&
			uses(&pod.Spec) {
			return true
		}
	}
	return false
}
