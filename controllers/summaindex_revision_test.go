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
	for rev, legacy := range map[string]bool{"": false, "0a1b2c3d4e5f": true, "v1-0a1b2c3d4e5f": false} {
		if legacyRevision(rev) != legacy {
			t.Errorf("legacyRevision(%q) = %v", rev, !legacy)
		}
	}
}
