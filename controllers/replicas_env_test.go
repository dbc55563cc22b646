package controllers

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// The read followers' specs. Followers run internal/testing/fakefollower (the
// real engine's --follow cannot reach the leader's Service name in
// envtest): it reports the replication state a spec writes into its
// volume, so these specs check the operator's objects, order and
// decisions; the leaders are real engines.

// withReplicas sets spec.replicas.
func withReplicas(n int32) func(*summav1.SummaIndex) {
	return func(x *summav1.SummaIndex) { x.Spec.Replicas = ptr.To(n) }
}

// podOf reads a pod of the spec namespace (nil when absent).
func podOf(name string) *corev1.Pod {
	GinkgoHelper()
	p := &corev1.Pod{}
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name}, p)
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	return p
}

// uidOf is the UID of a pod of the spec namespace ("" when absent: a pod
// between its deletion and its replacement).
func uidOf(name string) string {
	GinkgoHelper()
	if p := podOf(name); p != nil {
		return string(p.UID)
	}
	return ""
}

// claimOf reads a volume of the spec namespace (nil when absent).
func claimOf(name string) *corev1.PersistentVolumeClaim {
	GinkgoHelper()
	c := &corev1.PersistentVolumeClaim{}
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name}, c)
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	return c
}

// fakeFollower writes what a follower's fake engine reports.
func fakeFollower(claim string, st map[string]any) {
	GinkgoHelper()
	data, err := json.Marshal(st)
	Expect(err).NotTo(HaveOccurred())
	dir := kubelet.ClaimDir(specNamespace, claim)
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	tmp := filepath.Join(dir, "fake-follower.json.tmp")
	Expect(os.WriteFile(tmp, data, 0o644)).To(Succeed())
	Expect(os.Rename(tmp, filepath.Join(dir, "fake-follower.json"))).To(Succeed())
}

// waitReplicas waits until status.replicas shows ready/desired.
func waitReplicas(name string, ready, desired int32) *summav1.SummaIndex {
	GinkgoHelper()
	var x *summav1.SummaIndex
	Eventually(func(g Gomega) {
		x = getIndex(name)
		g.Expect(x.Status.Replicas).NotTo(BeNil())
		g.Expect(x.Status.Replicas.Desired).To(Equal(desired))
		g.Expect(x.Status.Replicas.Ready).To(Equal(ready))
	}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	return x
}

// servingPods are the leader and followers of an index, by role.
func servingPods(name string) []string {
	return []string{name + "-r1", name + "-r2", name + "-engine"}
}

// rollWatcher records, while a rolling restart runs, the order in which
// the pods of an index were replaced and the most of them down at once.
type rollWatcher struct {
	mu      sync.Mutex
	order   []string
	maxDown int
	cancel  context.CancelFunc
	done    chan struct{}
}

// watchRoll starts a rollWatcher on the given pods; onChange, when set,
// runs after each change it sees (the operator is killed there).
func watchRoll(pods []string, onChange func()) *rollWatcher {
	w := &rollWatcher{done: make(chan struct{})}
	wctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	uids := map[string]string{}
	for _, n := range pods {
		p := podOf(n)
		Expect(p).NotTo(BeNil(), n)
		uids[n] = string(p.UID)
	}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		last := ""
		for wctx.Err() == nil {
			time.Sleep(30 * time.Millisecond)
			down, step := 0, ""
			for _, n := range pods {
				p := &corev1.Pod{}
				err := k8sClient.Get(wctx, client.ObjectKey{Namespace: specNamespace, Name: n}, p)
				if err != nil && !apierrors.IsNotFound(err) {
					continue
				}
				gone := err != nil || p.DeletionTimestamp != nil
				if gone || string(p.UID) != uids[n] {
					w.mu.Lock()
					if !slices.Contains(w.order, n) {
						w.order = append(w.order, n)
					}
					w.mu.Unlock()
				}
				if gone || !engineReady(p) {
					down++
				}
				step += n + ":" + string(p.UID) + ":" + p.Annotations[AnnotationRevision] + ":" + boolString(!gone && engineReady(p)) + " "
			}
			w.mu.Lock()
			w.maxDown = max(w.maxDown, down)
			w.mu.Unlock()
			if step != last {
				last = step
				if onChange != nil {
					onChange()
				}
			}
		}
	}()
	return w
}

// boolString is "1" or "0".
func boolString(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Stop ends the watcher and returns the order and the most pods down.
func (w *rollWatcher) Stop() ([]string, int) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.order), w.maxDown
}

// rolledAll waits until every pod of an index runs the index's update
// revision, the index is Running and Ready, and its followers ready.
func rolledAll(name string, before map[string]string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		x := getIndex(name)
		g.Expect(x.Status.Phase).To(Equal(summav1.PhaseRunning))
		g.Expect(x.IsReady()).To(BeTrue())
		for _, n := range servingPods(name) {
			p := &corev1.Pod{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: n}, p)).To(Succeed())
			g.Expect(string(p.UID)).NotTo(Equal(before[n]), "%s not replaced", n)
			g.Expect(p.Annotations[AnnotationRevision]).To(Equal(x.Status.UpdateRevision), n)
			g.Expect(engineReady(p)).To(BeTrue(), n)
		}
	}).WithTimeout(2 * readyTimeout).WithPolling(poll).Should(Succeed())
}

// uidsOf maps each pod to its UID.
func uidsOf(pods []string) map[string]string {
	GinkgoHelper()
	out := map[string]string{}
	for _, n := range pods {
		p := podOf(n)
		Expect(p).NotTo(BeNil(), n)
		out[n] = string(p.UID)
	}
	return out
}

var _ = Describe("Read followers", func() {
	It("runs spec.replicas followers with their volumes, labels, read Service, certificate names, NetworkPolicy and PodDisruptionBudget", func() {
		x := createReady("reps", withReplicas(2))
		x = waitReplicas("reps", 2, 2)
		Expect(x.Status.Replicas.Summary).To(Equal("2/2"))
		Expect(x.Status.Replicas.MaxLagSeconds).NotTo(BeNil())
		Expect(x.Status.Replicas.Followers).To(HaveLen(2))
		Expect(x.Status.Replicas.Followers[0].Name).To(Equal("reps-r1"))
		Expect(x.Status.Replicas.Followers[0].State).To(Equal("following"))

		By("kubectl summa status lists each replica with its generation and lag")
		out, err := kubectlSumma(kubeconfigFile(), "status", "reps")
		Expect(err).NotTo(HaveOccurred(), out)
		for _, want := range []string{"Replicas: 2/2", "reps-engine", "leader", "reps-r1", "reps-r2", "follower", "following", "LAG"} {
			Expect(out).To(ContainSubstring(want))
		}

		leader := podOf("reps-engine")
		Expect(leader.Labels).To(HaveKeyWithValue(summav1.LabelRole, summav1.RoleLeader))
		for _, k := range []string{"1", "2"} {
			p := podOf("reps-r" + k)
			Expect(p).NotTo(BeNil())
			Expect(metav1.IsControlledBy(p, x)).To(BeTrue())
			Expect(p.Labels).To(HaveKeyWithValue(summav1.LabelRole, summav1.RoleFollower))
			Expect(p.Labels).To(HaveKeyWithValue(summav1.LabelIndex, "reps"))
			Expect(p.Labels).To(HaveKeyWithValue(summav1.LabelManagedBy, summav1.ManagedByValue))
			Expect(p.Annotations[AnnotationRevision]).To(Equal(leader.Annotations[AnnotationRevision]))
			engine := p.Spec.Containers[0]
			Expect(engine.Name).To(Equal(EngineContainerName))
			Expect(engine.Command).To(Equal([]string{EngineCommand}))
			Expect(engine.Args).To(ContainElements(
				"--follow=https://reps."+specNamespace+".svc:8082",
				"--follow-token-file=/etc/summa/credentials/read-token",
				"--follow-ca-file=/etc/summa/tls/ca.crt"))
			Expect(p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(HaveLen(1))
			Expect(p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey).
				To(Equal("kubernetes.io/hostname"))
			pvc := claimOf("reps-r" + k + "-data")
			Expect(pvc).NotTo(BeNil())
			Expect(pvc.Spec.Resources.Requests[corev1.ResourceStorage]).To(Equal(x.Spec.Storage.Size))
			Expect(pvc.Labels).To(HaveKeyWithValue(summav1.LabelIndex, "reps"))
			// The fake engine started: the token and CA files were there.
			_, err := os.Stat(filepath.Join(kubelet.ClaimDir(specNamespace, "reps-r"+k+"-data"), "fake-follower-args"))
			Expect(err).NotTo(HaveOccurred())
		}

		By("Services: <name> the leader's only, <name>-read every serving pod")
		write, read := &corev1.Service{}, &corev1.Service{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "reps"}, write)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "reps-read"}, read)).To(Succeed())
		Expect(metav1.IsControlledBy(read, x)).To(BeTrue())
		Expect(read.Spec.Ports).To(HaveLen(1))
		Expect(read.Spec.Ports[0].Name).To(Equal("http"))
		Expect(read.Spec.Ports[0].Port).To(Equal(int32(8082)))
		for _, n := range servingPods("reps") {
			p := podOf(n)
			Expect(labels.SelectorFromSet(read.Spec.Selector).Matches(labels.Set(p.Labels))).To(BeTrue(), n)
			Expect(labels.SelectorFromSet(write.Spec.Selector).Matches(labels.Set(p.Labels))).To(Equal(n == "reps-engine"), n)
		}

		By("the certificate names both Services")
		leaf, err := firstCertificate(secretOf(x.Status.Access.TLSSecret).Data[summav1.TLSCertKey])
		Expect(err).NotTo(HaveOccurred())
		Expect(leaf.DNSNames).To(ContainElements("reps."+specNamespace+".svc", "reps-read."+specNamespace+".svc"))
		pool := x509.NewCertPool()
		Expect(pool.AppendCertsFromPEM(secretOf(x.Status.Access.TLSSecret).Data[summav1.CACertKey])).To(BeTrue())
		_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "reps-read." + specNamespace + ".svc"})
		Expect(err).NotTo(HaveOccurred())

		By("the NetworkPolicy covers the followers and lets them reach the leader")
		np := &networkingv1.NetworkPolicy{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "reps"}, np)).To(Succeed())
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		Expect(err).NotTo(HaveOccurred())
		followerAdmitted := false
		for _, peer := range np.Spec.Ingress[0].From {
			if peer.PodSelector != nil && peer.NamespaceSelector == nil &&
				labels.SelectorFromSet(peer.PodSelector.MatchLabels).Matches(labels.Set(podOf("reps-r1").Labels)) {
				followerAdmitted = true
			}
		}
		Expect(followerAdmitted).To(BeTrue())
		for _, n := range servingPods("reps") {
			Expect(sel.Matches(labels.Set(podOf(n).Labels))).To(BeTrue(), n)
		}

		By("a PodDisruptionBudget of one")
		pdb := &policyv1.PodDisruptionBudget{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "reps"}, pdb)).To(Succeed())
		Expect(metav1.IsControlledBy(pdb, x)).To(BeTrue())
		// A number of the 3 serving pods (not maxUnavailable: the disruption
		// controller would need a scale subresource on SummaIndex).
		Expect(pdb.Spec.MaxUnavailable).To(BeNil())
		Expect(pdb.Spec.MinAvailable).NotTo(BeNil())
		Expect(pdb.Spec.MinAvailable.Type).To(Equal(intstr.Int))
		Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(2))
		psel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		Expect(err).NotTo(HaveOccurred())
		for _, n := range servingPods("reps") {
			Expect(psel.Matches(labels.Set(podOf(n).Labels))).To(BeTrue(), n)
		}

		By("scaling down to 1 with reclaimPolicy Retain: r2 goes, its volume stays without owner")
		updateIndex("reps", withReplicas(1))
		Eventually(func(g Gomega) {
			g.Expect(podOf("reps-r2")).To(BeNil())
			c := claimOf("reps-r2-data")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.OwnerReferences).To(BeEmpty())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		waitReplicas("reps", 1, 1)
		Expect(podOf("reps-r1")).NotTo(BeNil())
		By("the budget follows: 1 of the 2 serving pods available")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "reps"}, pdb)).To(Succeed())
			g.Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(1))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())

		By("scaling to 0: the budget goes")
		updateIndex("reps", withReplicas(0))
		Eventually(func(g Gomega) {
			g.Expect(podOf("reps-r1")).To(BeNil())
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "reps"}, &policyv1.PodDisruptionBudget{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(getIndex("reps").IsReady()).To(BeTrue())
		deleteAndWaitGone("reps")
		Expect(claimOf("reps-r1-data")).NotTo(BeNil(), "Retain keeps the follower volumes")
		Expect(k8sClient.Delete(ctx, claimOf("reps-r1-data"))).To(Succeed())
		Expect(k8sClient.Delete(ctx, claimOf("reps-r2-data"))).To(Succeed())
		Expect(k8sClient.Delete(ctx, claimOf("reps-data"))).To(Succeed())
	})

	It("with reclaimPolicy Delete, deletes the volumes of removed followers and every follower with the index", func() {
		createReady("repd", func(x *summav1.SummaIndex) {
			x.Spec.Replicas = ptr.To[int32](2)
			x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete
		})
		waitReplicas("repd", 2, 2)
		Expect(metav1.IsControlledBy(claimOf("repd-r2-data"), getIndex("repd"))).To(BeTrue())
		updateIndex("repd", withReplicas(1))
		Eventually(func(g Gomega) {
			g.Expect(podOf("repd-r2")).To(BeNil())
			g.Expect(claimOf("repd-r2-data")).To(BeNil())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		waitReplicas("repd", 1, 1)
		deleteAndWaitGone("repd")
		Eventually(func(g Gomega) {
			g.Expect(podOf("repd-r1")).To(BeNil())
			g.Expect(claimOf("repd-r1-data")).To(BeNil())
			g.Expect(claimOf("repd-data")).To(BeNil())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	})

	It("restarts followers one at a time, each caught up before the next, and the leader last", func() {
		createReady("roll", withReplicas(2))
		waitReplicas("roll", 2, 2)
		before := uidsOf(servingPods("roll"))
		// r1 comes back lagging: the rollout waits for it.
		fakeFollower("roll-r1-data", map[string]any{"state": "catchingUp", "generation": 1, "leaderGeneration": 9, "lagSeconds": 60})
		w := watchRoll(servingPods("roll"), nil)
		updateIndex("roll", func(x *summav1.SummaIndex) {
			x.Annotations = map[string]string{AnnotationRestartedAt: "roll-1"}
		})
		Eventually(func() string { return uidOf("roll-r1") }).WithTimeout(readyTimeout).WithPolling(poll).
			Should(And(Not(BeEmpty()), Not(Equal(before["roll-r1"]))))
		Consistently(func(g Gomega) {
			g.Expect(uidOf("roll-r2")).To(Equal(before["roll-r2"]))
			g.Expect(uidOf("roll-engine")).To(Equal(before["roll-engine"]))
		}).WithTimeout(5*time.Second).WithPolling(poll).Should(Succeed(), "the next pod restarted before r1 caught up")
		c := getIndex("roll").GetCondition(summav1.ConditionProgressing)
		Expect(c).NotTo(BeNil())
		Expect(c.Reason).To(Equal(ReasonRollingFollowers))
		fakeFollower("roll-r1-data", map[string]any{"state": "following", "generation": 9, "leaderGeneration": 9, "lagSeconds": 0.1})
		rolledAll("roll", before)
		order, maxDown := w.Stop()
		Expect(order).To(Equal(servingPods("roll")))
		Expect(maxDown).To(BeNumerically("<=", 1), "more than one pod of the index down at once")
		deleteAndWaitGone("roll")
	})

	It("finishes a rolling restart with the leader last when the operator is killed at every step", func() {
		createReady("rollkill", withReplicas(2))
		waitReplicas("rollkill", 2, 2)
		before := uidsOf(servingPods("rollkill"))
		restarts := 0
		w := watchRoll(servingPods("rollkill"), func() { restartOperator(); restarts++ })
		updateIndex("rollkill", func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = ptr.To[int32](1) })
		rolledAll("rollkill", before)
		order, maxDown := w.Stop()
		Expect(order).To(Equal(servingPods("rollkill")))
		Expect(maxDown).To(BeNumerically("<=", 1))
		Expect(restarts).To(BeNumerically(">=", 6), "the operator was killed at every step")
		deleteAndWaitGone("rollkill")
	})

	It("rebuilds a follower that reports quarantine from the leader, leaving the leader alone", func() {
		createReady("repq", withReplicas(1))
		waitReplicas("repq", 1, 1)
		leader, pod, pvc := types.UID(uidOf("repq-engine")), types.UID(uidOf("repq-r1")), claimOf("repq-r1-data").UID
		fakeFollower("repq-r1-data", map[string]any{"state": "following", "generation": 3, "leaderGeneration": 3, "quarantined": []string{"00ab"}})
		Eventually(func(g Gomega) {
			p, c := podOf("repq-r1"), claimOf("repq-r1-data")
			g.Expect(p).NotTo(BeNil())
			g.Expect(c).NotTo(BeNil())
			g.Expect(p.UID).NotTo(Equal(pod))
			g.Expect(c.UID).NotTo(Equal(pvc))
			g.Expect(engineReady(p)).To(BeTrue())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(types.UID(uidOf("repq-engine"))).To(Equal(leader))
		Expect(eventReasons("repq")).To(ContainElement("FollowerRebuilding"))
		waitReplicas("repq", 1, 1)
		deleteAndWaitGone("repq")
	})
	It("leaves followers alone while paused, stops them with suspend and starts them again", func() {
		createReady("reps2", withReplicas(2))
		waitReplicas("reps2", 2, 2)
		r2 := types.UID(uidOf("reps2-r2"))

		By("paused: scaling down changes no pod")
		updateIndex("reps2", func(x *summav1.SummaIndex) {
			x.Annotations = map[string]string{AnnotationReconcile: ReconcilePaused}
			x.Spec.Replicas = ptr.To[int32](1)
		})
		Consistently(func() *corev1.Pod { return podOf("reps2-r2") }).WithTimeout(4 * time.Second).WithPolling(poll).
			Should(HaveField("UID", r2))
		updateIndex("reps2", func(x *summav1.SummaIndex) { delete(x.Annotations, AnnotationReconcile) })
		Eventually(func() *corev1.Pod { return podOf("reps2-r2") }).WithTimeout(readyTimeout).WithPolling(poll).Should(BeNil())

		By("suspend stops the followers and keeps their volumes")
		updateIndex("reps2", func(x *summav1.SummaIndex) { x.Spec.Suspend = true })
		Eventually(func(g Gomega) {
			g.Expect(podOf("reps2-r1")).To(BeNil())
			g.Expect(podOf("reps2-engine")).To(BeNil())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(claimOf("reps2-r1-data")).NotTo(BeNil())
		updateIndex("reps2", func(x *summav1.SummaIndex) { x.Spec.Suspend = false })
		waitReady("reps2")
		waitReplicas("reps2", 1, 1)
		deleteAndWaitGone("reps2")
		for _, c := range []string{"reps2-data", "reps2-r1-data", "reps2-r2-data"} {
			if pvc := claimOf(c); pvc != nil {
				Expect(k8sClient.Delete(ctx, pvc)).To(Succeed())
			}
		}
	})
	It("restarts the followers one at a time for a doctor run, then repairs the leader while they serve", func() {
		createReady("repdoc", func(x *summav1.SummaIndex) {
			x.Spec.Replicas = ptr.To[int32](2)
			x.Spec.Doctor.Backup = summav1.BackupNone
		})
		waitReplicas("repdoc", 2, 2)
		// The leader holds quarantined files the followers refuse: they
		// are not caught up, and the run does not wait for that.
		for _, c := range []string{"repdoc-r1-data", "repdoc-r2-data"} {
			fakeFollower(c, map[string]any{"state": "catchingUp", "generation": 1, "leaderGeneration": 9, "lagSeconds": 60})
		}
		restarts := 0
		w := watchRoll(servingPods("repdoc"), func() { restartOperator(); restarts++ })
		updateIndex("repdoc", func(x *summav1.SummaIndex) { x.Spec.Doctor.RequestID = "d1" })
		waitDoctor("repdoc", "d1", summav1.DoctorPhaseSucceeded)
		waitReady("repdoc")
		order, maxDown := w.Stop()
		Expect(order).To(Equal(servingPods("repdoc")), "followers one at a time, the leader last")
		Expect(maxDown).To(BeNumerically("<=", 1), "more than one pod of the index down at once")
		Expect(restarts).To(BeNumerically(">=", 4), "the operator was killed at every step")
		after := uidsOf(servingPods("repdoc"))
		for _, n := range []string{"repdoc-r1", "repdoc-r2"} {
			Expect(podOf(n).Annotations).To(HaveKeyWithValue(AnnotationDoctorRequest, "d1"), n)
		}
		Consistently(func() map[string]string { return uidsOf(servingPods("repdoc")) }).
			WithTimeout(3*time.Second).WithPolling(poll).Should(Equal(after), "a pod restarted again after the run")
		Expect(eventReasons("repdoc")).NotTo(ContainElement("FollowerNotBack"))
		deleteAndWaitGone("repdoc")
	})
})
