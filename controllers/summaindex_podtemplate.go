package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// Checking spec.podTemplate. The CRD refuses the names the operator puts
// into the engine pod (CEL rules on spec.podTemplate), but a SummaIndex
// stored before those rules (or under an older CRD, which `helm upgrade`
// does not replace) never met them, and the rules cannot see everything
// the API server checks on a pod. So before it creates the engine pod, or
// drains the running one to replace it, the operator checks the desired
// pod: its own reserved names first, for a clear message, then the pod
// template policy (summaindex_podsecurity.go: Pod Security baseline by
// default, whatever the namespace enforces, and an allowed ServiceAccount),
// then a dry-run creation that runs all of the API server's validation and
// admission (the namespace's Pod Security included). A refused pod is
// shown as Degraded with reason InvalidPodTemplate; a running engine keeps
// running meanwhile.

// ReasonInvalidPodTemplate: spec.podTemplate uses a name the operator
// reserves, or makes an engine pod the API server refuses.
const ReasonInvalidPodTemplate = "InvalidPodTemplate"

// volumePermissionsName names the volume-permissions init container.
const volumePermissionsName = "volume-permissions"

// reservedVolumePrefix starts the names of the volumes the operator adds
// (summa-data, summa-tmp and the access volumes).
const reservedVolumePrefix = "summa-"

// podTemplateErrors lists what spec.podTemplate takes from the operator:
// a container named like the engine or the volume-permissions container, a
// volume named summa-*, the engine's port on another container, and
// ephemeral containers (which no pod may be created with). The label keys
// the operator owns are not listed: the operator's values win over the
// template's, and the CRD refuses them on new writes.
func podTemplateErrors(index *summav1.SummaIndex) field.ErrorList {
	t := index.Spec.PodTemplate
	if t == nil {
		return nil
	}
	root := field.NewPath("spec", "podTemplate", "spec")
	var errs field.ErrorList
	for _, l := range []struct {
		name       string
		containers []corev1.Container
	}{{"initContainers", t.Spec.InitContainers}, {"containers", t.Spec.Containers}} {
		for i, c := range l.containers {
			p := root.Child(l.name).Index(i)
			if c.Name == EngineContainerName || c.Name == volumePermissionsName {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, "reserved for the operator's "+c.Name+" container"))
			}
			for j, port := range c.Ports {
				if port.ContainerPort == EnginePort {
					errs = append(errs, field.Invalid(p.Child("ports").Index(j).Child("containerPort"), port.ContainerPort,
						"the engine's port: app containers reach the engine at localhost:8082 and cannot listen on it"))
				}
			}
		}
	}
	for i, v := range t.Spec.Volumes {
		if strings.HasPrefix(v.Name, reservedVolumePrefix) {
			errs = append(errs, field.Invalid(root.Child("volumes").Index(i).Child("name"), v.Name,
				"volume names starting with "+reservedVolumePrefix+" are reserved for the operator's volumes"))
		}
	}
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(root.Child("ephemeralContainers"), "cannot be part of a pod template"))
	}
	return errs
}

// checkDesiredPod checks pod, the engine pod the operator is about to
// create: podTemplateErrors, the pod template policy
// (podTemplatePolicyCheck), then a dry-run creation under a generated
// name (the running pod holds the real one). An invalid pod, or one Pod
// Security admission forbids, is a failure with reason InvalidPodTemplate
// (PodInvalid without a template: then the operator made it so). Any other
// error of the dry run is left to the creation itself: a quota, above all,
// since the running pod still counts against it while its replacement is
// checked.
func (r *SummaIndexReconciler) checkDesiredPod(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod) error {
	if errs := podTemplateErrors(index); len(errs) > 0 {
		return failed(ReasonInvalidPodTemplate, fmt.Errorf("spec.podTemplate: %w", errs.ToAggregate()))
	}
	if err := r.podTemplatePolicyCheck(ctx, index, pod); err != nil {
		return err
	}
	probe := pod.DeepCopy()
	probe.Name, probe.GenerateName, probe.ResourceVersion = "", pod.Name+"-", ""
	err := r.Create(ctx, probe, client.DryRunAll)
	podSecurity := apierrors.IsForbidden(err) && strings.Contains(err.Error(), "violates PodSecurity")
	if !apierrors.IsInvalid(err) && !podSecurity {
		return nil
	}
	reason := ReasonInvalidPodTemplate
	if index.Spec.PodTemplate == nil {
		reason = ReasonPodInvalid
	}
	return failed(reason, fmt.Errorf("the API server refuses the engine pod that spec.podTemplate makes: %w", err))
}

// holdInvalidRestart checks the pod that is to replace the running one
// before its drain starts. When it is refused, the running pod is kept
// (and observed: engineUp) and the refusal returned, to be shown as
// Degraded. A drain already under way is not checked again: the creation
// shows a refusal then.
func (r *SummaIndexReconciler) holdInvalidRestart(ctx context.Context, index *summav1.SummaIndex, pod, desired *corev1.Pod, engineUp bool) error {
	if index.Status.DrainStartTime != nil {
		return nil
	}
	err := r.checkDesiredPod(ctx, index, desired)
	if err == nil {
		return nil
	}
	markRunning(index, engineUp, pod)
	setCondition(index, summav1.ConditionProgressing, false, failureReason(err),
		"the engine pod of the new spec is refused; pod "+pod.Name+" keeps running the previous one")
	return err
}
