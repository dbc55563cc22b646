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
// flags and resources of the spec, the pod template, the bounds of the
// termination grace, the access the pod mounts, the restartedAt
// annotation, and the volume-permissions option. How the operator renders
// those into a pod (probe timings, labels, security context, argument
// spelling) is left out, so that a new operator version restarts no engine
// unless it has to. A rendering change that must reach running pods bumps
// revisionFormat; the restarts it causes then roll through the indexes
// under the restart budget (summaindex_restarts.go).
//
// The grace itself (and the engine's shutdown deadline derived from it) is
// not hashed since format v2: Kubernetes cannot change it on a running
// pod, and a restart for it would come when the engine is busiest. The
// next pod made anyway carries the grace of the moment
// (summaindex_grace.go). Pods of format v1, whose hash included the grace,
// are re-labelled without a restart when their v1 hash is that of the
// current decisions with their own grace (adoptLegacyRevision).

// revisionFormat names the revision scheme; bumped when the operator's
// rendering must reach pods that already run.
const revisionFormat = "v2"

// revisionFormatV1 is the previous scheme, which hashed the grace.
const revisionFormatV1 = "v1"

// AnnotationOperatorVersion records on each engine pod the operator
// version that made it (for people; never part of the revision).
const AnnotationOperatorVersion = "summa.dev/operator-version"

// revisionInputs are the decisions a revision hashes. Adding a field with
// omitempty (here, after revisionCommon, never in it: v1 must not change)
// keeps every existing revision.
type revisionInputs struct {
	Image       string   `json:"image"`
	GraceBounds [2]int32 `json:"graceBounds"`
	revisionCommon
}

// revisionCommon are the decisions both formats hash, after their own
// fields (encoding/json writes an embedded struct's fields in its place:
// the hashed JSON is as if they were written out in each).
type revisionCommon struct {
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

// revisionInputsV1 are the decisions a v1 revision hashed (never change:
// the field order and names are the hash).
type revisionInputsV1 struct {
	Image            string `json:"image"`
	Grace            int64  `json:"grace"`
	ShutdownDeadline int64  `json:"shutdownDeadline"`
	revisionCommon
}

// revisionOf is the revision of index's desired pod under in (in.grace is not
// part of it).
func revisionOf(index *summav1.SummaIndex, in podInputs) string {
	lo, hi := index.Spec.Lifecycle.GraceBounds()
	return hashRevision(revisionFormat, revisionInputs{
		Image:          in.image,
		GraceBounds:    [2]int32{lo, hi},
		revisionCommon: commonRevisionInputs(index, in),
	})
}

// revisionV1Of is the revision an operator of format v1 gave index's desired
// pod under in, with grace in.grace.
func revisionV1Of(index *summav1.SummaIndex, in podInputs) string {
	return hashRevision(revisionFormatV1, revisionInputsV1{
		Image:            in.image,
		Grace:            in.grace,
		ShutdownDeadline: engineShutdownDeadline(index, in.grace),
		revisionCommon:   commonRevisionInputs(index, in),
	})
}

// commonRevisionInputs are the decisions of both formats for index's
// desired pod under in.
func commonRevisionInputs(index *summav1.SummaIndex, in podInputs) revisionCommon {
	return revisionCommon{
		Resources:         index.Spec.Resources,
		Engine:            index.Spec.Engine,
		PodTemplate:       index.Spec.PodTemplate,
		RestartedAt:       index.Annotations[AnnotationRestartedAt],
		CredentialsSecret: in.access.credentialsSecret,
		TLSSecret:         in.access.tlsSecret,
		CAPresent:         in.access.caPresent,
		VolumePermissions: in.volumePermissions,
		Backup:            backupS3(index),
	}
}

// hashRevision is format, a dash and 12 hex digits of the inputs' hash.
func hashRevision(format string, inputs any) string {
	raw, _ := json.Marshal(inputs)
	sum := sha256.Sum256(raw)
	return format + "-" + hex.EncodeToString(sum[:])[:12]
}

// legacyRevision reports whether rev was written by an operator before
// revisionFormat (format v1, or a hash of the whole rendered pod before).
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

// adoptLegacyRevision re-labels a pod made by an operator of a previous
// revision scheme with the revision of this one, without a restart, when
// that pod is current:
//
//   - format v1 (which hashed the grace): its revision is the v1 hash of
//     the current decisions with the pod's own grace, and that grace is
//     within the spec's bounds;
//   - before v1 (a hash of the whole rendered pod): that operator had
//     found it current: its revision is the status's updateRevision,
//     computed for the generation in status, which is still the spec's,
//     and the image and the restartedAt annotation agree.
//
// A pod that does not pass is restarted (under the budget), as the scheme
// change cannot prove it current. It reports whether pod was adopted.
func (r *SummaIndexReconciler) adoptLegacyRevision(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod,
	desired *corev1.Pod, in podInputs) (bool, error) {
	rev := pod.Annotations[AnnotationRevision]
	if !legacyRevision(rev) || !currentLegacy(index, pod, desired, in) {
		return false, nil
	}
	patch := client.MergeFrom(pod.DeepCopy())
	pod.Annotations[AnnotationRevision] = desired.Annotations[AnnotationRevision]
	if err := r.Patch(ctx, pod, patch); err != nil {
		return false, fmt.Errorf("record revision %s on engine pod %s: %w", desired.Annotations[AnnotationRevision], pod.Name, err)
	}
	r.event(index, pod, corev1.EventTypeNormal, "RevisionAdopted", "engine pod %s of revision %s (previous scheme) adopted as %s without a restart",
		pod.Name, rev, desired.Annotations[AnnotationRevision])
	return true, nil
}

// currentLegacy reports whether pod, of a revision of a previous scheme,
// is current (adoptLegacyRevision).
func currentLegacy(index *summav1.SummaIndex, pod, desired *corev1.Pod, in podInputs) bool {
	rev := pod.Annotations[AnnotationRevision]
	if strings.HasPrefix(rev, revisionFormatV1+"-") {
		g := pod.Spec.TerminationGracePeriodSeconds
		if g == nil {
			return false
		}
		lo, hi := index.Spec.Lifecycle.GraceBounds()
		in.grace = *g
		return *g >= int64(lo) && *g <= int64(hi) && revisionV1Of(index, in) == rev
	}
	return rev == index.Status.UpdateRevision && index.Status.ObservedGeneration == index.Generation &&
		engineImageOf(pod) == engineImageOf(desired) &&
		pod.Annotations[AnnotationRestartedAt] == desired.Annotations[AnnotationRestartedAt]
}
