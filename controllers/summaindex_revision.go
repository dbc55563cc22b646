package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// Revisions. A pod's revision (annotation summa.dev/revision) hashes only
// what the user or the engine's version decides: the image, the engine
// flags and resources of the spec, the pod template, the termination grace
// and the engine's shutdown deadline, the access the pod mounts, the
// restartedAt annotation, and the volume-permissions option. How the
// operator renders those into a pod (probe timings, labels, security
// context, argument spelling) is left out, so that a new operator version
// restarts no engine unless it has to. A rendering change that must reach
// running pods bumps revisionFormat; the restarts it causes then roll
// through the indexes under the restart budget (summaindex_restarts.go).

// revisionFormat names the revision scheme; bumped when the operator's
// rendering must reach pods that already run.
const revisionFormat = "v1"

// AnnotationOperatorVersion records on each engine pod the operator
// version that made it (for people; never part of the revision).
const AnnotationOperatorVersion = "summa.dev/operator-version"

// revisionInputs are the decisions a revision hashes. Adding a field with
// omitempty keeps every existing revision.
type revisionInputs struct {
	Image             string                      `json:"image"`
	Grace             int64                       `json:"grace"`
	ShutdownDeadline  int64                       `json:"shutdownDeadline"`
	Resources         corev1.ResourceRequirements `json:"resources"`
	Engine            summav1.EngineSpec          `json:"engine"`
	PodTemplate       *corev1.PodTemplateSpec     `json:"podTemplate,omitempty"`
	RestartedAt       string                      `json:"restartedAt,omitempty"`
	CredentialsSecret string                      `json:"credentialsSecret,omitempty"`
	TLSSecret         string                      `json:"tlsSecret,omitempty"`
	CAPresent         bool                        `json:"caPresent,omitempty"`
	VolumePermissions bool                        `json:"volumePermissions,omitempty"`
	Backup            *summav1.S3Spec             `json:"backup,omitempty"`
}

// revisionOf is the revision of x's desired pod under in.
func revisionOf(x *summav1.SummaIndex, in podInputs) string {
	raw, _ := json.Marshal(revisionInputs{
		Image:             in.image,
		Grace:             in.grace,
		ShutdownDeadline:  engineShutdownDeadline(x, in.grace),
		Resources:         x.Spec.Resources,
		Engine:            x.Spec.Engine,
		PodTemplate:       x.Spec.PodTemplate,
		RestartedAt:       x.Annotations[AnnotationRestartedAt],
		CredentialsSecret: in.access.credentialsSecret,
		TLSSecret:         in.access.tlsSecret,
		CAPresent:         in.access.caPresent,
		VolumePermissions: in.volumePermissions,
		Backup:            backupS3(x),
	})
	sum := sha256.Sum256(raw)
	return revisionFormat + "-" + hex.EncodeToString(sum[:])[:12]
}

// legacyRevision reports whether rev was written by an operator before
// revisionFormat (a hash of the whole rendered pod).
func legacyRevision(rev string) bool {
	return rev != "" && !strings.HasPrefix(rev, revisionFormat+"-")
}

// engineImageOf is the image of pod's engine container.
func engineImageOf(pod *corev1.Pod) string {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == EngineContainerName {
				return c.Image
			}
		}
	}
	return ""
}

// adoptLegacyRevision re-labels a pod made by an operator of the previous
// revision scheme with the revision of this one, without a restart, when
// that operator had found it current: its revision is the status's
// updateRevision, computed for the generation in status, which is still
// the spec's, and the image and the restartedAt annotation agree. A pod
// that does not pass is restarted (under the budget), as the scheme
// change cannot prove it current. It reports whether pod was adopted.
func (r *SummaIndexReconciler) adoptLegacyRevision(ctx context.Context, x *summav1.SummaIndex, pod *corev1.Pod, desired *corev1.Pod) (bool, error) {
	rev := pod.Annotations[AnnotationRevision]
	if !legacyRevision(rev) || rev != x.Status.UpdateRevision || x.Status.ObservedGeneration != x.Generation ||
		engineImageOf(pod) != engineImageOf(desired) ||
		pod.Annotations[AnnotationRestartedAt] != desired.Annotations[AnnotationRestartedAt] {
		return false, nil
	}
	patch := client.MergeFrom(pod.DeepCopy())
	pod.Annotations[AnnotationRevision] = desired.Annotations[AnnotationRevision]
	if err := r.Patch(ctx, pod, patch); err != nil {
		return false, fmt.Errorf("record revision %s on engine pod %s: %w", desired.Annotations[AnnotationRevision], pod.Name, err)
	}
	r.event(x, pod, corev1.EventTypeNormal, "RevisionAdopted", "engine pod %s of revision %s (previous scheme) adopted as %s without a restart",
		pod.Name, rev, desired.Annotations[AnnotationRevision])
	return true, nil
}
