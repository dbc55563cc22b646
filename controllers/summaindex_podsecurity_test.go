package controllers

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	summav1 "github.com/summadev/summa/api/v1"
)

// policyTestPod is the engine pod of x as the operator builds it, with the
// volume-permissions init container (as the test operator runs).
func policyTestPod(x *summav1.SummaIndex, volumePermissions bool) *corev1.Pod {
	return desiredPod(x, podInputs{image: "summa-server:1", grace: 30, volumePermissions: volumePermissions})
}

// appTemplate is a pod template of one app container, changed by mutate.
func appTemplate(mutate func(*corev1.PodSpec)) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", Image: "app:1"},
	}}}
	if mutate != nil {
		mutate(&t.Spec)
	}
	return t
}

// hardenedApp is an app container that restricted admits on its own.
func hardenedApp(name string) corev1.Container {
	return corev1.Container{Name: name, Image: "app:1", SecurityContext: restrictedContainer()}
}

// forbiddenPodTemplates are the things baseline forbids, each with the
// path and a piece of the message that must name it.
var forbiddenPodTemplates = []struct {
	name   string
	mutate func(*corev1.PodSpec)
	path   string
	names  string
}{
	{"privileged", func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	}, "spec.podTemplate.spec.containers[0]", "securityContext.privileged=true"},
	{"hostPath", func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "cache"}, {Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	}, "spec.podTemplate.spec.volumes[1]", `hostPath volumes (volume "root")`},
	{"hostNetwork", func(s *corev1.PodSpec) { s.HostNetwork = true }, "spec.podTemplate.spec", "hostNetwork=true"},
	{"hostPID", func(s *corev1.PodSpec) { s.HostPID = true }, "spec.podTemplate.spec", "hostPID=true"},
	{"hostIPC", func(s *corev1.PodSpec) { s.HostIPC = true }, "spec.podTemplate.spec", "hostIPC=true"},
	{"added SYS_ADMIN", func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE", "SYS_ADMIN"}}}
	}, "spec.podTemplate.spec.containers[0]", `"SYS_ADMIN"`},
	{"hostPort", func(s *corev1.PodSpec) {
		s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 80}}
	}, "spec.podTemplate.spec.containers[0]", "hostPort"},
	{"unsafe sysctl", func(s *corev1.PodSpec) {
		s.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}}
	}, "spec.podTemplate.spec.securityContext", "kernel.msgmax"},
	{"procMount", func(s *corev1.PodSpec) {
		s.InitContainers = []corev1.Container{{Name: "setup", Image: "app:1", SecurityContext: &corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}}}
	}, "spec.podTemplate.spec.initContainers[0]", "procMount"},
	{"seccomp Unconfined", func(s *corev1.PodSpec) {
		s.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
	}, "spec.podTemplate.spec.securityContext", "seccompProfile"},
	{"AppArmor unconfined", func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}
	}, "spec.podTemplate.spec.containers[0]", `AppArmor profile type to "Unconfined"`},
	{"SELinux type", func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}
	}, "spec.podTemplate.spec.containers[0]", "spc_t"},
	{"Windows hostProcess", func(s *corev1.PodSpec) {
		s.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}}
		s.HostNetwork = true
	}, "spec.podTemplate.spec.securityContext", "hostProcess"},
}

func TestBaselineRefusesEachForbiddenFieldByItsPath(t *testing.T) {
	for _, c := range forbiddenPodTemplates {
		t.Run(c.name, func(t *testing.T) {
			x := podTestIndex()
			x.Spec.PodTemplate = appTemplate(c.mutate)
			errs := podSecurityErrors(PodTemplatePolicyBaseline, x, policyTestPod(x, true))
			if len(errs) == 0 {
				t.Fatal("baseline admits it")
			}
			got := errs.ToAggregate().Error()
			if !strings.Contains(got, c.path+": Forbidden: ") || !strings.Contains(got, c.names) {
				t.Errorf("errors do not name %s (%s):\n%s", c.path, c.names, got)
			}
			if !strings.Contains(got, `Pod Security "baseline"`) {
				t.Errorf("errors do not name the level:\n%s", got)
			}
			if errs := podSecurityErrors(PodTemplatePolicyUnrestricted, x, policyTestPod(x, true)); len(errs) != 0 {
				t.Errorf("unrestricted refuses it: %v", errs)
			}
		})
	}
}

func TestAppArmorAnnotationIsNamedAsAnAnnotation(t *testing.T) {
	x := podTestIndex()
	x.Spec.PodTemplate = appTemplate(nil)
	x.Spec.PodTemplate.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/engine": "unconfined"}
	got := podSecurityErrors(PodTemplatePolicyBaseline, x, policyTestPod(x, false)).ToAggregate()
	if got == nil || !strings.Contains(got.Error(), "spec.podTemplate.metadata.annotations: Forbidden") {
		t.Fatalf("an annotation that unconfines the engine: %v", got)
	}
}

func TestBaselineAdmitsAnOrdinaryTemplate(t *testing.T) {
	x := podTestIndex()
	x.Spec.PodTemplate = appTemplate(func(s *corev1.PodSpec) {
		s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
		s.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE", "CHOWN"}}}
		s.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		s.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}}}
		s.NodeSelector = map[string]string{"disk": "ssd"}
	})
	for _, vp := range []bool{false, true} {
		if errs := podSecurityErrors(PodTemplatePolicyBaseline, x, policyTestPod(x, vp)); len(errs) != 0 {
			t.Errorf("volumePermissions %v: baseline refuses an ordinary template: %v", vp, errs)
		}
	}
}

func TestRestrictedAsksMoreOfTheAppsAndNothingOfTheOperatorsContainers(t *testing.T) {
	x := podTestIndex()
	// The template's own pod securityContext replaces the operator's
	// (restrictedPod), so nothing makes the app non-root.
	x.Spec.PodTemplate = appTemplate(func(s *corev1.PodSpec) {
		s.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}
	})
	errs := podSecurityErrors(PodTemplatePolicyRestricted, x, policyTestPod(x, true))
	got := errs.ToAggregate()
	if got == nil {
		t.Fatal("restricted admits an app container that may run as root with every default capability")
	}
	for _, want := range []string{`spec.podTemplate.spec.containers[0]: Forbidden`, "allowPrivilegeEscalation", "runAsNonRoot", `Pod Security "restricted"`} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got.Error(), "engine") || strings.Contains(got.Error(), volumePermissionsName) {
		t.Errorf("the operator's containers are blamed:\n%s", got)
	}
	if errs := podSecurityErrors(PodTemplatePolicyBaseline, x, policyTestPod(x, true)); len(errs) != 0 {
		t.Errorf("baseline refuses it: %v", errs)
	}
	// A hardened app passes restricted, with or without the operator's
	// pod securityContext, and with the volume-permissions container.
	x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{hardenedApp("app")},
		InitContainers: []corev1.Container{hardenedApp("setup")}}}
	if errs := podSecurityErrors(PodTemplatePolicyRestricted, x, policyTestPod(x, true)); len(errs) != 0 {
		t.Errorf("restricted refuses a hardened app: %v", errs)
	}
	// So does a template of pod settings only.
	x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}}
	if errs := podSecurityErrors(PodTemplatePolicyRestricted, x, policyTestPod(x, true)); len(errs) != 0 {
		t.Errorf("restricted refuses a template of pod settings: %v", errs)
	}
}

// TestTheEnginePodMeetsRestricted: the pod the operator builds on its own
// (no template, with TLS and client access, and as a sidecar) passes Pod
// Security "restricted", as the API server would evaluate it. The
// volume-permissions init container is root by design and meets baseline.
func TestTheEnginePodMeetsRestricted(t *testing.T) {
	acc := access{known: true, credentialsSecret: "c", tlsSecret: "t", caPresent: true, hash: "h"}
	for _, c := range []struct {
		name     string
		template *corev1.PodTemplateSpec
	}{
		{"alone", nil},
		{"sidecar", &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{hardenedApp("app")}}}},
	} {
		x := podTestIndex()
		x.Spec.PodTemplate = c.template
		pod := desiredPod(x, podInputs{image: "summa-server:1", grace: 30, access: acc})
		restricted := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
		if r := policy.AggregateCheckResults(podSecurityEvaluator().EvaluatePod(restricted, &pod.ObjectMeta, &pod.Spec)); !r.Allowed {
			t.Errorf("%s: the engine pod fails restricted: %s", c.name, r.ForbiddenDetail())
		}
		withPrep := desiredPod(x, podInputs{image: "summa-server:1", grace: 30, access: acc, volumePermissions: true})
		baseline := psaapi.LevelVersion{Level: psaapi.LevelBaseline, Version: psaapi.LatestVersion()}
		if r := policy.AggregateCheckResults(podSecurityEvaluator().EvaluatePod(baseline, &withPrep.ObjectMeta, &withPrep.Spec)); !r.Allowed {
			t.Errorf("%s: the engine pod with volume permissions fails baseline: %s", c.name, r.ForbiddenDetail())
		}
	}
}

func TestParsePodTemplatePolicy(t *testing.T) {
	for _, p := range PodTemplatePolicies {
		if got, err := ParsePodTemplatePolicy(string(p)); err != nil || got != p {
			t.Errorf("%s: %v %v", p, got, err)
		}
	}
	for _, bad := range []string{"", "Baseline", "privileged", "none"} {
		if _, err := ParsePodTemplatePolicy(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if level, ok := PodTemplatePolicy("").level(); !ok || level != psaapi.LevelBaseline {
		t.Errorf("an unset policy is %q %v, want baseline", level, ok)
	}
}

func TestServiceAccountOfTheTemplate(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	sa := func(name string, annotations map[string]string) *corev1.ServiceAccount {
		return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: annotations}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		sa("default", nil),
		sa("search", map[string]string{AnnotationAllowedForPodTemplate: "true"}),
		sa("admin", nil),
		sa("half", map[string]string{AnnotationAllowedForPodTemplate: "yes"}),
	).Build()
	for _, tc := range []struct {
		policy     PodTemplatePolicy
		name, old  string
		wantErr    string
		wantsClean bool
	}{
		{PodTemplatePolicyBaseline, "", "", "", true},
		{PodTemplatePolicyBaseline, "default", "", "", true},
		{PodTemplatePolicyBaseline, "search", "", "", true},
		{PodTemplatePolicyRestricted, "search", "search", "", true},
		{PodTemplatePolicyBaseline, "admin", "", `spec.podTemplate.spec.serviceAccountName: Forbidden: ServiceAccount admin is not allowed`, false},
		{PodTemplatePolicyRestricted, "half", "", `spec.podTemplate.spec.serviceAccountName: Forbidden`, false},
		{PodTemplatePolicyBaseline, "", "admin", `spec.podTemplate.spec.serviceAccount: Forbidden`, false},
		{PodTemplatePolicyBaseline, "search", "admin", `spec.podTemplate.spec.serviceAccount: Forbidden`, false},
		{PodTemplatePolicyBaseline, "ghost", "", `spec.podTemplate.spec.serviceAccountName: Invalid value: "ghost": no ServiceAccount ghost in namespace ns`, false},
		{PodTemplatePolicyUnrestricted, "admin", "admin", "", true},
	} {
		r := &SummaIndexReconciler{Client: c, Options: Options{PodTemplatePolicy: tc.policy}}
		x := podTestIndex()
		x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: tc.name, DeprecatedServiceAccount: tc.old}}
		errs, err := r.serviceAccountErrors(context.Background(), x)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if tc.wantsClean {
			if len(errs) != 0 {
				t.Errorf("%+v: refused: %v", tc, errs)
			}
			continue
		}
		if got := errs.ToAggregate(); got == nil || !strings.Contains(got.Error(), tc.wantErr) {
			t.Errorf("%+v: errors %v, want %q", tc, got, tc.wantErr)
		}
	}
}

func TestPolicyCheckIsAnInvalidPodTemplateFailure(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	r := &SummaIndexReconciler{Client: fake.NewClientBuilder().WithScheme(scheme).Build()}
	r.defaults()
	x := podTestIndex()
	x.Spec.PodTemplate = appTemplate(func(s *corev1.PodSpec) {
		s.ServiceAccountName = "admin"
		s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	})
	err := r.podTemplatePolicyCheck(context.Background(), x, policyTestPod(x, false))
	if err == nil || failureReason(err) != ReasonInvalidPodTemplate {
		t.Fatalf("%v (reason %q), want %s", err, failureReason(err), ReasonInvalidPodTemplate)
	}
	for _, want := range []string{`pod template policy "baseline"`, "serviceAccountName", "containers[0]", "privileged"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func TestEveryFailureIsNamedOnce(t *testing.T) {
	x := podTestIndex()
	x.Spec.PodTemplate = appTemplate(func(s *corev1.PodSpec) {
		s.HostNetwork = true
		s.Containers = append(s.Containers, corev1.Container{Name: "agent", Image: "agent:1",
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			Ports:           []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100}}})
		s.Volumes = []corev1.Volume{{Name: "proc", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/proc"}}}}
	})
	errs := podSecurityErrors(PodTemplatePolicyBaseline, x, policyTestPod(x, true))
	got := errs.ToAggregate().Error()
	if len(errs) != 3 {
		t.Errorf("%d errors, want 3 (spec, containers[1], volumes[0]):\n%s", len(errs), got)
	}
	for _, want := range []string{
		"spec.podTemplate.spec: Forbidden: host namespaces (hostNetwork=true)",
		`spec.podTemplate.spec.containers[1]: Forbidden: hostPort (container "agent" uses hostPort 9100), privileged (container "agent" must not set securityContext.privileged=true)`,
		`spec.podTemplate.spec.volumes[0]: Forbidden: hostPath volumes (volume "proc")`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "containers[0]") {
		t.Errorf("the clean app container is blamed:\n%s", got)
	}
}
