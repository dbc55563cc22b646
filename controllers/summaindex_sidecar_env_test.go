package controllers

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// neverReadyApp is an app container whose readiness probe never passes:
// it probes a port no process of the pod listens on.
func neverReadyApp() corev1.Container {
	return corev1.Container{Name: "app", Image: "busybox:stable", Command: []string{"sleep", "infinity"},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9)}}}}
}

// containerReady is the readiness of a container (or init container) of
// pod, by name.
func containerReady(pod *corev1.Pod, name string) bool {
	for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if cs.Name == name {
			return cs.Ready
		}
	}
	return false
}

var _ = Describe("The engine as a native sidecar", func() {
	It("creates the index and is Ready while an app container never becomes ready", func() {
		// Gated on the pod's Ready condition, this index would never be
		// Ready: the pod waits for the app, and an app that waits for the
		// index waits forever.
		createReady("patient", func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{neverReadyApp()}}}
		})
		pod, err := enginePodOf("patient")
		Expect(err).NotTo(HaveOccurred())
		Expect(containerReady(pod, EngineContainerName)).To(BeTrue())
		Expect(containerReady(pod, "app")).To(BeFalse())
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady {
				Expect(c.Status).To(Equal(corev1.ConditionFalse), "the pod waits for its app")
			}
		}
		ingest("patient", 0, 20)
		commit("patient")
		Eventually(func() int64 { return getIndex("patient").Status.Documents }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeEquivalentTo(20))

		By("giving the app its stop time before the engine's deadline")
		x := getIndex("patient")
		grace := x.Status.TerminationGracePeriodSeconds
		Expect(*pod.Spec.TerminationGracePeriodSeconds).To(Equal(grace))
		Expect(x.Status.ShutdownDeadlineSeconds).To(Equal(engineShutdownDeadline(x, grace)))
		Expect(x.Status.ShutdownDeadlineSeconds + defaultAppShutdownSeconds).To(BeNumerically("<", grace))
		Expect(pod.Spec.InitContainers).To(ContainElement(HaveField("Args",
			ContainElement(fmt.Sprintf("--shutdown-deadline=%ds", x.Status.ShutdownDeadlineSeconds)))))

		By("routing the Service to the engine whatever the app's readiness")
		svc := &corev1.Service{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: x.ServiceName()}, svc)).To(Succeed())
		Expect(svc.Spec.PublishNotReadyAddresses).To(BeTrue())
		Expect(svc.Spec.Ports[0].TargetPort).To(Equal(intstr.FromInt32(EnginePort)))
		deleteAndWaitGone("patient")
	})

	It("keeps the running engine when the pod of a new podTemplate is refused, and restarts once it is fixed", func() {
		createReady("held", nil)
		old := podUID("held")
		updateIndex("held", func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "Not_A_DNS_Label", Image: "app:1"},
			}}}
		})
		Eventually(func(g Gomega) {
			c := condition("held", summav1.ConditionDegraded)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(ReasonInvalidPodTemplate))
			g.Expect(c.Message).To(ContainSubstring("Not_A_DNS_Label"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(podUID("held")).To(Equal(old), "the running pod was replaced by one the API server refuses")
		Expect(eventReasons("held")).NotTo(ContainElement("Draining"))
		Expect(getIndex("held").IsReady()).To(BeTrue(), "the running engine still serves")
		Expect(warningReasons("held")).To(ContainElement(ReasonInvalidPodTemplate))

		updateIndex("held", func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate.Spec.Containers[0].Name = "app"
		})
		Eventually(func(g Gomega) {
			g.Expect(podUID("held")).NotTo(BeElementOf("", old))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		waitReady("held")
		Eventually(func() metav1.ConditionStatus { return condition("held", summav1.ConditionDegraded).Status }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(Equal(metav1.ConditionFalse))
		deleteAndWaitGone("held")
	})
})
