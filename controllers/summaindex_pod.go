package controllers

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	summav1 "github.com/summadev/summa/api/v1"
)

// Names and values of the engine pod.
const (
	// EngineContainerName is the engine container's name (contract).
	EngineContainerName = "engine"
	// EnginePort is the engine's HTTP port (contract).
	EnginePort = 8082
	// EnginePortName names the port on the container and the Service.
	EnginePortName = "http"
	// DataMountPath is where the data volume is mounted (contract).
	DataMountPath = "/data"
	// dataVolumeName names the data volume in the pod.
	dataVolumeName = "summa-data"
	// tmpVolumeName names the scratch volume behind the read-only root.
	tmpVolumeName = "summa-tmp"
	// EngineCommand is the engine binary's name in the image.
	EngineCommand = "summa-server"
	// LabelComponent tells the engine pod from Job pods of the same index.
	LabelComponent = "summa.dev/component"
	// ComponentEngine is LabelComponent's value on engine pods.
	ComponentEngine = "engine"
	// AnnotationRevision carries the pod's revision hash.
	AnnotationRevision = "summa.dev/revision"
	// nonRootUID runs the engine and Jobs (the distroless "nonroot" user).
	nonRootUID int64 = 65532
)

// engineArgs returns the engine's command-line flags.
func engineArgs(index *summav1.SummaIndex, shutdownDeadline, shutdownDelay int64, acc access) []string {
	args := []string{
		"--data-dir", DataMountPath,
		"--listen", "0.0.0.0:" + strconv.Itoa(EnginePort),
		"--shutdown-deadline=" + strconv.FormatInt(shutdownDeadline, 10) + "s",
	}
	// The delay hands searches over to the index's other serving pods;
	// a lone pod has none to hand over to, and would only restart later.
	if d := shutdownDelayFor(shutdownDeadline, shutdownDelay); d > 0 && index.EffectiveReplicas() > 0 {
		args = append(args, "--shutdown-delay="+strconv.FormatInt(d, 10)+"s")
	}
	args = append(args, accessArgs(acc)...)
	if s3 := backupS3(index); s3 != nil {
		args = append(args, s3Args(s3)...)
	}
	return append(args, index.Spec.Engine.Args()...)
}

// DefaultEngineShutdownDelay is the manager's --engine-shutdown-delay:
// the engine's --shutdown-delay, so that after SIGTERM it answers unready
// and keeps serving this long (or as long as its drain takes, if longer)
// while the EndpointSlice controller and kube-proxy stop routing to the
// pod; a search the Service still sends it is answered, not refused.
const DefaultEngineShutdownDelay = 5 * time.Second

// shutdownDelayFor is the engine's --shutdown-delay in seconds (0: none)
// when the index has read followers: the operator's setting, and half the
// shutdown deadline at most, to leave the drain its time.
func shutdownDelayFor(shutdownDeadline, maxDelay int64) int64 {
	return max(0, min(maxDelay, shutdownDeadline/2))
}

// shutdownDeadlineFor is the engine's own deadline for a grace period: a
// margin shorter, so the kubelet's SIGKILL never comes first.
func shutdownDeadlineFor(grace int64) int64 {
	margin := int64(5)
	if grace < 20 {
		margin = max(1, grace/4)
	}
	return max(1, grace-margin)
}

// restrictedContainer is the security context of every container the
// operator runs: non-root, read-only root, no privilege escalation, no
// capabilities.
func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To(nonRootUID),
		RunAsGroup:               ptr.To(nonRootUID),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Privileged:               ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// restrictedPod is the pod-level security context: the volume is group
// writable by the non-root user.
func restrictedPod() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To(nonRootUID),
		RunAsGroup:     ptr.To(nonRootUID),
		FSGroup:        ptr.To(nonRootUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// engineContainer is the engine container for a grace period.
func engineContainer(index *summav1.SummaIndex, in podInputs) corev1.Container {
	scheme := corev1.URISchemeHTTP
	if in.access.tlsSecret != "" {
		scheme = corev1.URISchemeHTTPS
	}
	httpGet := func(path string) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(EnginePortName), Scheme: scheme}}
	}
	return corev1.Container{
		Name:    EngineContainerName,
		Image:   in.image,
		Command: []string{EngineCommand},
		Args:    engineArgs(index, engineShutdownDeadline(index, in.grace), in.shutdownDelay, in.access),
		Ports: []corev1.ContainerPort{{
			Name: EnginePortName, ContainerPort: EnginePort, Protocol: corev1.ProtocolTCP,
		}},
		Resources: engineResources(index),
		VolumeMounts: append([]corev1.VolumeMount{
			{Name: dataVolumeName, MountPath: DataMountPath},
			{Name: tmpVolumeName, MountPath: "/tmp"},
		}, append(accessMounts(in.access), backupMounts(index)...)...),
		// Opening a large index takes a while: the startup probe gives it
		// five minutes before liveness counts.
		StartupProbe: &corev1.Probe{ProbeHandler: httpGet("/healthz"),
			PeriodSeconds: 5, TimeoutSeconds: 5, FailureThreshold: 60},
		ReadinessProbe: &corev1.Probe{ProbeHandler: httpGet("/readyz"),
			PeriodSeconds: 2, TimeoutSeconds: 5, FailureThreshold: 1},
		// /healthz stays 200 through drains and maintenance; six misses a
		// minute apart before a restart.
		LivenessProbe: &corev1.Probe{ProbeHandler: httpGet("/healthz"),
			PeriodSeconds: 10, TimeoutSeconds: 10, FailureThreshold: 6},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext:          restrictedContainer(),
	}
}

// volumePermissionsContainer hands a mounted volume to the non-root user
// before anything else runs: root with only CHOWN and FOWNER, for storage
// (hostPath, some local provisioners) that ignores fsGroup.
func volumePermissionsContainer(name, image string, mount corev1.VolumeMount) corev1.Container {
	id := strconv.FormatInt(nonRootUID, 10)
	return corev1.Container{
		Name:            name,
		Image:           image,
		Command:         []string{EngineCommand},
		Args:            []string{"prepare-volume", "--data-dir", mount.MountPath, "--uid", id, "--gid", id},
		VolumeMounts:    []corev1.VolumeMount{mount},
		ImagePullPolicy: corev1.PullIfNotPresent,
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                ptr.To[int64](0),
			RunAsNonRoot:             ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			Privileged:               ptr.To(false),
			Capabilities: &corev1.Capabilities{
				Drop: []corev1.Capability{"ALL"},
				Add:  []corev1.Capability{"CHOWN", "FOWNER"},
			},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

// podInputs are the operator's decisions a pod is built from, besides
// the spec.
type podInputs struct {
	// image is the engine image.
	image string
	// grace is the pod's terminationGracePeriodSeconds.
	grace int64
	// volumePermissions adds the volume-permissions init container.
	volumePermissions bool
	// access names the Secrets of the tokens and certificate.
	access access
	// operatorVersion is recorded on the pod (not part of its revision).
	operatorVersion string
	// shutdownDelay is the longest engine --shutdown-delay in seconds
	// (Options.EngineShutdownDelay; not part of the revision).
	shutdownDelay int64
}

// desiredPod builds the engine pod. With app containers in
// spec.podTemplate, the engine is their native sidecar: an init container
// with restartPolicy Always, started first and stopped last, and the app
// containers get the engine's address, the write token and the CA. With
// volumePermissions, an init container first hands the data volume to the
// engine's user.
func desiredPod(index *summav1.SummaIndex, in podInputs) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: index.EnginePodName(), Namespace: index.Namespace,
		Labels: map[string]string{}, Annotations: map[string]string{},
	}}
	if t := index.Spec.PodTemplate; t != nil {
		for k, v := range t.Labels {
			pod.Labels[k] = v
		}
		for k, v := range t.Annotations {
			pod.Annotations[k] = v
		}
		pod.Spec = *t.Spec.DeepCopy()
	}
	for k, v := range engineLabels(index) {
		pod.Labels[k] = v
	}
	pod.Labels[summav1.LabelRole] = summav1.RoleLeader
	pod.Labels[summav1.LabelServing] = "true"
	if v, ok := index.Annotations[AnnotationRestartedAt]; ok {
		// Part of the revision: a new value is one drained restart.
		pod.Annotations[AnnotationRestartedAt] = v
	}
	engine := engineContainer(index, in)
	if len(pod.Spec.Containers) > 0 {
		engine.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		pod.Spec.InitContainers = append([]corev1.Container{engine}, pod.Spec.InitContainers...)
		pod.Spec.Volumes = append(pod.Spec.Volumes, clientVolumes(in.access)...)
		for i := range pod.Spec.Containers {
			addClientAccess(&pod.Spec.Containers[i], in.access)
		}
	} else {
		pod.Spec.Containers = []corev1.Container{engine}
	}
	if in.volumePermissions {
		prep := volumePermissionsContainer("volume-permissions", in.image, corev1.VolumeMount{Name: dataVolumeName, MountPath: DataMountPath})
		pod.Spec.InitContainers = append([]corev1.Container{prep}, pod.Spec.InitContainers...)
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: dataVolumeName, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: index.DataClaimName()}}},
		corev1.Volume{Name: tmpVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	)
	pod.Spec.Volumes = append(pod.Spec.Volumes, accessVolumes(in.access)...)
	if s3 := backupS3(index); s3 != nil {
		pod.Spec.Volumes = append(pod.Spec.Volumes, s3Volumes(s3, index.S3CredentialsSecretName())...)
	}
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	pod.Spec.TerminationGracePeriodSeconds = ptr.To(in.grace)
	if pod.Spec.SecurityContext == nil {
		pod.Spec.SecurityContext = restrictedPod()
	}
	if pod.Spec.AutomountServiceAccountToken == nil {
		pod.Spec.AutomountServiceAccountToken = ptr.To(false)
	}
	if pod.Spec.EnableServiceLinks == nil {
		pod.Spec.EnableServiceLinks = ptr.To(false)
	}
	pod.Annotations[AnnotationRevision] = revisionOf(index, in)
	if in.operatorVersion != "" {
		pod.Annotations[AnnotationOperatorVersion] = in.operatorVersion
	}
	if in.access.hash != "" {
		pod.Annotations[AnnotationAccessHash] = in.access.hash
	}
	return pod
}

// engineLabels are the labels of the engine pod (and the Service selector).
func engineLabels(index *summav1.SummaIndex) map[string]string {
	l := index.Labels()
	l[LabelComponent] = ComponentEngine
	return l
}

// engineRunning reports whether the engine container is running, so its
// API can be reached even when not Ready (a drain makes it unready).
func engineRunning(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.PodIP == "" {
		return false
	}
	cs := engineStatus(pod)
	return cs != nil && cs.State.Running != nil
}

// engineStatus is the status of pod's engine container: among the
// containers, or among the init containers when it runs as a native
// sidecar; nil while the kubelet reports none.
func engineStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == EngineContainerName {
				return &list[i]
			}
		}
	}
	return nil
}
