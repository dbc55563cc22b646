package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/internal/corpus"
	"github.com/summadev/summa/internal/testing/segtest"
)

// Generous bounds: a 2-core machine runs the API server, etcd and several
// engines at once. Nothing asserts a duration.
const (
	readyTimeout = 3 * time.Minute
	poll         = 200 * time.Millisecond
)

// specIndex is a SummaIndex of the spec namespace with a small real schema.
func specIndex(name string, mutate func(*summav1.SummaIndex)) *summav1.SummaIndex {
	x := &summav1.SummaIndex{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: specNamespace},
		Spec: summav1.SummaIndexSpec{
			Image: "summa-server:test",
			Schema: summav1.Schema{Fields: []summav1.SchemaField{
				{Name: "id", Type: summav1.FieldTypeKeyword, Primary: true},
				{Name: "body", Type: summav1.FieldTypeText},
			}},
			Storage: summav1.StorageSpec{Size: resource.MustParse("1Gi")},
		},
	}
	if mutate != nil {
		mutate(x)
	}
	return x
}

// createReady creates a SummaIndex and waits until it is Ready.
func createReady(name string, mutate func(*summav1.SummaIndex)) *summav1.SummaIndex {
	GinkgoHelper()
	Expect(k8sClient.Create(ctx, specIndex(name, mutate))).To(Succeed())
	return waitReady(name)
}

// waitReady waits until the SummaIndex is Running and Ready.
func waitReady(name string) *summav1.SummaIndex {
	GinkgoHelper()
	var x *summav1.SummaIndex
	Eventually(func(g Gomega) {
		x = &summav1.SummaIndex{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name}, x)).To(Succeed())
		g.Expect(x.Status.Phase).To(Equal(summav1.PhaseRunning))
		g.Expect(x.IsReady()).To(BeTrue(), "conditions: %+v", x.Status.Conditions)
	}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	return x
}

// ingest adds documents [from, to) of real text to the index's engine and
// returns how many were accepted.
func ingest(name string, from, to int) {
	GinkgoHelper()
	ps, err := corpus.Paragraphs()
	Expect(err).NotTo(HaveOccurred())
	var docs []any
	for i := from; i < to; i++ {
		docs = append(docs, map[string]any{"id": fmt.Sprintf("d%05d", i), "body": ps[i%len(ps)]})
	}
	n, err := engineOf(name).AddDocuments(ctx, name, docs...)
	Expect(err).NotTo(HaveOccurred())
	Expect(n).To(Equal(to - from))
}

// commit commits the index in its engine.
func commit(name string) {
	GinkgoHelper()
	_, err := engineOf(name).Commit(ctx, name)
	Expect(err).NotTo(HaveOccurred())
}

// engineDocuments is the engine's committed document count.
func engineDocuments(name string) uint64 {
	GinkgoHelper()
	st, err := engineOf(name).GetIndex(ctx, name)
	Expect(err).NotTo(HaveOccurred())
	return st.Documents
}

// updateIndex re-reads a SummaIndex and applies change to it.
func updateIndex(name string, change func(*summav1.SummaIndex)) {
	GinkgoHelper()
	Eventually(func() error {
		x := getIndex(name)
		change(x)
		return k8sClient.Update(ctx, x)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// deleteAndWaitGone deletes a SummaIndex and waits until the finalizer let
// it go.
func deleteAndWaitGone(name string) {
	GinkgoHelper()
	Expect(k8sClient.Delete(ctx, getIndex(name))).To(Succeed())
	Eventually(func() bool {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name}, &summav1.SummaIndex{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
}

// engineExits lists the exit codes of the engine containers of one pod.
func engineExits(uid string) []int {
	var codes []int
	for _, e := range kubelet.History() {
		if string(e.PodUID) == uid && e.Container == EngineContainerName && e.Type == "Stopped" {
			codes = append(codes, e.ExitCode)
		}
	}
	return codes
}

var _ = Describe("The SummaIndex reconciler", func() {
	It("creates volume, engine pod and Service, creates the index, and reports Ready", func() {
		x := createReady("basic", nil)

		pvc := &corev1.PersistentVolumeClaim{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "basic-data"}, pvc)).To(Succeed())
		Expect(pvc.OwnerReferences).To(BeEmpty(), "reclaimPolicy Retain: no owner reference, so no deletion can collect it")
		Expect(pvc.Annotations).To(HaveKeyWithValue(AnnotationIndexUID, string(x.UID)))
		Expect(pvc.Labels).To(HaveKeyWithValue(summav1.LabelManagedBy, summav1.ManagedByValue))
		Expect(pvc.Labels).To(HaveKeyWithValue(summav1.LabelIndex, "basic"))
		Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))

		svc := &corev1.Service{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "basic"}, svc)).To(Succeed())
		Expect(metav1.IsControlledBy(svc, x)).To(BeTrue())
		Expect(svc.Spec.Ports).To(HaveLen(1))
		Expect(svc.Spec.Ports[0].Name).To(Equal("http"))
		Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(8082))

		pod, err := enginePodOf("basic")
		Expect(err).NotTo(HaveOccurred())
		Expect(metav1.IsControlledBy(pod, x)).To(BeTrue())
		Expect(pod.Labels).To(HaveKeyWithValue(summav1.LabelIndex, "basic"))
		Expect(*pod.Spec.SecurityContext.RunAsNonRoot).To(BeTrue())
		Expect(*pod.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
		Expect(x.Status.PodUID).To(Equal(pod.UID))

		// Grace: the default minimum with no load, the engine's deadline a
		// margin shorter, on the pod and in status.
		Expect(x.Status.TerminationGracePeriodSeconds).To(BeEquivalentTo(30))
		Expect(*pod.Spec.TerminationGracePeriodSeconds).To(BeEquivalentTo(30))
		Expect(x.Status.ShutdownDeadlineSeconds).To(BeEquivalentTo(25))
		Expect(pod.Spec.Containers[0].Args).To(ContainElement("--shutdown-deadline=25s"))
		Expect(x.Status.DrainEstimateSeconds).NotTo(BeNil())

		st, err := engineOf("basic").GetIndex(ctx, "basic")
		Expect(err).NotTo(HaveOccurred())
		Expect(st.State).To(Equal("open"))
		Expect(eventReasons("basic")).To(ContainElements("VolumeCreated", "ServiceCreated", "PodCreated", "IndexCreated"))

		By("never writing when nothing changed")
		rv := getIndex("basic").ResourceVersion
		Consistently(func() string { return getIndex("basic").ResourceVersion }).
			WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal(rv))
	})

	It("keeps status current as documents are ingested and committed", func() {
		createReady("tracking", nil)
		ingest("tracking", 0, 300)
		commit("tracking")
		ingest("tracking", 300, 420)
		commit("tracking")
		Eventually(func(g Gomega) {
			x := getIndex("tracking")
			g.Expect(x.Status.Documents).To(BeEquivalentTo(420))
			g.Expect(x.Status.Segments).To(BeNumerically(">=", 1))
			g.Expect(x.Status.Generation).To(BeNumerically(">=", 2))
			g.Expect(x.Status.UncommittedDocuments).To(BeZero())
		}).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
	})

	It("drains before a restart and loses no committed or accepted document", func() {
		createReady("rolling", nil)
		ingest("rolling", 0, 200)
		commit("rolling")
		ingest("rolling", 200, 350) // accepted, not committed
		old := getIndex("rolling").Status.PodUID

		updateIndex("rolling", func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = ptr.To[int32](1) })
		Eventually(func(g Gomega) {
			x := getIndex("rolling")
			g.Expect(x.Status.PodUID).NotTo(Equal(old))
			g.Expect(x.IsReady()).To(BeTrue())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		waitReady("rolling")

		Expect(engineDocuments("rolling")).To(BeEquivalentTo(350), "the drain committed every accepted document")
		Expect(engineExits(string(old))).To(Equal([]int{0}), "the old engine stopped cleanly on SIGTERM")
		Expect(eventReasons("rolling")).To(ContainElements("Draining", "PodDeleted", "PodCreated"))
		Expect(testutil.ToFloat64(drainsTotal.WithLabelValues(purposeRestart, "drained"))).To(BeNumerically(">=", 1))
		Expect(testutil.CollectAndCount(drainSeconds)).To(BeNumerically(">=", 1))
		Expect(testutil.ToFloat64(restartsTotal.WithLabelValues(purposeRestart))).To(BeNumerically(">=", 1))
		pod, err := enginePodOf("rolling")
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.Spec.Containers[0].Args).To(ContainElement("--indexing-workers=1"))
	})

	It("leaves the pod running and Degraded when a drain times out, then retries", func() {
		createReady("stuck", func(x *summav1.SummaIndex) { x.Spec.Lifecycle.DrainTimeoutSeconds = 2 })
		ingest("stuck", 0, 50) // accepted, not committed: the drain must commit them
		x := getIndex("stuck")
		// A directory where the engine writes metadata.json.tmp: every
		// commit fails before its commit point, losslessly (the prepared
		// segments stay owned for the retry), so the drain cannot finish.
		blocker := filepath.Join(kubelet.ClaimDir(specNamespace, x.DataClaimName()), "stuck", "metadata.json.tmp", "in-the-way")
		Expect(os.MkdirAll(blocker, 0o755)).To(Succeed())
		DeferCleanup(func() { _ = os.RemoveAll(filepath.Dir(blocker)) })
		old := x.Status.PodUID

		updateIndex("stuck", func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = ptr.To[int32](1) })
		Eventually(func(g Gomega) {
			x := getIndex("stuck")
			c := x.GetCondition(summav1.ConditionDegraded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal("DrainTimeout"))
			g.Expect(x.Status.DrainFailures).To(BeNumerically(">=", 1))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		pod, err := enginePodOf("stuck")
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.UID).To(Equal(old), "a pod whose drain timed out is not restarted")
		Expect(pod.DeletionTimestamp).To(BeNil())

		By("retrying with backoff once commits succeed again")
		Expect(os.RemoveAll(filepath.Dir(blocker))).To(Succeed())
		Eventually(func(g Gomega) {
			x := getIndex("stuck")
			g.Expect(x.Status.PodUID).NotTo(Equal(old))
			g.Expect(x.IsReady()).To(BeTrue())
			g.Expect(x.IsConditionTrue(summav1.ConditionDegraded)).To(BeFalse())
			g.Expect(x.Status.DrainFailures).To(BeZero())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(engineDocuments("stuck")).To(BeEquivalentTo(50))
	})

	It("clears Degraded=DrainTimeout once a suspend completes, however the pod stopped", func() {
		createReady("sleepless", func(x *summav1.SummaIndex) { x.Spec.Lifecycle.DrainTimeoutSeconds = 2 })
		ingest("sleepless", 0, 20)
		x := getIndex("sleepless")
		blocker := filepath.Join(kubelet.ClaimDir(specNamespace, x.DataClaimName()), "sleepless", "metadata.json.tmp", "in-the-way")
		Expect(os.MkdirAll(blocker, 0o755)).To(Succeed())
		DeferCleanup(func() { _ = os.RemoveAll(filepath.Dir(blocker)) })

		updateIndex("sleepless", func(x *summav1.SummaIndex) { x.Spec.Suspend = true })
		Eventually(func(g Gomega) {
			x := getIndex("sleepless")
			g.Expect(x.Status.DrainFailures).To(BeNumerically(">=", 1))
			g.Expect(x.GetCondition(summav1.ConditionDegraded)).NotTo(BeNil())
			g.Expect(x.GetCondition(summav1.ConditionDegraded).Reason).To(Equal("DrainTimeout"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())

		By("the pod stopped by hand: the suspend is complete, the drain timeouts are over")
		pod, err := enginePodOf("sleepless")
		Expect(err).NotTo(HaveOccurred())
		Expect(k8sClient.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			x := getIndex("sleepless")
			g.Expect(x.Status.Phase).To(Equal(summav1.PhaseSuspended))
			g.Expect(x.Status.DrainFailures).To(BeZero())
			g.Expect(x.IsConditionTrue(summav1.ConditionDegraded)).To(BeFalse(), "Degraded: %+v", x.GetCondition(summav1.ConditionDegraded))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	})

	It("resumes the engine when the change that started a drain is taken back", func() {
		createReady("undo", nil)
		ingest("undo", 0, 30)
		x := getIndex("undo")
		// Commits fail before their commit point while this is in the
		// way, so the drain cannot finish.
		blocker := filepath.Join(kubelet.ClaimDir(specNamespace, x.DataClaimName()), "undo", "metadata.json.tmp", "in-the-way")
		Expect(os.MkdirAll(blocker, 0o755)).To(Succeed())
		DeferCleanup(func() { _ = os.RemoveAll(filepath.Dir(blocker)) })
		old := x.Status.PodUID

		updateIndex("undo", func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = ptr.To[int32](1) })
		Eventually(func() bool { return getIndex("undo").Status.DrainStartTime != nil }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
		updateIndex("undo", func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = nil })
		Eventually(func(g Gomega) {
			x := getIndex("undo")
			g.Expect(x.Status.DrainStartTime).To(BeNil())
			g.Expect(x.IsReady()).To(BeTrue())
			g.Expect(x.Status.PodUID).To(Equal(old), "no restart for a change taken back")
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(eventReasons("undo")).To(ContainElement("Resumed"))
		ds, err := engineOf("undo").DrainStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(ds.Draining).To(BeFalse(), "the engine admits writes again")
		// The drain's commit still holds its prepared generation for a
		// lossless retry (C11; ingestion gets Backpressure meanwhile): a
		// commit once the disk works publishes it, then writes go on.
		Expect(os.RemoveAll(filepath.Dir(blocker))).To(Succeed())
		commit("undo")
		Eventually(func() error {
			_, err := engineOf("undo").AddDocuments(ctx, "undo", map[string]any{"id": "late", "body": "admitted after the undo"})
			return err
		}).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
		commit("undo")
		Expect(engineDocuments("undo")).To(BeEquivalentTo(31))
	})

	It("suspends by draining and stopping the pod, and resumes on the same volume", func() {
		createReady("sleepy", nil)
		ingest("sleepy", 0, 80)
		updateIndex("sleepy", func(x *summav1.SummaIndex) { x.Spec.Suspend = true })
		Eventually(func(g Gomega) {
			_, err := enginePodOf("sleepy")
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
			g.Expect(getIndex("sleepy").Status.Phase).To(Equal(summav1.PhaseSuspended))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "sleepy-data"}, &corev1.PersistentVolumeClaim{})).To(Succeed())

		updateIndex("sleepy", func(x *summav1.SummaIndex) { x.Spec.Suspend = false })
		waitReady("sleepy")
		Expect(engineDocuments("sleepy")).To(BeEquivalentTo(80), "the suspend drain committed what was accepted")
	})

	It("runs the engine as a native sidecar of app containers", func() {
		createReady("sidecar", func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "busybox:stable", Command: []string{"sleep", "infinity"}}},
			}}
		})
		pod, err := enginePodOf("sidecar")
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.Spec.InitContainers[0].Name).To(Equal("volume-permissions"))
		Expect(pod.Spec.InitContainers[1].Name).To(Equal(EngineContainerName))
		Expect(*pod.Spec.InitContainers[1].RestartPolicy).To(Equal(corev1.ContainerRestartPolicyAlways))
		var order []string
		for _, e := range kubelet.History() {
			if e.PodUID == pod.UID && e.Type == "Started" {
				order = append(order, e.Container)
			}
		}
		Expect(order).To(Equal([]string{"volume-permissions", EngineContainerName, "app"}),
			"the volume is prepared, then the engine starts, then the app")
		Expect(engineOf("sidecar").Healthz(ctx)).To(Succeed())
		app := pod.Spec.Containers[0]
		Expect(app.Env).To(ContainElement(corev1.EnvVar{Name: EnvToken, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sidecar-credentials"}, Key: summav1.WriteTokenKey}}}))
		Expect(app.Env).To(ContainElement(corev1.EnvVar{Name: EnvURL, Value: "https://localhost:8082"}))
		Expect(app.Env).To(ContainElement(corev1.EnvVar{Name: EnvCAFile, Value: "/var/run/summa/tls/ca.crt"}))
	})

	It("requires the doctor for a quarantined segment, and a requestId runs it once with a backup", func() {
		createReady("repair", nil)
		for i := 0; i < 3; i++ {
			ingest("repair", i*100, (i+1)*100)
			commit("repair")
		}
		x := getIndex("repair")
		dir := filepath.Join(kubelet.ClaimDir(specNamespace, x.DataClaimName()), "repair")
		victim := truncateOneSegmentFile(dir)
		By("restarting the engine (kill -9) so that it opens the damaged segment " + victim)
		Expect(kubelet.KillContainer(specNamespace, x.EnginePodName(), EngineContainerName, syscall.SIGKILL)).To(Succeed())
		Eventually(func(g Gomega) {
			x := getIndex("repair")
			g.Expect(x.IsConditionTrue(summav1.ConditionDoctorRequired)).To(BeTrue())
			g.Expect(x.Status.QuarantinedSegments).To(HaveLen(1))
			g.Expect(x.Status.QuarantinedSegments[0].ID).To(Equal(victim))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		before := getIndex("repair").Status.Documents

		updateIndex("repair", func(x *summav1.SummaIndex) { x.Spec.Doctor.RequestID = "r1" })
		Eventually(func(g Gomega) {
			d := getIndex("repair").Status.Doctor
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Phase).To(Equal(summav1.DoctorPhaseSucceeded), "doctor status: %+v", d)
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		x = waitReady("repair")
		d := x.Status.Doctor
		Expect(d.RequestID).To(Equal("r1"))
		Expect(d.RemovedSegments).To(Equal([]string{victim}))
		Expect(d.RemovedDocuments).To(BeNumerically(">", 0))
		Expect(d.JobName).To(Equal(x.DoctorJobName("r1")))
		Expect(d.BackupClaimName).To(Equal("repair-backup-r1"))
		Expect(x.IsConditionTrue(summav1.ConditionDoctorRequired)).To(BeFalse())
		Expect(x.Status.QuarantinedSegments).To(BeEmpty())
		Expect(engineDocuments("repair")).To(BeEquivalentTo(before), "the surviving documents are served")

		backup := filepath.Join(kubelet.ClaimDir(specNamespace, "repair-backup-r1"), "repair", "metadata.json")
		Expect(backup).To(BeAnExistingFile(), "the volume was copied before the repair")
		jobs := &batchv1.JobList{}
		Expect(k8sClient.List(ctx, jobs, client.InNamespace(specNamespace), client.MatchingLabels{summav1.LabelIndex: "repair"})).To(Succeed())
		Expect(jobs.Items).To(HaveLen(2), "one backup Job and one doctor Job")
		jobsPolicy := &networkingv1.NetworkPolicy{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "repair.jobs"}, jobsPolicy)).To(Succeed())
		cutOff, err := metav1.LabelSelectorAsSelector(&jobsPolicy.Spec.PodSelector)
		Expect(err).NotTo(HaveOccurred())
		Expect(jobsPolicy.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
		Expect(jobsPolicy.Spec.Ingress).To(BeEmpty())
		Expect(jobsPolicy.Spec.Egress).To(BeEmpty())
		for _, j := range jobs.Items {
			Expect(cutOff.Matches(labels.Set(j.Spec.Template.Labels))).To(BeTrue(), "job %s has network", j.Name)
			Expect(*j.Spec.Template.Spec.AutomountServiceAccountToken).To(BeFalse())
			Expect(*j.Spec.Template.Spec.EnableServiceLinks).To(BeFalse())
		}

		By("not running the same requestId again")
		restartOperator()
		Consistently(func() int {
			Expect(k8sClient.List(ctx, jobs, client.InNamespace(specNamespace), client.MatchingLabels{summav1.LabelIndex: "repair"})).To(Succeed())
			return len(jobs.Items)
		}).WithTimeout(3 * time.Second).WithPolling(poll).Should(Equal(2))
		Expect(getIndex("repair").Status.Doctor.Phase).To(Equal(summav1.DoctorPhaseSucceeded))
		Expect(testutil.ToFloat64(doctorRunsTotal.WithLabelValues("succeeded"))).To(BeNumerically(">=", 1))
	})

	It("with reclaimPolicy Delete deletes the index in the engine, the pod and the volume", func() {
		createReady("doomed", func(x *summav1.SummaIndex) { x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete })
		ingest("doomed", 0, 50)
		commit("doomed")
		dataDir := kubelet.ClaimDir(specNamespace, "doomed-data")
		Expect(filepath.Join(dataDir, "doomed")).To(BeADirectory())
		var mu sync.Mutex
		var calls []string
		hookMu.Lock()
		engineCallHook = func(_ context.Context, call string) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, call)
		}
		hookMu.Unlock()
		DeferCleanup(func() {
			hookMu.Lock()
			engineCallHook = nil
			hookMu.Unlock()
		})
		deleteAndWaitGone("doomed")
		mu.Lock()
		drained, deleted := slices.Index(calls, "drain/"+purposeDelete), slices.Index(calls, "delete-index")
		mu.Unlock()
		Expect(deleted).To(BeNumerically(">", drained), "engine calls %v: the contract's order is drain, then DELETE", calls)
		Expect(drained).To(BeNumerically(">=", 0), "engine calls %v: no drain", calls)
		_, err := enginePodOf("doomed")
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
		Eventually(func() bool {
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "doomed-data"}, &corev1.PersistentVolumeClaim{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue())
		Expect(eventReasons("doomed")).To(ContainElements("Deleting", "IndexDeleting", "VolumeDeleted", "Deleted"))
	})

	It("with reclaimPolicy Retain keeps the volume, which a new SummaIndex of the same name adopts", func() {
		createReady("kept", nil)
		ingest("kept", 0, 120)
		commit("kept")
		ingest("kept", 120, 150) // the deletion's drain commits these
		deleteAndWaitGone("kept")
		pvc := &corev1.PersistentVolumeClaim{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "kept-data"}, pvc)).To(Succeed())
		Expect(pvc.OwnerReferences).To(BeEmpty())
		Expect(pvc.DeletionTimestamp).To(BeNil())

		x := createReady("kept", nil)
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "kept-data"}, pvc)).To(Succeed())
		Expect(pvc.OwnerReferences).To(BeEmpty())
		Expect(pvc.Annotations).To(HaveKeyWithValue(AnnotationIndexUID, string(x.UID)))
		Expect(engineDocuments("kept")).To(BeEquivalentTo(150))
		Expect(eventReasons("kept")).To(ContainElement("VolumeAdopted"))
	})

	It("resumes a restart, a doctor run and a deletion after being killed between any two steps", func() {
		createReady("phoenix", func(x *summav1.SummaIndex) { x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete })
		ingest("phoenix", 0, 100)
		commit("phoenix")
		ingest("phoenix", 100, 130)
		w := watchSteps("phoenix")
		updateIndex("phoenix", func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = ptr.To[int32](1) })
		Eventually(func(g Gomega) {
			pod, err := enginePodOf("phoenix")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pod.Spec.Containers[0].Args).To(ContainElement("--indexing-workers=1"))
			g.Expect(getIndex("phoenix").IsReady()).To(BeTrue())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(engineDocuments("phoenix")).To(BeEquivalentTo(130))

		updateIndex("phoenix", func(x *summav1.SummaIndex) {
			x.Spec.Doctor = summav1.DoctorSpec{RequestID: "again", Backup: summav1.BackupNone}
		})
		Eventually(func(g Gomega) {
			d := getIndex("phoenix").Status.Doctor
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Phase).To(Equal(summav1.DoctorPhaseSucceeded))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		jobs := &batchv1.JobList{}
		Expect(k8sClient.List(ctx, jobs, client.InNamespace(specNamespace), client.MatchingLabels{summav1.LabelIndex: "phoenix"})).To(Succeed())
		Expect(jobs.Items).To(HaveLen(1), "a re-entered doctor run finds its Job instead of creating another")
		waitReady("phoenix")
		Expect(engineDocuments("phoenix")).To(BeEquivalentTo(130))

		deleteAndWaitGone("phoenix")
		w.Stop()
		GinkgoWriter.Printf("operator restarted %d times, at steps:\n  %s\n", w.restarts, strings.Join(w.steps, "\n  "))
		Expect(w.restarts).To(BeNumerically(">=", 8))
		Eventually(func() bool {
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "phoenix-data"}, &corev1.PersistentVolumeClaim{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue())
	})
})

// truncateOneSegmentFile damages one segment of the index directory (see segtest).
func truncateOneSegmentFile(dir string) string {
	GinkgoHelper()
	id, err := segtest.TruncateFirstSegmentFile(dir)
	Expect(err).NotTo(HaveOccurred())
	return id
}
