package e2e

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// annotationRestartedAt is the SummaIndex annotation whose new value is
// one rolling restart (kubectl summa restart sets it).
const annotationRestartedAt = "summa.dev/restartedAt"

// loadTotals is a line of netprobe -load.
type loadTotals struct {
	OK        int64    `json:"ok"`
	Failed    int64    `json:"failed"`
	LastError string   `json:"lastError"`
	Recent    []string `json:"recent"`
}

var _ = Describe("Read followers", func() {
	It("15. keep every search answered through the read Service during an eviction the PDB limits to one pod and a rolling restart, the leader last", func() {
		img := os.Getenv("SUMMA_E2E_NETPROBE_IMG")
		if img == "" {
			Expect(mode).NotTo(Equal("local"), "make e2e sets SUMMA_E2E_NETPROBE_IMG")
			Skip("SUMMA_E2E_NETPROBE_IMG is not set (the probe image is built for the local cluster)")
		}
		const name, docs = "e2e-replicas", 300
		createReady(name, func(x *summav1.SummaIndex) { x.Spec.Replicas = ptr.To[int32](2) })
		ingest(name, 0, docs)
		commit(name)
		leaderGen := waitFollowersCaughtUp(name, 2)
		GinkgoWriter.Printf("leader generation %d on both followers\n", leaderGen)
		x := getIndex(name)
		Expect(x.Status.Access).NotTo(BeNil())
		Expect(x.Status.Access.TLSSecret).NotTo(BeEmpty(), "the spec searches over HTTPS")

		By("followers copy from the leader by its Service name, not a pod IP")
		for k := 1; k <= 2; k++ {
			p := servingPods(name)[x.FollowerPodName(k)]
			Expect(p).NotTo(BeNil())
			Expect(p.Spec.Containers[0].Args).To(ContainElement("--follow=https://"+x.ServiceHost()+":8082"), "%s", p.Name)
		}

		By("a client pod searching through the read Service by name, back to back")
		load := loadPod(x, img, docs)
		Expect(k8s.Create(ctx, load)).To(Succeed())
		DeferCleanup(func() { _ = k8s.Delete(ctx, load, client.GracePeriodSeconds(0)) })
		Eventually(func(g Gomega) {
			g.Expect(loadState(g, load).OK).To(BeNumerically(">=", 50))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("a node-style eviction of a follower; the PDB refuses a second one while it is not back")
		pods := servingPods(name)
		Expect(pods).To(HaveLen(3))
		Eventually(func(g Gomega) {
			pdb := &policyv1.PodDisruptionBudget{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: x.PodDisruptionBudgetName()}, pdb)).To(Succeed())
			g.Expect(pdb.Status.DisruptionsAllowed).To(Equal(int32(1)))
		}).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
		evicted := pods[x.FollowerPodName(1)]
		Expect(evict(evicted)).To(Succeed())
		err := evict(pods[x.EnginePodName()])
		Expect(apierrors.IsTooManyRequests(err)).To(BeTrue(), "the second eviction must be refused with 429 while the first pod is not back; got %v", err)
		Eventually(func(g Gomega) {
			now := servingPods(name)
			p := now[evicted.Name]
			g.Expect(p).NotTo(BeNil())
			g.Expect(p.UID).NotTo(Equal(evicted.UID))
			g.Expect(podReady(p)).To(BeTrue())
			g.Expect(getIndex(name).Status.Replicas.Ready).To(Equal(int32(2)))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		waitFollowersCaughtUp(name, 2)

		By("a rolling restart (restartedAt): followers one at a time, the leader last")
		before := servingPods(name)
		Expect(before).To(HaveLen(3))
		goneAt := map[string]time.Time{}
		updateIndex(name, func(x *summav1.SummaIndex) {
			if x.Annotations == nil {
				x.Annotations = map[string]string{}
			}
			x.Annotations[annotationRestartedAt] = time.Now().UTC().Format(time.RFC3339)
		})
		Eventually(func(g Gomega) {
			now := servingPods(name)
			for n, old := range before {
				p := now[n]
				if _, seen := goneAt[n]; !seen && (p == nil || p.UID != old.UID || p.DeletionTimestamp != nil) {
					goneAt[n] = time.Now()
				}
			}
			for n, old := range before {
				p := now[n]
				g.Expect(p).NotTo(BeNil(), "%s is back", n)
				g.Expect(p.UID).NotTo(Equal(old.UID), "%s replaced", n)
				g.Expect(podReady(p)).To(BeTrue(), "%s ready", n)
			}
			x := getIndex(name)
			g.Expect(x.IsReady()).To(BeTrue())
			g.Expect(x.Status.Replicas.Ready).To(Equal(int32(2)))
		}).WithTimeout(2 * readyTimeout).WithPolling(poll).Should(Succeed())
		leader := goneAt[x.EnginePodName()]
		for n, t := range goneAt {
			if n != x.EnginePodName() {
				Expect(t.Before(leader)).To(BeTrue(), "follower %s went before the leader", n)
			}
		}
		waitFollowersCaughtUp(name, 2)
		// A few more seconds of searches on the new pods.
		time.Sleep(3 * time.Second)

		var totals loadTotals
		Eventually(func(g Gomega) { totals = loadState(g, load) }).WithTimeout(time.Minute).Should(Succeed())
		figure("searches failed during rolling restart: %d (of %d, through %s during one eviction and a rolling restart of a leader and 2 followers)",
			totals.Failed, totals.OK+totals.Failed, x.ReadServiceName())
		Expect(totals.Failed).To(BeZero(), "searches failed; the last ones:\n%s", strings.Join(totals.Recent, "\n"))
		Expect(totals.OK).To(BeNumerically(">", 100))
		Expect(k8s.Delete(ctx, x)).To(Succeed())
	})
})

// servingPods are the index's pods that answer searches (leader and
// followers), by name.
func servingPods(name string) map[string]*corev1.Pod {
	GinkgoHelper()
	list := &corev1.PodList{}
	Expect(k8s.List(ctx, list, client.InNamespace(testNamespace),
		client.MatchingLabels{summav1.LabelIndex: name, summav1.LabelServing: "true"})).To(Succeed())
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// podReady reports the pod's Ready condition.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil
		}
	}
	return false
}

// evict asks the Eviction API to evict the pod, as a node drain does.
func evict(p *corev1.Pod) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
	return k8s.SubResource("eviction").Create(ctx, p, ev)
}

// waitFollowersCaughtUp waits until n followers report the leader's
// current generation, and returns it.
func waitFollowersCaughtUp(name string, n int) uint64 {
	GinkgoHelper()
	st, err := engine(name).GetIndex(ctx, name)
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		r := getIndex(name).Status.Replicas
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Followers).To(HaveLen(n))
		for _, f := range r.Followers {
			g.Expect(f.Ready).To(BeTrue(), "%s ready", f.Name)
			g.Expect(f.Generation).To(BeNumerically(">=", int64(st.Generation)), "%s caught up", f.Name)
		}
	}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	return st.Generation
}

// loadState reads the running totals the load pod printed last.
func loadState(g Gomega, p *corev1.Pod) loadTotals {
	cur := &corev1.Pod{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, cur)).To(Succeed())
	if cur.Status.Phase == corev1.PodFailed || cur.Status.Phase == corev1.PodSucceeded {
		logs, _ := kubectlOut("-n", testNamespace, "logs", p.Name)
		StopTrying("the load pod stopped; its logs:\n" + logs).Now()
	}
	out, err := kubectlOut("-n", testNamespace, "logs", p.Name, "--tail=1", "-c", "netprobe")
	g.Expect(err).NotTo(HaveOccurred(), out)
	var t loadTotals
	g.Expect(json.Unmarshal([]byte(strings.TrimSpace(out)), &t)).To(Succeed(), out)
	return t
}

// loadPod runs netprobe -load against x's read Service by name, with the
// CA and read token a client of the index mounts.
func loadPod(x *summav1.SummaIndex, img string, expect int) *corev1.Pod {
	p := netprobePod(x, img)
	p.Name = x.Name + "-load"
	c := &p.Spec.Containers[0]
	c.Args = []string{"-load", "-expect", strconv.Itoa(expect),
		"-engine", "https://" + x.ReadServiceName() + "." + x.Namespace + ".svc:8082",
		"-index", x.Name, "-query", "tag:all", "-ca", "/ca/" + summav1.CACertKey,
		"-token-file", "/creds/" + summav1.ReadTokenKey}
	return p
}
