package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// The pod template policy on a real API server: what baseline forbids is
// refused before any pod exists, named by its path, and a running engine
// keeps running when a change asks for it.

// expectPolicyRefusal waits until the index is Degraded with reason
// InvalidPodTemplate and a message holding each of want, and checks that
// no engine pod exists.
func expectPolicyRefusal(name string, want ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := condition(name, summav1.ConditionDegraded)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(ReasonInvalidPodTemplate))
		for _, w := range want {
			g.Expect(c.Message).To(ContainSubstring(w))
		}
	}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	Consistently(func() bool {
		_, err := enginePodOf(name)
		return apierrors.IsNotFound(err)
	}).WithTimeout(time.Second).WithPolling(poll).Should(BeTrue(), "an engine pod was created")
	Expect(warningReasons(name)).To(ContainElement(ReasonInvalidPodTemplate))
}

// withPodTemplatePolicy runs the operator under a policy for the rest of
// the spec, and the default one after it.
func withPodTemplatePolicy(p PodTemplatePolicy) {
	podTemplatePolicy = p
	restartOperator()
	DeferCleanup(func() {
		podTemplatePolicy = ""
		restartOperator()
	})
}

// appPodTemplate is a pod template of one app container, changed by
// mutate.
func appPodTemplate(mutate func(*corev1.PodSpec)) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", Image: "busybox:stable", Command: []string{"sleep", "infinity"}},
	}}}
	if mutate != nil {
		mutate(&t.Spec)
	}
	return t
}

var _ = Describe("The pod template policy", func() {
	DescribeTable("refuses, by default, what Pod Security baseline forbids, before any pod exists",
		func(name string, mutate func(*corev1.PodSpec), want ...string) {
			Expect(k8sClient.Create(ctx, specIndex(name, func(x *summav1.SummaIndex) {
				x.Spec.PodTemplate = appPodTemplate(mutate)
			}))).To(Succeed())
			expectPolicyRefusal(name, append(want, `pod template policy "baseline"`)...)
			deleteAndWaitGone(name)
		},
		Entry("a privileged container", "psa-privileged", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}, "spec.podTemplate.spec.containers[0]: Forbidden", "securityContext.privileged=true"),
		Entry("a hostPath volume", "psa-hostpath", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "root", MountPath: "/host"}}
		}, "spec.podTemplate.spec.volumes[0]: Forbidden", `hostPath volumes (volume "root")`),
		Entry("hostNetwork", "psa-hostnetwork", func(s *corev1.PodSpec) { s.HostNetwork = true },
			"spec.podTemplate.spec: Forbidden", "hostNetwork=true"),
		Entry("hostPID", "psa-hostpid", func(s *corev1.PodSpec) { s.HostPID = true },
			"spec.podTemplate.spec: Forbidden", "hostPID=true"),
		Entry("an added SYS_ADMIN", "psa-sysadmin", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
		}, "spec.podTemplate.spec.containers[0]: Forbidden", `"SYS_ADMIN"`),
		Entry("a hostPort", "psa-hostport", func(s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
		}, "spec.podTemplate.spec.containers[0]: Forbidden", "hostPort"),
		Entry("an unsafe sysctl", "psa-sysctl", func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}}
		}, "spec.podTemplate.spec.securityContext: Forbidden", "kernel.msgmax"),
		Entry("a ServiceAccount without the annotation", "psa-serviceaccount", func(s *corev1.PodSpec) {
			s.ServiceAccountName = "builder" // made below, without the annotation
		}, "spec.podTemplate.spec.serviceAccountName: Forbidden", "ServiceAccount builder is not allowed", allowedAnnotationNote),
	)

	BeforeEach(func() {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: specNamespace, Name: "builder"}}
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, sa))).To(Succeed())
	})

	It("runs a baseline-clean template under a ServiceAccount once the namespace allows it", func() {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: specNamespace, Name: "search-app"}}
		Expect(k8sClient.Create(ctx, sa)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, sa))).To(Succeed()) })
		Expect(k8sClient.Create(ctx, specIndex("psa-allowed", func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate = appPodTemplate(func(s *corev1.PodSpec) {
				s.ServiceAccountName = "search-app"
				s.Containers[0].Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}
				s.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}}}
				s.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
				s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
			})
		}))).To(Succeed())
		expectPolicyRefusal("psa-allowed", "spec.podTemplate.spec.serviceAccountName: Forbidden", "ServiceAccount search-app")

		By("annotating the ServiceAccount")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(sa), sa)).To(Succeed())
		sa.Annotations = map[string]string{AnnotationAllowedForPodTemplate: "true"}
		Expect(k8sClient.Update(ctx, sa)).To(Succeed())
		waitReady("psa-allowed")
		pod, err := enginePodOf("psa-allowed")
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.Spec.ServiceAccountName).To(Equal("search-app"))
		Eventually(func() metav1.ConditionStatus { return condition("psa-allowed", summav1.ConditionDegraded).Status }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(Equal(metav1.ConditionFalse))
		deleteAndWaitGone("psa-allowed")
	})

	It("keeps a running engine when a change asks for what baseline forbids, and restarts once it is fixed", func() {
		createReady("psa-held", func(x *summav1.SummaIndex) { x.Spec.PodTemplate = appPodTemplate(nil) })
		old := podUID("psa-held")
		updateIndex("psa-held", func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			x.Spec.PodTemplate.Spec.HostPID = true
		})
		Eventually(func(g Gomega) {
			c := condition("psa-held", summav1.ConditionDegraded)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(ReasonInvalidPodTemplate))
			g.Expect(c.Message).To(ContainSubstring("spec.podTemplate.spec.containers[0]: Forbidden"))
			g.Expect(c.Message).To(ContainSubstring("hostPID=true"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Consistently(func() string { return podUID("psa-held") }).WithTimeout(2 * time.Second).WithPolling(poll).Should(Equal(old))
		Expect(eventReasons("psa-held")).NotTo(ContainElement("Draining"))
		Expect(getIndex("psa-held").IsReady()).To(BeTrue(), "the running engine still serves")

		updateIndex("psa-held", func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate.Spec.Containers[0].SecurityContext = nil
			x.Spec.PodTemplate.Spec.HostPID = false
			x.Spec.PodTemplate.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "CHANGED", Value: "1"}}
		})
		Eventually(func(g Gomega) {
			g.Expect(podUID("psa-held")).NotTo(BeElementOf("", old))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		waitReady("psa-held")
		deleteAndWaitGone("psa-held")
	})

	It("fails a doctor run whose Jobs would run under a ServiceAccount not allowed, before the engine stops", func() {
		createReady("psa-doctor", nil)
		old := podUID("psa-doctor")
		updateIndex("psa-doctor", func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: "builder"}}
			x.Spec.Doctor = summav1.DoctorSpec{RequestID: "sa", Backup: summav1.BackupNone}
		})
		Eventually(func(g Gomega) {
			d := getIndex("psa-doctor").Status.Doctor
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.RequestID).To(Equal("sa"))
			g.Expect(d.Phase).To(Equal(summav1.DoctorPhaseFailed))
			g.Expect(d.Message).To(ContainSubstring("spec.podTemplate.spec.serviceAccountName: Forbidden"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(eventReasons("psa-doctor")).NotTo(ContainElement("Draining"))
		Expect(eventReasons("psa-doctor")).NotTo(ContainElement("JobCreated"))
		// The engine pod of the new spec is refused too: the running one
		// is kept.
		Eventually(func(g Gomega) {
			c := condition("psa-doctor", summav1.ConditionDegraded)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(ContainSubstring("ServiceAccount builder is not allowed"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(podUID("psa-doctor")).To(Equal(old))
		deleteAndWaitGone("psa-doctor")
	})

	It("with --pod-template-policy=restricted, refuses an app container that restricted forbids and runs a hardened one", func() {
		withPodTemplatePolicy(PodTemplatePolicyRestricted)
		Expect(k8sClient.Create(ctx, specIndex("psa-restricted", func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate = appPodTemplate(nil)
		}))).To(Succeed())
		expectPolicyRefusal("psa-restricted", `pod template policy "restricted"`, "spec.podTemplate.spec.containers[0]: Forbidden",
			"allowPrivilegeEscalation", `Pod Security "restricted"`)
		updateIndex("psa-restricted", func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate.Spec.Containers[0].SecurityContext = restrictedContainer()
		})
		waitReady("psa-restricted")
		deleteAndWaitGone("psa-restricted")
	})

	It("with --pod-template-policy=unrestricted, creates what the namespace admits", func() {
		withPodTemplatePolicy(PodTemplatePolicyUnrestricted)
		createReady("psa-unrestricted", func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate = appPodTemplate(func(s *corev1.PodSpec) {
				s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
				s.ServiceAccountName = "builder"
			})
		})
		pod, err := enginePodOf("psa-unrestricted")
		Expect(err).NotTo(HaveOccurred())
		app := containerNamed(pod, "app")
		Expect(app).NotTo(BeNil())
		Expect(app.SecurityContext.Privileged).To(HaveValue(BeTrue()))
		deleteAndWaitGone("psa-unrestricted")
	})
})

// allowedAnnotationNote is how a refused ServiceAccount's message tells
// the way out.
const allowedAnnotationNote = AnnotationAllowedForPodTemplate + `: "true"`
