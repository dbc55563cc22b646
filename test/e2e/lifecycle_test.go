package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
	"github.com/summadev/summa/internal/testing/segtest"
)

// figure prints a measured figure and appends it to $SUMMA_E2E_FIGURES.
func figure(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	GinkgoWriter.Println("figure: " + line)
	AddReportEntry("figure", line)
	if path := os.Getenv("SUMMA_E2E_FIGURES"); path != "" {
		if f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

// ingester writes batches with periodic commits until stopped, following
// the engine pod across restarts, and records what was acknowledged.
type ingester struct {
	name string
	stop chan struct{}
	done chan struct{}

	mu sync.Mutex
	// accepted counts documents [0, accepted) whose batch was accepted.
	accepted int
	// committed counts documents [0, committed) covered by an
	// acknowledged commit.
	committed int
	// lastOK and gaps time the longest stretch without an accepted write.
	lastOK  time.Time
	longest time.Duration
}

// startIngester starts writing batches of 20 documents, committing every
// fifth batch.
func startIngester(name string) *ingester {
	in := &ingester{name: name, stop: make(chan struct{}), done: make(chan struct{}), lastOK: time.Now()}
	go func() {
		defer GinkgoRecover()
		defer close(in.done)
		for batch := 1; ; batch++ {
			select {
			case <-in.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			pod, err := enginePod(name)
			if err != nil || pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
				continue
			}
			c, err := engineClient(name)
			if err != nil {
				continue
			}
			in.mu.Lock()
			from := in.accepted
			in.mu.Unlock()
			if _, err := c.AddDocuments(ctx, name, documents(from, from+20)...); err != nil {
				var ae *engineclient.APIError
				if errors.As(err, &ae) && !ae.Retryable {
					Fail("ingestion refused for good: " + err.Error())
				}
				continue // draining, restarting: retried
			}
			now := time.Now()
			in.mu.Lock()
			in.accepted = from + 20
			in.longest = max(in.longest, now.Sub(in.lastOK))
			in.lastOK = now
			in.mu.Unlock()
			if batch%5 == 0 {
				if _, err := c.Commit(ctx, name); err == nil {
					in.mu.Lock()
					in.committed = from + 20
					in.mu.Unlock()
				}
			}
		}
	}()
	return in
}

// Stop ends ingestion and returns what was accepted and committed.
func (in *ingester) Stop() (accepted, committed int, longestGap time.Duration) {
	close(in.stop)
	<-in.done
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.accepted, in.committed, in.longest
}

var _ = Describe("SummaIndex on a real kubelet", func() {
	It("1. becomes Ready, and status documents follow ingestion", func() {
		took := createReady("e2e-basic", nil)
		figure("apply -> Ready: %.1fs", took.Seconds())
		ingest("e2e-basic", 0, 500)
		commit("e2e-basic")
		Eventually(func() int64 { return getIndex("e2e-basic").Status.Documents }).
			WithTimeout(2 * time.Minute).WithPolling(poll).Should(BeEquivalentTo(500))
		pod, err := enginePod("e2e-basic")
		Expect(err).NotTo(HaveOccurred())
		Expect(*pod.Spec.SecurityContext.RunAsNonRoot).To(BeTrue())
	})

	It("2. rolls a change under continuous ingestion: drain, restart, nothing accepted lost", func() {
		createReady("e2e-rolling", nil)
		in := startIngester("e2e-rolling")
		time.Sleep(3 * time.Second)
		old := getIndex("e2e-rolling").Status.PodUID
		updateIndex("e2e-rolling", func(x *summav1.SummaIndex) {
			x.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}
		})
		Eventually(func(g Gomega) {
			x := getIndex("e2e-rolling")
			g.Expect(x.Status.PodUID).NotTo(Equal(old))
			g.Expect(x.IsReady()).To(BeTrue())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		time.Sleep(3 * time.Second) // ingestion resumes on the new pod
		accepted, committed, gap := in.Stop()
		figure("drained restart under ingestion: longest gap between accepted writes %.1fs (%d accepted, %d committed by acknowledged commits)",
			gap.Seconds(), accepted, committed)
		commit("e2e-rolling")
		expectAll("e2e-rolling", 0, accepted)
		Expect(committed).To(BeNumerically(">", 0))
	})

	It("3. survives an eviction it did not start: the engine drains in its SIGTERM handler", func() {
		createReady("e2e-evicted", nil)
		ingest("e2e-evicted", 0, 300)
		commit("e2e-evicted")
		ingest("e2e-evicted", 300, 700) // accepted, not committed
		pod, err := enginePod("e2e-evicted")
		Expect(err).NotTo(HaveOccurred())
		kubectl("-n", testNamespace, "delete", "pod", pod.Name, "--wait=false") // the pod's own (sized) grace
		Eventually(func(g Gomega) {
			x := getIndex("e2e-evicted")
			g.Expect(x.Status.PodUID).NotTo(Equal(pod.UID))
			g.Expect(x.IsReady()).To(BeTrue())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		expectAll("e2e-evicted", 0, 700)
	})

	It("4. runs the engine as a native sidecar that starts first", func() {
		createReady("e2e-sidecar", func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "app", Image: "summa.dev/pause:1", ImagePullPolicy: corev1.PullIfNotPresent,
					SecurityContext: &corev1.SecurityContext{
						RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
						Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					},
				}},
			}}
		})
		// Ready follows the engine container, not the pod: the app may
		// still be starting when the index is Ready.
		var engineStart, appStart time.Time
		Eventually(func(g Gomega) {
			pod, err := enginePod("e2e-sidecar")
			g.Expect(err).NotTo(HaveOccurred())
			for _, cs := range pod.Status.InitContainerStatuses {
				if cs.Name == "engine" && cs.State.Running != nil {
					engineStart = cs.State.Running.StartedAt.Time
				}
			}
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.Name == "app" && cs.State.Running != nil {
					appStart = cs.State.Running.StartedAt.Time
				}
			}
			g.Expect(engineStart.IsZero()).To(BeFalse(), "engine sidecar running")
			g.Expect(appStart.IsZero()).To(BeFalse(), "app running")
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(engineStart.After(appStart)).To(BeFalse(), "the engine starts before the app")
		Expect(engine("e2e-sidecar").Healthz(ctx)).To(Succeed())
	})

	It("5. restarts a kill -9ed engine with its committed data intact", func() {
		createReady("e2e-killed", nil)
		ingest("e2e-killed", 0, 400)
		commit("e2e-killed")
		pod, err := enginePod("e2e-killed")
		Expect(err).NotTo(HaveOccurred())
		kill9(pod, "engine")
		Eventually(func(g Gomega) {
			p, err := enginePod("e2e-killed")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.UID).To(Equal(pod.UID), "the kubelet restarts the container in the same pod")
			restarts := int32(0)
			for _, cs := range p.Status.ContainerStatuses {
				restarts += cs.RestartCount
			}
			g.Expect(restarts).To(BeNumerically(">=", 1))
			g.Expect(getIndex("e2e-killed").IsReady()).To(BeTrue())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		expectAll("e2e-killed", 0, 400)
	})

	It("6. repairs a corrupted segment with a doctor run: backup, Job, report, Ready", func() {
		createReady("e2e-doctor", nil)
		for i := 0; i < 3; i++ {
			ingest("e2e-doctor", i*200, (i+1)*200)
			commit("e2e-doctor")
		}
		dir := filepath.Join(volumeDir("e2e-doctor-data"), "e2e-doctor")
		victim := truncateSegment(dir)
		pod, err := enginePod("e2e-doctor")
		Expect(err).NotTo(HaveOccurred())
		kill9(pod, "engine") // reopen: the damaged segment is quarantined
		Eventually(func(g Gomega) {
			x := getIndex("e2e-doctor")
			g.Expect(x.IsConditionTrue(summav1.ConditionDoctorRequired)).To(BeTrue())
			g.Expect(x.Status.QuarantinedSegments).NotTo(BeEmpty())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		surviving := getIndex("e2e-doctor").Status.Documents

		start := time.Now()
		updateIndex("e2e-doctor", func(x *summav1.SummaIndex) { x.Spec.Doctor.RequestID = "first" })
		Eventually(func(g Gomega) {
			d := getIndex("e2e-doctor").Status.Doctor
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Phase).To(Equal(summav1.DoctorPhaseSucceeded), "doctor %+v", d)
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		figure("doctor run (drain, backup, doctor Job, restart): %.1fs", time.Since(start).Seconds())
		x := waitReady("e2e-doctor")
		Expect(x.Status.Doctor.RemovedSegments).To(Equal([]string{victim}))
		Expect(x.IsConditionTrue(summav1.ConditionDoctorRequired)).To(BeFalse())
		Expect(x.Status.Documents).To(Equal(surviving))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "e2e-doctor-backup-first"}, &corev1.PersistentVolumeClaim{})).To(Succeed())
		Expect(filepath.Join(volumeDir("e2e-doctor-backup-first"), "e2e-doctor", "metadata.json")).To(BeAnExistingFile())
		job := &batchv1.Job{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: x.DoctorJobName("first")}, job)).To(Succeed())
	})

	It("7a. with reclaimPolicy Delete finishes the deletion after the operator is killed mid-way", func() {
		createReady("e2e-delete", func(x *summav1.SummaIndex) { x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete })
		ingest("e2e-delete", 0, 100)
		commit("e2e-delete")
		dir := volumeDir("e2e-delete-data")
		Expect(k8s.Delete(ctx, getIndex("e2e-delete"))).To(Succeed())
		Eventually(func() summav1.Phase { return getIndex("e2e-delete").Status.Phase }).
			WithTimeout(time.Minute).WithPolling(50 * time.Millisecond).Should(Equal(summav1.PhaseDeleting))
		kubectl("-n", "summa-system", "delete", "pod", "-l", "app.kubernetes.io/name=summa-operator", "--grace-period=0", "--force")
		Eventually(func() bool { return gone(&summav1.SummaIndex{}, "e2e-delete") }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
		Eventually(func() bool { return gone(&corev1.PersistentVolumeClaim{}, "e2e-delete-data") }).
			WithTimeout(2 * time.Minute).WithPolling(poll).Should(BeTrue())
		Eventually(func() bool { _, err := os.Stat(dir); return os.IsNotExist(err) }).
			WithTimeout(2*time.Minute).WithPolling(poll).Should(BeTrue(), "the volume's directory is gone")
		kubectl("-n", "summa-system", "rollout", "status", "deployment/summa-operator", "--timeout=180s")
	})

	It("7b. with reclaimPolicy Retain keeps the volume for a new SummaIndex of the same name", func() {
		createReady("e2e-retain", nil)
		ingest("e2e-retain", 0, 250)
		commit("e2e-retain")
		Expect(k8s.Delete(ctx, getIndex("e2e-retain"))).To(Succeed())
		Eventually(func() bool { return gone(&summav1.SummaIndex{}, "e2e-retain") }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
		pvc := &corev1.PersistentVolumeClaim{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "e2e-retain-data"}, pvc)).To(Succeed())
		Expect(pvc.OwnerReferences).To(BeEmpty())
		createReady("e2e-retain", nil)
		expectAll("e2e-retain", 0, 250)
	})

	It("7c. with reclaimPolicy Retain keeps the volume under a foreground deletion, also with the operator stopped", func() {
		createReady("e2e-fg", nil)
		ingest("e2e-fg", 0, 200)
		commit("e2e-fg")
		By("a foreground deletion: the garbage collector deletes the dependents before the index")
		Expect(k8s.Delete(ctx, getIndex("e2e-fg"), client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		Eventually(func() bool { return gone(&summav1.SummaIndex{}, "e2e-fg") }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
		pvc := &corev1.PersistentVolumeClaim{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "e2e-fg-data"}, pvc)).To(Succeed())
		Expect(pvc.DeletionTimestamp).To(BeNil())
		createReady("e2e-fg", nil)
		expectAll("e2e-fg", 0, 200)

		By("the same with the operator stopped while the deletion is asked for")
		kubectl("-n", "summa-system", "scale", "deployment/summa-operator", "--replicas=0")
		Eventually(func() string {
			return kubectl("-n", "summa-system", "get", "pods", "-l", "app.kubernetes.io/name=summa-operator", "-o", "name")
		}).WithTimeout(2 * time.Minute).WithPolling(poll).Should(BeEmpty())
		Expect(k8s.Delete(ctx, getIndex("e2e-fg"), client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		Eventually(func() bool { return gone(&corev1.Pod{}, "e2e-fg-engine") }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue(), "the garbage collector deletes the engine pod")
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "e2e-fg-data"}, pvc)).To(Succeed())
		Expect(pvc.DeletionTimestamp).To(BeNil())
		kubectl("-n", "summa-system", "scale", "deployment/summa-operator", "--replicas=1")
		kubectl("-n", "summa-system", "rollout", "status", "deployment/summa-operator", "--timeout=180s")
		Eventually(func() bool { return gone(&summav1.SummaIndex{}, "e2e-fg") }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "e2e-fg-data"}, pvc)).To(Succeed())
		Expect(pvc.DeletionTimestamp).To(BeNil())
		createReady("e2e-fg", nil)
		expectAll("e2e-fg", 0, 200)
	})

	It("8. suspends and resumes on the same volume", func() {
		createReady("e2e-suspend", nil)
		ingest("e2e-suspend", 0, 150) // the suspend drain commits them
		updateIndex("e2e-suspend", func(x *summav1.SummaIndex) { x.Spec.Suspend = true })
		Eventually(func(g Gomega) {
			g.Expect(gone(&corev1.Pod{}, "e2e-suspend-engine")).To(BeTrue())
			g.Expect(getIndex("e2e-suspend").Status.Phase).To(Equal(summav1.PhaseSuspended))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		updateIndex("e2e-suspend", func(x *summav1.SummaIndex) { x.Spec.Suspend = false })
		waitReady("e2e-suspend")
		expectAll("e2e-suspend", 0, 150)
	})

	It("9. sizes the grace under a large uncommitted backlog without a restart, and the next restart carries it", func() {
		createReady("e2e-grace", func(x *summav1.SummaIndex) {
			x.Spec.Lifecycle.TerminationGracePeriod = summav1.GracePeriodBounds{MinSeconds: 1, MaxSeconds: 120}
		})
		first := getIndex("e2e-grace")
		Expect(first.Status.TerminationGracePeriodSeconds).To(BeEquivalentTo(10), "no estimate yet: the fixed 10 s")
		ingest("e2e-grace", 0, 2000)
		commit("e2e-grace") // the engine measures its flush rate
		// An estimate of 2.5 s or more asks for a grace of 15 s or more
		// (2 × estimate + 10 s), past the 5 s band over 10 s.
		grown := func() bool {
			est := getIndex("e2e-grace").Status.DrainEstimateSeconds
			return est != nil && *est >= 2.5
		}
		accepted := 2000
		for accepted < 1_200_000 && !grown() {
			_, err := engine("e2e-grace").AddDocuments(ctx, "e2e-grace", documents(accepted, accepted+10_000)...)
			Expect(err).NotTo(HaveOccurred(), "writes refused: was the engine drained for the grace?")
			accepted += 10_000
		}
		Eventually(grown).WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
		x := getIndex("e2e-grace")
		Expect(x.Status.PodUID).To(Equal(first.Status.PodUID), "a new estimate restarted the engine")
		Expect(x.Status.UpdateRevision).To(Equal(x.Status.CurrentRevision))
		Expect(x.Status.TerminationGracePeriodSeconds).To(BeEquivalentTo(10))

		By("a restart that happens anyway (restartedAt) carries the grown grace")
		updateIndex("e2e-grace", func(x *summav1.SummaIndex) {
			if x.Annotations == nil {
				x.Annotations = map[string]string{}
			}
			x.Annotations[annotationRestartedAt] = time.Now().UTC().Format(time.RFC3339)
		})
		Eventually(func(g Gomega) {
			x := getIndex("e2e-grace")
			g.Expect(x.Status.PodUID).NotTo(Equal(first.Status.PodUID))
			g.Expect(x.IsReady()).To(BeTrue())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		x = getIndex("e2e-grace")
		pod, err := enginePod("e2e-grace")
		Expect(err).NotTo(HaveOccurred())
		figure("grace sized at %ds under a %d-document uncommitted backlog, applied at the next restart", x.Status.TerminationGracePeriodSeconds, accepted)
		Expect(x.Status.TerminationGracePeriodSeconds).To(BeNumerically(">=", 15))
		Expect(*pod.Spec.TerminationGracePeriodSeconds).To(Equal(x.Status.TerminationGracePeriodSeconds))
		Expect(x.Status.ShutdownDeadlineSeconds).To(BeNumerically("<", x.Status.TerminationGracePeriodSeconds))
		st, err := engine("e2e-grace").GetIndex(ctx, "e2e-grace")
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Documents).To(BeEquivalentTo(accepted), "the drain before the restart committed the backlog")
	})
})

// truncateSegment damages one segment of the index directory (see segtest).
func truncateSegment(dir string) string {
	GinkgoHelper()
	id, err := segtest.TruncateFirstSegmentFile(dir)
	Expect(err).NotTo(HaveOccurred())
	return id
}
