package controllers

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// The pod template policy. Whoever may create or edit a SummaIndex writes
// spec.podTemplate, and the operator, which may create pods in every
// namespace it watches, creates the engine pod from it. Without a policy
// of its own, "may create a SummaIndex" would mean "may create any pod"
// wherever the namespace does not enforce Pod Security: a privileged
// container, a hostPath of /, the node's network, or a more powerful
// ServiceAccount of the namespace. So before every creation of the engine
// pod, and before a drain for its replacement (checkDesiredPod), the pod is
// held to a Pod Security level (baseline by default), evaluated with the
// checks of Kubernetes' own Pod Security admission
// (k8s.io/pod-security-admission), and its ServiceAccount must be the
// namespace's default one or one the namespace allows explicitly. A
// namespace that enforces a stricter level still refuses more (the dry-run
// creation).

// PodTemplatePolicy is what the operator demands of the pods that
// spec.podTemplate shapes (--pod-template-policy).
type PodTemplatePolicy string

const (
	// PodTemplatePolicyBaseline (the default) refuses what the Pod
	// Security "baseline" level forbids, and ServiceAccounts not allowed
	// for pod templates.
	PodTemplatePolicyBaseline PodTemplatePolicy = "baseline"
	// PodTemplatePolicyRestricted refuses what the "restricted" level
	// forbids, and ServiceAccounts not allowed for pod templates.
	PodTemplatePolicyRestricted PodTemplatePolicy = "restricted"
	// PodTemplatePolicyUnrestricted checks nothing beyond what the API
	// server does: whoever may write a SummaIndex may run any pod the
	// namespace admits.
	PodTemplatePolicyUnrestricted PodTemplatePolicy = "unrestricted"
)

// DefaultPodTemplatePolicy is the policy unless told otherwise.
const DefaultPodTemplatePolicy = PodTemplatePolicyBaseline

// PodTemplatePolicies are the accepted values, for flag help.
var PodTemplatePolicies = []PodTemplatePolicy{PodTemplatePolicyBaseline, PodTemplatePolicyRestricted, PodTemplatePolicyUnrestricted}

// ParsePodTemplatePolicy reads a --pod-template-policy value.
func ParsePodTemplatePolicy(s string) (PodTemplatePolicy, error) {
	for _, p := range PodTemplatePolicies {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("pod template policy %q: want baseline, restricted or unrestricted", s)
}

// AnnotationAllowedForPodTemplate, at "true" on a ServiceAccount, lets
// the SummaIndexes of its namespace run their pods under it
// (spec.podTemplate.spec.serviceAccountName). Who may annotate
// ServiceAccounts decides; the namespace's "default" needs no annotation.
const AnnotationAllowedForPodTemplate = "summa.dev/allowed-for-podtemplate"

// defaultServiceAccount is the ServiceAccount a pod without one runs as.
const defaultServiceAccount = "default"

// level is the Pod Security level of a policy; ok is false for
// unrestricted.
func (p PodTemplatePolicy) level() (psaapi.Level, bool) {
	switch p {
	case PodTemplatePolicyRestricted:
		return psaapi.LevelRestricted, true
	case PodTemplatePolicyUnrestricted:
		return "", false
	default:
		return psaapi.LevelBaseline, true
	}
}

// podSecurityEvaluator runs the checks of Pod Security admission, as of
// the k8s.io/pod-security-admission release in go.mod.
var podSecurityEvaluator = sync.OnceValue(func() policy.Evaluator {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic("pod security checks: " + err.Error()) // the library's own list
	}
	return e
})

// evaluatePodSecurity returns the results of the checks of a level on one
// pod, in the evaluator's order (the same for every call at one level).
func evaluatePodSecurity(level psaapi.Level, meta *metav1.ObjectMeta, spec *corev1.PodSpec) []policy.CheckResult {
	return podSecurityEvaluator().EvaluatePod(psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}, meta, spec)
}

// forbiddenBeyond lists the indexes of the failed checks of got that base
// does not fail in the same way: what the part added to base brings in.
func forbiddenBeyond(base, got []policy.CheckResult) []int {
	var out []int
	for i, g := range got {
		if g.Allowed {
			continue
		}
		if i < len(base) && !base[i].Allowed && base[i].ForbiddenDetail == g.ForbiddenDetail {
			continue
		}
		out = append(out, i)
	}
	return out
}

// podSecurityErrors holds pod, the engine pod the operator would create
// from index, to the policy's Pod Security level. The whole pod is evaluated,
// the engine container included (it meets restricted), but not the
// volume-permissions init container: that one is the operator's own
// choice (--volume-permissions, root with CHOWN and FOWNER, which baseline
// allows and restricted does not). When the pod fails, each failure is
// named by the part of spec.podTemplate that brings it in: the pod's
// fields, its securityContext, its annotations, each container and each
// volume, evaluated one at a time on top of the pod-level fields.
func podSecurityErrors(p PodTemplatePolicy, index *summav1.SummaIndex, pod *corev1.Pod) field.ErrorList {
	level, ok := p.level()
	t := index.Spec.PodTemplate
	if !ok || t == nil {
		return nil
	}
	full := pod.Spec.DeepCopy()
	full.InitContainers = without(full.InitContainers, volumePermissionsName)
	whole := evaluatePodSecurity(level, &pod.ObjectMeta, full)
	if policy.AggregateCheckResults(whole).Allowed {
		return nil
	}
	var errs field.ErrorList
	named := map[int]bool{} // the checks of whole some part was named for
	forbid := func(path *field.Path, got []policy.CheckResult, failed []int) {
		if len(failed) == 0 {
			return
		}
		var rs []policy.CheckResult
		for _, i := range failed {
			rs = append(rs, got[i])
			named[i] = true
		}
		agg := policy.AggregateCheckResults(rs)
		errs = append(errs, field.Forbidden(path, fmt.Sprintf("%s: Pod Security %q forbids it (the operator's --pod-template-policy)",
			agg.ForbiddenDetail(), string(level))))
	}
	root := field.NewPath("spec", "podTemplate")
	specPath := root.Child("spec")

	podLevel := pod.Spec.DeepCopy()
	podLevel.Containers, podLevel.InitContainers, podLevel.EphemeralContainers, podLevel.Volumes = nil, nil, nil, nil
	noSecurityContext := podLevel.DeepCopy()
	noSecurityContext.SecurityContext = nil
	bare := &metav1.ObjectMeta{}

	fields := evaluatePodSecurity(level, bare, noSecurityContext)
	withSC := evaluatePodSecurity(level, bare, podLevel)
	base := evaluatePodSecurity(level, &pod.ObjectMeta, podLevel)
	forbid(specPath, fields, forbiddenBeyond(nil, fields))
	forbid(specPath.Child("securityContext"), withSC, forbiddenBeyond(fields, withSC))
	forbid(root.Child("metadata", "annotations"), base, forbiddenBeyond(withSC, base))

	for _, l := range []struct {
		name string
		list []corev1.Container
	}{{"initContainers", t.Spec.InitContainers}, {"containers", t.Spec.Containers}} {
		for i, c := range l.list {
			one := podLevel.DeepCopy()
			if built := containerNamed(pod, c.Name); built != nil {
				c = *built // as the operator completes it
			}
			one.Containers = []corev1.Container{c}
			got := evaluatePodSecurity(level, &pod.ObjectMeta, one)
			forbid(specPath.Child(l.name).Index(i), got, forbiddenBeyond(base, got))
		}
	}
	for i, v := range t.Spec.Volumes {
		one := podLevel.DeepCopy()
		one.Volumes = []corev1.Volume{v}
		got := evaluatePodSecurity(level, &pod.ObjectMeta, one)
		forbid(specPath.Child("volumes").Index(i), got, forbiddenBeyond(base, got))
	}
	// A failure of the whole pod that no part brings in alone (the parts
	// only fail together) is named by the template as a whole.
	var rest []int
	for i, r := range whole {
		if !r.Allowed && !named[i] {
			rest = append(rest, i)
		}
	}
	forbid(root, whole, rest)
	return errs
}

// without returns cs less the container of a name.
func without(cs []corev1.Container, name string) []corev1.Container {
	var out []corev1.Container
	for _, c := range cs {
		if c.Name != name {
			out = append(out, c)
		}
	}
	return out
}

// containerNamed finds a container (or init container) of pod by name.
func containerNamed(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// serviceAccountErrors refuses a ServiceAccount of spec.podTemplate other
// than the namespace's default, unless it carries
// AnnotationAllowedForPodTemplate: "true". Both fields that name it are
// read (serviceAccount is the deprecated alias the API server falls back
// on). The ServiceAccount is read from the API server, not a cache (the
// operator watches no ServiceAccounts). An error is one of reading.
func (r *SummaIndexReconciler) serviceAccountErrors(ctx context.Context, index *summav1.SummaIndex) (field.ErrorList, error) {
	if _, ok := r.Options.PodTemplatePolicy.level(); !ok || index.Spec.PodTemplate == nil {
		return nil, nil
	}
	s := index.Spec.PodTemplate.Spec
	root := field.NewPath("spec", "podTemplate", "spec")
	var errs field.ErrorList
	for _, f := range []struct{ name, value string }{{"serviceAccountName", s.ServiceAccountName}, {"serviceAccount", s.DeprecatedServiceAccount}} {
		if f.value == "" || f.value == defaultServiceAccount {
			continue
		}
		if f.name == "serviceAccount" && f.value == s.ServiceAccountName {
			continue // checked once
		}
		sa := &corev1.ServiceAccount{}
		reader := client.Reader(r.Client)
		if r.APIReader != nil {
			reader = r.APIReader
		}
		err := reader.Get(ctx, client.ObjectKey{Namespace: index.Namespace, Name: f.value}, sa)
		switch {
		case apierrors.IsNotFound(err):
			errs = append(errs, field.Invalid(root.Child(f.name), f.value,
				fmt.Sprintf("no ServiceAccount %s in namespace %s: a pod template may run as the namespace's default ServiceAccount, or one annotated %s: \"true\"",
					f.value, index.Namespace, AnnotationAllowedForPodTemplate)))
		case err != nil:
			return nil, fmt.Errorf("read ServiceAccount %s of spec.podTemplate: %w", f.value, err)
		case sa.Annotations[AnnotationAllowedForPodTemplate] != "true":
			errs = append(errs, field.Forbidden(root.Child(f.name),
				fmt.Sprintf("ServiceAccount %s is not allowed for pod templates: only the namespace's default ServiceAccount, or one annotated %s: \"true\", may run a SummaIndex's pods",
					f.value, AnnotationAllowedForPodTemplate)))
		}
	}
	return errs, nil
}

// podTemplatePolicyCheck applies the pod template policy to pod, the
// engine pod the operator would create: its ServiceAccount, then its Pod
// Security. A refusal is a failure with reason InvalidPodTemplate.
func (r *SummaIndexReconciler) podTemplatePolicyCheck(ctx context.Context, index *summav1.SummaIndex, pod *corev1.Pod) error {
	errs, err := r.serviceAccountErrors(ctx, index)
	if err != nil {
		return failed(ReasonPodFailed, err)
	}
	errs = append(errs, podSecurityErrors(r.Options.PodTemplatePolicy, index, pod)...)
	if len(errs) == 0 {
		return nil
	}
	return failed(ReasonInvalidPodTemplate, fmt.Errorf("the operator's pod template policy %q refuses spec.podTemplate: %w",
		string(r.Options.PodTemplatePolicy), errs.ToAggregate()))
}

// jobServiceAccountRefusal is why the doctor and backup Jobs, which run
// under the template's ServiceAccount (jobScheduling), may not run, or ""
// when they may. Checked before a doctor run stops the engine, and again
// before each Job is created.
func (r *SummaIndexReconciler) jobServiceAccountRefusal(ctx context.Context, index *summav1.SummaIndex) (string, error) {
	errs, err := r.serviceAccountErrors(ctx, index)
	if err != nil || len(errs) == 0 {
		return "", err
	}
	return fmt.Sprintf("the operator's pod template policy %q refuses the Jobs' ServiceAccount: %v",
		string(r.Options.PodTemplatePolicy), errs.ToAggregate()), nil
}

// UnrestrictedPodTemplateWarning is logged at start under
// --pod-template-policy=unrestricted.
const UnrestrictedPodTemplateWarning = "--pod-template-policy=unrestricted: whoever may create or edit a SummaIndex may run " +
	"any pod its namespace admits (privileged containers, host namespaces, hostPath volumes, any ServiceAccount of the namespace) through spec.podTemplate"
