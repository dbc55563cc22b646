package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// An engine without spec.resources is Burstable with the default requests,
// never BestEffort; what the spec sets wins, and a limit alone is left for
// Kubernetes to copy into the request.
func TestEngineGetsDefaultRequestsUnlessTheSpecSetsThem(t *testing.T) {
	x := podTestIndex()
	pod := desiredPod(x, podInputs{image: "summa-server:v1", grace: 45})
	req := pod.Spec.Containers[0].Resources.Requests
	if !req.Cpu().Equal(DefaultEngineCPURequest) || !req.Memory().Equal(DefaultEngineMemoryRequest) {
		t.Fatalf("requests without spec.resources: %v", req)
	}
	if len(pod.Spec.Containers[0].Resources.Limits) != 0 {
		t.Errorf("limits set without spec.resources: %v", pod.Spec.Containers[0].Resources.Limits)
	}

	x.Spec.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	got := engineResources(x)
	if !got.Requests.Cpu().Equal(resource.MustParse("2")) {
		t.Errorf("cpu request %v, want the spec's 2", got.Requests.Cpu())
	}
	if _, ok := got.Requests[corev1.ResourceMemory]; ok {
		t.Errorf("memory request %v added although the spec limits memory", got.Requests.Memory())
	}
	if len(x.Spec.Resources.Requests) != 1 {
		t.Errorf("engineResources changed the spec: %v", x.Spec.Resources.Requests)
	}
}
