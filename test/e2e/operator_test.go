package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// operatorImage is the image of the operator's Deployment.
func operatorImage() string {
	GinkgoHelper()
	return strings.TrimSpace(kubectl("-n", "summa-system", "get", "deployment/summa-operator",
		"-o", "jsonpath={.spec.template.spec.containers[?(@.name==\"manager\")].image}"))
}

// setOperatorImage rolls the operator's Deployment to image and waits.
func setOperatorImage(image string) {
	GinkgoHelper()
	kubectl("-n", "summa-system", "set", "image", "deployment/summa-operator", "manager="+image)
	kubectl("-n", "summa-system", "rollout", "status", "deployment/summa-operator", "--timeout=180s")
}

// eventReasons lists the reasons of the events about a SummaIndex.
func eventReasons(name string) []string {
	GinkgoHelper()
	list := &corev1.EventList{}
	Expect(k8s.List(ctx, list, client.InNamespace(testNamespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.InvolvedObject.Kind == "SummaIndex" {
			out = append(out, e.Reason)
		}
	}
	return out
}

// setOperatorArg sets the operator container's command-line flag (the
// argument "--flag=..." that config/ states) to value, and waits for the
// rollout. The Deployment states every default as a flag, and the
// command line wins over SUMMA_* variables, so a flag is what changes it.
func setOperatorArg(flag, value string) {
	GinkgoHelper()
	args := strings.Fields(kubectl("-n", "summa-system", "get", "deployment/summa-operator",
		"-o", `jsonpath={range .spec.template.spec.containers[?(@.name=="manager")].args[*]}{@}{"\n"}{end}`))
	i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, flag+"=") })
	Expect(i).To(BeNumerically(">=", 0), "the operator has no %s argument: %v", flag, args)
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/args/%d","value":%q}]`, i, flag+"="+value)
	kubectl("-n", "summa-system", "patch", "deployment/summa-operator", "--type=json", "-p", patch)
	kubectl("-n", "summa-system", "rollout", "status", "deployment/summa-operator", "--timeout=180s")
}

var _ = Describe("Operator hardening on a real kubelet", func() {
	It("11a. an operator upgrade (new operator image, same spec) restarts no engine", func() {
		next := os.Getenv("SUMMA_E2E_NEXT_OPERATOR_IMG")
		if next == "" {
			Skip("SUMMA_E2E_NEXT_OPERATOR_IMG is not set (hack/e2e.sh builds it)")
		}
		createReady("e2e-upgrade", nil)
		pod, err := enginePod("e2e-upgrade")
		Expect(err).NotTo(HaveOccurred())
		ingest("e2e-upgrade", 0, 40)
		commit("e2e-upgrade")

		old := operatorImage()
		setOperatorImage(next)
		DeferCleanup(func() { setOperatorImage(old) })
		Eventually(func() string {
			out, _ := kubectlOut("-n", "summa-system", "logs", "deployment/summa-operator")
			return out
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(ContainSubstring("v-e2e-next"),
			"the new operator version is not the one running")

		// The new operator works: it follows what the engine reports...
		ingest("e2e-upgrade", 40, 70)
		commit("e2e-upgrade")
		Eventually(func() int64 { return getIndex("e2e-upgrade").Status.Documents }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeEquivalentTo(70))
		// ...through more than one resync period (30 s), without
		// restarting the engine.
		Consistently(func(g Gomega) {
			p, err := enginePod("e2e-upgrade")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.UID).To(Equal(pod.UID), "the upgraded operator restarted the engine")
			g.Expect(p.DeletionTimestamp).To(BeNil())
		}).WithTimeout(40 * time.Second).WithPolling(time.Second).Should(Succeed())
		x := getIndex("e2e-upgrade")
		Expect(x.IsReady()).To(BeTrue())
		Expect(x.Status.UpdateRevision).To(Equal(x.Status.CurrentRevision))
		Expect(eventReasons("e2e-upgrade")).NotTo(ContainElement("Draining"))
	})

	It("11b. a spec change across 5 indexes restarts them at most --max-concurrent-restarts (2) at a time, each drained", func() {
		names := []string{"e2e-roll-1", "e2e-roll-2", "e2e-roll-3", "e2e-roll-4", "e2e-roll-5"}
		for _, n := range names {
			Expect(k8s.Create(ctx, newIndex(n, nil))).To(Succeed())
		}
		uids := map[string]string{}
		for i, n := range names {
			waitReady(n)
			ingest(n, 0, 50+i) // accepted, not committed: each drain commits them
			p, err := enginePod(n)
			Expect(err).NotTo(HaveOccurred())
			uids[n] = string(p.UID)
		}

		var mu sync.Mutex
		most, queued := 0, false
		watch, cancel := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(watched)
			for watch.Err() == nil {
				list := &summav1.SummaIndexList{}
				if err := k8s.List(watch, list, client.InNamespace(testNamespace)); err == nil {
					n := 0
					mu.Lock()
					for i := range list.Items {
						y := &list.Items[i]
						if !strings.HasPrefix(y.Name, "e2e-roll-") {
							continue
						}
						if y.Status.Phase == summav1.PhaseDraining || y.Status.Phase == summav1.PhaseRestarting {
							n++
						}
						for _, c := range y.Status.Conditions {
							if c.Type == summav1.ConditionProgressing && c.Reason == "RestartQueued" {
								queued = true
							}
						}
					}
					most = max(most, n)
					mu.Unlock()
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		for _, n := range names {
			updateIndex(n, func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = ptr.To[int32](1) })
		}
		for _, n := range names {
			Eventually(func(g Gomega) {
				p, err := enginePod(n)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(p.UID)).NotTo(Equal(uids[n]))
				g.Expect(getIndex(n).IsReady()).To(BeTrue())
			}).WithTimeout(2 * readyTimeout).WithPolling(poll).Should(Succeed())
		}
		cancel()
		<-watched
		mu.Lock()
		figure("restart budget: at most %d of %d indexes restarting at once (--max-concurrent-restarts 2)", most, len(names))
		Expect(most).To(BeNumerically("<=", 2), "more engines restarted at once than the budget")
		Expect(queued).To(BeTrue(), "no index waited for a restart slot")
		mu.Unlock()
		for i, n := range names {
			Expect(eventReasons(n)).To(ContainElement("Draining"), "%s restarted without a drain", n)
			expectAll(n, 0, 50+i)
		}
		for _, n := range names {
			Expect(k8s.Delete(ctx, getIndex(n))).To(Succeed())
		}
	})

	It("11c. shows a volume expansion the storage class refuses in status, while suspend still works", func() {
		// The local cluster's class (host-path) does not allow expansion.
		createReady("e2e-cramped", func(x *summav1.SummaIndex) { x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete })
		ingest("e2e-cramped", 0, 30)
		updateIndex("e2e-cramped", func(x *summav1.SummaIndex) { x.Spec.Storage.Size = resource.MustParse("2Gi") })
		Eventually(func(g Gomega) {
			x := getIndex("e2e-cramped")
			var degraded *metav1.Condition
			for i := range x.Status.Conditions {
				if x.Status.Conditions[i].Type == summav1.ConditionDegraded {
					degraded = &x.Status.Conditions[i]
				}
			}
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(degraded.Reason).To(Equal("VolumeExpansionRefused"))
			g.Expect(degraded.Message).To(ContainSubstring("allowVolumeExpansion"))
			g.Expect(x.Status.Volume).NotTo(BeNil())
			g.Expect(x.Status.Volume.Resize).To(Equal(summav1.VolumeResizeRefused))
			g.Expect(x.Status.Message).To(ContainSubstring("VolumeExpansionRefused"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(getIndex("e2e-cramped").IsReady()).To(BeTrue(), "the engine keeps serving on the old size")

		updateIndex("e2e-cramped", func(x *summav1.SummaIndex) { x.Spec.Suspend = true })
		Eventually(func(g Gomega) {
			g.Expect(gone(&corev1.Pod{}, "e2e-cramped-engine")).To(BeTrue())
			x := getIndex("e2e-cramped")
			g.Expect(x.Status.Phase).To(Equal(summav1.PhaseSuspended))
			g.Expect(x.Status.Volume.Resize).To(Equal(summav1.VolumeResizeRefused))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		updateIndex("e2e-cramped", func(x *summav1.SummaIndex) { x.Spec.Suspend = false })
		waitReady("e2e-cramped")
		expectAll("e2e-cramped", 0, 30)
		Expect(k8s.Delete(ctx, getIndex("e2e-cramped"))).To(Succeed())
	})

	It("13. refuses a privileged app container by default, and runs it with --pod-template-policy=unrestricted", func() {
		// The test namespace enforces no Pod Security level: only the
		// operator's own policy stands between the template and the node.
		privileged := func(x *summav1.SummaIndex) {
			x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete
			x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "summa.dev/pause:1", ImagePullPolicy: corev1.PullIfNotPresent,
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			}}}}
		}
		Expect(k8s.Create(ctx, newIndex("e2e-privileged", privileged))).To(Succeed())
		Eventually(func(g Gomega) {
			x := getIndex("e2e-privileged")
			var degraded *metav1.Condition
			for i := range x.Status.Conditions {
				if x.Status.Conditions[i].Type == summav1.ConditionDegraded {
					degraded = &x.Status.Conditions[i]
				}
			}
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(degraded.Reason).To(Equal("InvalidPodTemplate"))
			g.Expect(degraded.Message).To(ContainSubstring("spec.podTemplate.spec.containers[0]"))
			g.Expect(degraded.Message).To(ContainSubstring("securityContext.privileged=true"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(gone(&corev1.Pod{}, "e2e-privileged-engine")).To(BeTrue(), "the refused pod was created")

		By("running the operator with --pod-template-policy=unrestricted")
		setOperatorArg("--pod-template-policy", "unrestricted")
		DeferCleanup(func() { setOperatorArg("--pod-template-policy", "baseline") })
		waitReady("e2e-privileged")
		pod, err := enginePod("e2e-privileged")
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.Spec.Containers[0].SecurityContext.Privileged).To(HaveValue(BeTrue()))
		Expect(k8s.Delete(ctx, getIndex("e2e-privileged"))).To(Succeed())
	})
})
