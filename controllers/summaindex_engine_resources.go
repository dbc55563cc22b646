package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	summav1 "github.com/summadev/summa/api/v1"
)

// Default requests of the engine container, for a resource that
// spec.resources neither requests nor limits. Without them the pod would be
// BestEffort, the first the kubelet evicts under memory pressure; with only
// requests it is Burstable and never capped.
var (
	// DefaultEngineCPURequest is the engine's CPU request when spec.resources sets no CPU.
	DefaultEngineCPURequest = resource.MustParse("100m")
	// DefaultEngineMemoryRequest is the engine's memory request when spec.resources sets no memory.
	DefaultEngineMemoryRequest = resource.MustParse("256Mi")
)

// engineResources is spec.resources with the default requests added for CPU
// and memory where the spec says nothing about them. A limit without a
// request is left alone: Kubernetes then requests the limit.
func engineResources(index *summav1.SummaIndex) corev1.ResourceRequirements {
	r := *index.Spec.Resources.DeepCopy()
	for name, def := range map[corev1.ResourceName]resource.Quantity{
		corev1.ResourceCPU:    DefaultEngineCPURequest,
		corev1.ResourceMemory: DefaultEngineMemoryRequest,
	} {
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if _, ok := r.Limits[name]; ok {
			continue
		}
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		r.Requests[name] = def.DeepCopy()
	}
	return r
}
