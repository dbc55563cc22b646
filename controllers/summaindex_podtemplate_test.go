package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPodTemplateErrorsNameEveryReservedName(t *testing.T) {
	x := podTestIndex()
	if errs := podTemplateErrors(x); len(errs) != 0 {
		t.Fatalf("no template: %v", errs)
	}
	x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "volume-permissions", Image: "x"}},
		Containers: []corev1.Container{
			{Name: "app", Image: "app:1", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}},
			{Name: EngineContainerName, Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: 9090}, {ContainerPort: EnginePort}}},
		},
		Volumes:             []corev1.Volume{{Name: "cache"}, {Name: dataVolumeName}, {Name: credentialsVolumeName}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
	}}
	got := podTemplateErrors(x).ToAggregate().Error()
	for _, want := range []string{
		`spec.podTemplate.spec.initContainers[0].name: Invalid value: "volume-permissions"`,
		`spec.podTemplate.spec.containers[1].name: Invalid value: "engine"`,
		`spec.podTemplate.spec.containers[1].ports[1].containerPort: Invalid value: 8082`,
		`spec.podTemplate.spec.volumes[1].name: Invalid value: "summa-data"`,
		`spec.podTemplate.spec.volumes[2].name: Invalid value: "summa-credentials"`,
		`spec.podTemplate.spec.ephemeralContainers: Forbidden`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
	if n := len(podTemplateErrors(x)); n != 6 {
		t.Errorf("%d errors, want 6:\n%s", n, got)
	}
}

func TestEveryVolumeTheOperatorAddsIsReserved(t *testing.T) {
	for _, name := range []string{dataVolumeName, tmpVolumeName, credentialsVolumeName, tlsVolumeName, clientTokenVolumeName, clientCAVolumeName} {
		if !strings.HasPrefix(name, reservedVolumePrefix) {
			t.Errorf("volume %s is not covered by the reserved prefix %s", name, reservedVolumePrefix)
		}
	}
}
