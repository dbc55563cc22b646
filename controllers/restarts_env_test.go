package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// withOperator restarts the operator with a setting changed, and restores
// the setting (and restarts again) when the spec ends.
func withOperator(set func(), reset func()) {
	set()
	restartOperator()
	DeferCleanup(func() {
		reset()
		restartOperator()
	})
}

// restartingIndexes lists the indexes of the spec namespace whose status
// shows a restart under way (what the budget counts).
func restartingIndexes() []string {
	GinkgoHelper()
	list := &summav1.SummaIndexList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(specNamespace))).To(Succeed())
	var out []string
	for i := range list.Items {
		if restarting(&list.Items[i]) {
			out = append(out, list.Items[i].Name)
		}
	}
	return out
}

var _ = Describe("Restarts and upgrades", func() {
	It("restarts no engine when a new operator version takes over, and adopts a pod of the previous revision scheme", func() {
		x := createReady("upgrade", nil)
		pod, err := enginePodOf("upgrade")
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.Annotations[AnnotationOperatorVersion]).To(Equal(operatorVersion))
		rev := pod.Annotations[AnnotationRevision]

		By("a new operator version, same spec")
		old := operatorVersion
		withOperator(func() { operatorVersion = "v-next" }, func() { operatorVersion = old })
		// Several resync passes (1 s in the specs) of the new operator.
		Consistently(func(g Gomega) {
			p, err := enginePodOf("upgrade")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.UID).To(Equal(pod.UID), "the new operator restarted the engine")
			g.Expect(getIndex("upgrade").Status.UpdateRevision).To(Equal(rev))
		}).WithTimeout(8 * time.Second).WithPolling(poll).Should(Succeed())
		Expect(getIndex("upgrade").IsReady()).To(BeTrue())

		By("a pod labelled by an operator of the previous revision scheme, which had found it current")
		stopOperator()
		legacy := "0123456789ab"
		p, err := enginePodOf("upgrade")
		Expect(err).NotTo(HaveOccurred())
		patch := client.MergeFrom(p.DeepCopy())
		p.Annotations[AnnotationRevision] = legacy
		Expect(k8sClient.Patch(ctx, p, patch)).To(Succeed())
		x = getIndex("upgrade")
		x.Status.CurrentRevision, x.Status.UpdateRevision = legacy, legacy
		Expect(k8sClient.Status().Update(ctx, x)).To(Succeed())
		startOperator()
		Eventually(func(g Gomega) {
			p, err := enginePodOf("upgrade")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Annotations[AnnotationRevision]).To(Equal(rev))
			g.Expect(p.UID).To(Equal(pod.UID), "a pod the previous scheme found current was restarted")
			g.Expect(getIndex("upgrade").Status.CurrentRevision).To(Equal(rev))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(eventReasons("upgrade")).To(ContainElement("RevisionAdopted"))
		deleteAndWaitGone("upgrade")
	})

	It("keeps a pod labelled with a revision of format v1, which hashed the grace, and re-labels it", func() {
		createReady("v1pod", nil)
		pod, err := enginePodOf("v1pod")
		Expect(err).NotTo(HaveOccurred())
		rev := pod.Annotations[AnnotationRevision]
		Expect(rev).To(HavePrefix(revisionFormat + "-"))

		By("the pod as an operator of format v1 labelled it")
		stopOperator()
		x := getIndex("v1pod")
		acc := access{known: true, credentialsSecret: x.Status.Access.CredentialsSecret, tlsSecret: x.Status.Access.TLSSecret}
		if acc.tlsSecret != "" {
			s := &corev1.Secret{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: acc.tlsSecret}, s)).To(Succeed())
			acc.caPresent = len(s.Data[summav1.CACertKey]) > 0
		}
		// The test operator runs with --volume-permissions.
		in := podInputs{image: engineImageOf(pod), grace: *pod.Spec.TerminationGracePeriodSeconds, volumePermissions: true, access: acc}
		v1 := revisionV1Of(x, in)
		Expect(v1).To(HavePrefix("v1-"))
		patch := client.MergeFrom(pod.DeepCopy())
		pod.Annotations[AnnotationRevision] = v1
		Expect(k8sClient.Patch(ctx, pod, patch)).To(Succeed())
		x.Status.CurrentRevision, x.Status.UpdateRevision = v1, v1
		Expect(k8sClient.Status().Update(ctx, x)).To(Succeed())

		startOperator()
		Eventually(func(g Gomega) {
			p, err := enginePodOf("v1pod")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.UID).To(Equal(pod.UID), "a v1 pod of the current spec was restarted")
			g.Expect(p.Annotations[AnnotationRevision]).To(Equal(rev), "the v1 pod was not re-labelled")
			x := getIndex("v1pod")
			g.Expect(x.Status.CurrentRevision).To(Equal(rev))
			g.Expect(x.Status.UpdateRevision).To(Equal(rev))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(getIndex("v1pod").IsReady()).To(BeTrue())
		Expect(eventReasons("v1pod")).To(ContainElement("RevisionAdopted"))
		deleteAndWaitGone("v1pod")
	})

	It("rolls a spec change through the indexes at most max-concurrent-restarts at a time, each drained", func() {
		Eventually(restartingIndexes).WithTimeout(readyTimeout).WithPolling(poll).Should(BeEmpty(),
			"indexes of earlier specs still restarting would hold the budget")
		withOperator(func() { maxConcurrentRestarts = 2 }, func() { maxConcurrentRestarts = 100 })
		names := []string{"roll-a", "roll-b", "roll-c", "roll-d"}
		uids := map[string]string{}
		for _, n := range names {
			Expect(k8sClient.Create(ctx, specIndex(n, nil))).To(Succeed())
		}
		for i, n := range names {
			waitReady(n)
			ingest(n, 0, 20+i)
			p, err := enginePodOf(n)
			Expect(err).NotTo(HaveOccurred())
			uids[n] = string(p.UID)
		}

		var mu sync.Mutex
		most, queuedServing := 0, false
		watch, cancel := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(watched)
			for watch.Err() == nil {
				list := &summav1.SummaIndexList{}
				if err := k8sClient.List(watch, list, client.InNamespace(specNamespace)); err == nil {
					n := 0
					mu.Lock()
					for i := range list.Items {
						y := &list.Items[i]
						if !strings.HasPrefix(y.Name, "roll-") {
							continue
						}
						if restarting(y) {
							n++
						}
						if c := y.GetCondition(summav1.ConditionProgressing); c != nil && c.Reason == ReasonRestartQueued && y.IsReady() {
							queuedServing = true
						}
					}
					most = max(most, n)
					mu.Unlock()
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		for _, n := range names {
			updateIndex(n, func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = ptr.To[int32](1) })
		}
		for _, n := range names {
			Eventually(func(g Gomega) {
				p, err := enginePodOf(n)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p.Spec.Containers[0].Args).To(ContainElement("--indexing-workers=1"))
				g.Expect(getIndex(n).IsReady()).To(BeTrue())
			}).WithTimeout(2 * readyTimeout).WithPolling(poll).Should(Succeed())
		}
		cancel()
		<-watched
		mu.Lock()
		defer mu.Unlock()
		GinkgoWriter.Printf("at most %d of %d indexes restarted at once\n", most, len(names))
		Expect(most).To(BeNumerically(">=", 1))
		Expect(most).To(BeNumerically("<=", 2), "more engines restarted at once than the budget allows")
		Expect(queuedServing).To(BeTrue(), "no index was seen waiting for a slot while serving")
		for i, n := range names {
			p, err := enginePodOf(n)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(p.UID)).NotTo(Equal(uids[n]))
			Expect(eventReasons(n)).To(ContainElement("Draining"), "%s restarted without a drain", n)
			Expect(engineDocuments(n)).To(BeEquivalentTo(20+i), "the drain committed what %s had accepted", n)
		}
		for _, n := range names {
			deleteAndWaitGone(n)
		}
	})

	It("clears Degraded when the change whose drain timed out is taken back", func() {
		createReady("revert", func(x *summav1.SummaIndex) { x.Spec.Lifecycle.DrainTimeoutSeconds = 2 })
		ingest("revert", 0, 10)
		x := getIndex("revert")
		blocker := filepath.Join(kubelet.ClaimDir(specNamespace, x.DataClaimName()), "revert", "metadata.json.tmp", "in-the-way")
		Expect(os.MkdirAll(blocker, 0o755)).To(Succeed())
		DeferCleanup(func() { _ = os.RemoveAll(filepath.Dir(blocker)) })
		updateIndex("revert", func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = ptr.To[int32](1) })
		Eventually(func(g Gomega) {
			c := getIndex("revert").GetCondition(summav1.ConditionDegraded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(ReasonDrainTimeout))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		// Taken back while commits still fail: no restart is wanted any
		// more, so nothing is degraded (the blocker stays).
		updateIndex("revert", func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = nil })
		Eventually(func(g Gomega) {
			x := getIndex("revert")
			g.Expect(x.Status.ObservedGeneration).To(Equal(x.Generation))
			g.Expect(x.IsConditionTrue(summav1.ConditionDegraded)).To(BeFalse(), "conditions %+v", x.Status.Conditions)
			g.Expect(x.Status.DrainFailures).To(BeZero())
			g.Expect(x.Status.PodUID).To(Equal(getIndex("revert").Status.PodUID))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(eventReasons("revert")).To(ContainElement("Recovered"))
		// The engine may write metadata.json.tmp as a file again the moment
		// the blocker's directory is emptied: removal is retried.
		Eventually(func() error { return os.RemoveAll(filepath.Dir(blocker)) }).
			WithTimeout(10 * time.Second).WithPolling(poll).Should(Succeed())
		deleteAndWaitGone("revert")
	})

	It("resumes a restart, a doctor run and a deletion after being killed between an engine call and the status write that records it", func() {
		var mu sync.Mutex
		killed := map[string]bool{}
		hookMu.Lock()
		engineCallHook = func(cctx context.Context, call string) {
			mu.Lock()
			first := !killed[call]
			killed[call] = true
			mu.Unlock()
			if !first {
				return
			}
			// Killed now: the operator stops, and this pass's records
			// (status, events) never reach the API server.
			go restartOperator()
			select {
			case <-cctx.Done():
			case <-time.After(time.Minute):
				Fail("the operator was not stopped after " + call)
			}
		}
		hookMu.Unlock()
		DeferCleanup(func() {
			hookMu.Lock()
			engineCallHook = nil
			hookMu.Unlock()
		})

		Expect(k8sClient.Create(ctx, specIndex("lazarus", func(x *summav1.SummaIndex) {
			x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete
		}))).To(Succeed())
		waitReady("lazarus")
		ingest("lazarus", 0, 60)
		commit("lazarus")
		ingest("lazarus", 60, 75)

		updateIndex("lazarus", func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = ptr.To[int32](1) })
		Eventually(func(g Gomega) {
			p, err := enginePodOf("lazarus")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Spec.Containers[0].Args).To(ContainElement("--indexing-workers=1"))
			g.Expect(getIndex("lazarus").IsReady()).To(BeTrue())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(engineDocuments("lazarus")).To(BeEquivalentTo(75))

		updateIndex("lazarus", func(x *summav1.SummaIndex) {
			x.Spec.Doctor = summav1.DoctorSpec{RequestID: "lazarus-1", Backup: summav1.BackupNone}
		})
		Eventually(func(g Gomega) {
			d := getIndex("lazarus").Status.Doctor
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Phase).To(Equal(summav1.DoctorPhaseSucceeded))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		waitReady("lazarus")
		Expect(engineDocuments("lazarus")).To(BeEquivalentTo(75))
		ds, err := engineOf("lazarus").DrainStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(ds.Draining).To(BeFalse(), "the engine is left draining")

		deleteAndWaitGone("lazarus")
		Eventually(func() bool {
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "lazarus-data"}, &corev1.PersistentVolumeClaim{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue())
		mu.Lock()
		defer mu.Unlock()
		var calls []string
		for c := range killed {
			calls = append(calls, c)
		}
		GinkgoWriter.Printf("killed after: %s\n", strings.Join(calls, ", "))
		for _, want := range []string{"create-index", "drain/" + purposeRestart, "drain/" + purposeDoctor, "delete-index"} {
			Expect(killed).To(HaveKey(want), fmt.Sprintf("the operator was never killed after %s", want))
		}
	})
})
