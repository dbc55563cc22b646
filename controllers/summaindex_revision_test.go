package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestRevisionIgnoresHowTheOperatorRendersThePod is what keeps an operator
// upgrade from restarting every engine: a pod rendered differently (other
// probe timings, labels, security context, the operator's version) from
// the same decisions has the same revision.
func TestRevisionIgnoresHowTheOperatorRendersThePod(t *testing.T) {
	x := podTestIndex()
	in := podInputs{image: "img:1", grace: 30, operatorVersion: "v0.2.0"}
	base := desiredPod(x, in)
	rev := base.Annotations[AnnotationRevision]
	if !strings.HasPrefix(rev, revisionFormat+"-") || legacyRevision(rev) {
		t.Fatalf("revision %q is not of format %s", rev, revisionFormat)
	}
	if base.Annotations[AnnotationOperatorVersion] != "v0.2.0" {
		t.Errorf("operator version annotation %v", base.Annotations)
	}
	in.operatorVersion = "v0.3.0"
	upgraded := desiredPod(x, in)
	if upgraded.Annotations[AnnotationRevision] != rev {
		t.Error("a new operator version changed the revision")
	}
	// What a new operator version might render differently changes
	// nothing: the revision is computed from the decisions, not the pod.
	upgraded.Spec.Containers[0].ReadinessProbe.PeriodSeconds = 7
	upgraded.Spec.Containers[0].LivenessProbe.HTTPGet.Port = intstr.FromInt(8082)
	upgraded.Labels["app.kubernetes.io/version"] = "v0.3.0"
	upgraded.Spec.SecurityContext.FSGroupChangePolicy = ptr.To(corev1.FSGroupChangeOnRootMismatch)
	if revisionOf(x, in) != rev {
		t.Error("the revision depends on the rendering")
	}
}

// TestRevisionFollowsTheOperatorsDefaultImage: an operator upgrade that
// brings a new default engine image is a new revision of every index
// without spec.image (a rolling restart, followers first), and of none
// that names its image.
func TestRevisionFollowsTheOperatorsDefaultImage(t *testing.T) {
	x := podTestIndex()
	x.Spec.Image = ""
	older := &SummaIndexReconciler{Options: Options{DefaultImage: "summa-server:v1"}}
	newer := &SummaIndexReconciler{Options: Options{DefaultImage: "summa-server:v2"}}
	if revisionOf(x, older.podInputs(x, 30, access{})) == revisionOf(x, newer.podInputs(x, 30, access{})) {
		t.Error("a new default engine image keeps the revision")
	}
	x.Spec.Image = "summa-server:pinned"
	if revisionOf(x, older.podInputs(x, 30, access{})) != revisionOf(x, newer.podInputs(x, 30, access{})) {
		t.Error("a new default engine image changes the revision of an index that names its image")
	}
}

func TestRevisionFollowsRestartedAtAndAccess(t *testing.T) {
	x := podTestIndex()
	in := podInputs{image: "img:1", grace: 30, access: access{known: true, credentialsSecret: "a-credentials", tlsSecret: "a-tls", hash: "h1"}}
	rev := revisionOf(x, in)
	y := x.DeepCopy()
	y.Annotations = map[string]string{AnnotationRestartedAt: "2026-12-03T12:00:00Z"}
	if revisionOf(y, in) == rev {
		t.Error("restartedAt does not change the revision")
	}
	rotated := in
	rotated.access.hash = "h2"
	if revisionOf(x, rotated) != rev {
		t.Error("rotated tokens change the revision (they reach the engine through its volumes)")
	}
	plain := in
	plain.access.tlsSecret = ""
	if revisionOf(x, plain) == rev {
		t.Error("turning TLS off keeps the revision")
	}
}

func TestLegacyRevisionsAreRecognised(t *testing.T) {
	for rev, legacy := range map[string]bool{"": false, "0a1b2c3d4e5f": true, "v1-0a1b2c3d4e5f": true, "v2-0a1b2c3d4e5f": false} {
		if legacyRevision(rev) != legacy {
			t.Errorf("legacyRevision(%q) = %v", rev, !legacy)
		}
	}
}

// TestV1RevisionsOfCurrentPodsAreAdopted: a pod labelled by an operator of
// format v1 (which hashed the grace) is current when its revision is the
// v1 hash of today's decisions with its own grace, whatever grace the
// estimate asks for now.
func TestV1RevisionsOfCurrentPodsAreAdopted(t *testing.T) {
	x := podTestIndex()
	in := podInputs{image: "img:1", grace: 45, access: access{known: true, credentialsSecret: "a-credentials"}}
	old := desiredPod(x, in)
	old.Annotations[AnnotationRevision] = revisionV1Of(x, in)
	if !strings.HasPrefix(old.Annotations[AnnotationRevision], "v1-") {
		t.Fatalf("v1 revision %q", old.Annotations[AnnotationRevision])
	}
	now := in
	now.grace = 90 // the estimate grew since
	desired := desiredPod(x, now)
	if !currentLegacy(x, old, desired, now) {
		t.Error("a v1 pod of the current decisions is not adopted")
	}
	y := x.DeepCopy()
	y.Spec.Engine.IndexingWorkers = ptr.To[int32](3)
	if currentLegacy(y, old, desiredPod(y, now), now) {
		t.Error("a v1 pod of another spec is adopted")
	}
	y = x.DeepCopy()
	y.Spec.Lifecycle.TerminationGracePeriod.MinSeconds = 60
	if currentLegacy(y, old, desiredPod(y, now), now) {
		t.Error("a v1 pod whose grace is below the bounds is adopted")
	}
}

// TestV1RevisionIsTheOneV1OperatorsWrote: the v1 hash is computed exactly
// as the operators of format v1 did (figures from that code), or no pod of
// theirs would be adopted.
func TestV1RevisionIsTheOneV1OperatorsWrote(t *testing.T) {
	x := podTestIndex()
	if got := revisionV1Of(x, podInputs{image: "img:1", grace: 30}); got != "v1-0b4db876e8f8" {
		t.Errorf("v1 revision %s", got)
	}
	in := podInputs{image: "img:1", grace: 45, access: access{known: true, credentialsSecret: "a-credentials", tlsSecret: "a-tls", caPresent: true}}
	if got := revisionV1Of(x, in); got != "v1-bddb19a2a426" {
		t.Errorf("v1 revision with access %s", got)
	}
}

// TestRevisionHashesArePinned keeps both revision formats byte for byte:
// a change of the inputs' JSON would restart every engine on an operator
// upgrade (v2), or no longer recognize the pods an older operator made
// (v1).
func TestRevisionHashesArePinned(t *testing.T) {
	x := podTestIndex()
	x.Annotations = map[string]string{AnnotationRestartedAt: "2026-12-03T12:00:00Z"}
	in := podInputs{image: "img:1", grace: 30, volumePermissions: true,
		access: access{known: true, credentialsSecret: "a-credentials", tlsSecret: "a-tls", caPresent: true}}
	if got, want := revisionOf(x, in), "v2-ff82d17fe475"; got != want {
		t.Errorf("v2 revision %s, want %s", got, want)
	}
	if got, want := revisionV1Of(x, in), "v1-66e709b7b520"; got != want {
		t.Errorf("v1 revision %s, want %s", got, want)
	}
}
