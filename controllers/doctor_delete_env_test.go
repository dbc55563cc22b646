package controllers

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/internal/testing/envkubelet"
)

// holdDoctors makes every doctor Job's process wait before it repairs
// anything (internal/testing/fakefollower) until the returned release is called
// (or the spec ends).
func holdDoctors() (release func()) {
	GinkgoHelper()
	hold := filepath.Join(binDir, "doctor-hold")
	Expect(os.WriteFile(hold, nil, 0o644)).To(Succeed())
	DeferCleanup(func() { _ = os.Remove(hold) })
	return func() { Expect(os.Remove(hold)).To(Succeed()) }
}

// runningJobPod returns the running pod of a Job.
func runningJobPod(g Gomega, job string) *corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(k8sClient.List(ctx, pods, client.InNamespace(specNamespace), client.MatchingLabels{jobNameLabel: job})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	g.Expect(pods.Items[0].Status.Phase).To(Equal(corev1.PodRunning))
	return &pods.Items[0]
}

// containerExits lists the exit codes of one container of a pod.
func containerExits(uid, container string) []int {
	var codes []int
	for _, e := range kubelet.History() {
		if string(e.PodUID) == uid && e.Container == container && e.Type == envkubelet.ContainerStopped {
			codes = append(codes, e.ExitCode)
		}
	}
	return codes
}

var _ = Describe("Deleting an index during a doctor run", func() {
	It("lets the doctor Job of a retained volume finish before the index goes, even on a foreground deletion", func() {
		createReady("mending", nil) // reclaimPolicy Retain
		ingest("mending", 0, 30)
		commit("mending")
		release := holdDoctors()
		updateIndex("mending", func(x *summav1.SummaIndex) {
			x.Spec.Doctor = summav1.DoctorSpec{RequestID: "mid", Backup: summav1.BackupNone}
		})
		x := getIndex("mending")
		jobName := x.DoctorJobName("mid")
		var jobPod *corev1.Pod
		Eventually(func(g Gomega) { jobPod = runningJobPod(g, jobName) }).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())

		By("deleting the index with foreground propagation while the doctor runs")
		Expect(k8sClient.Delete(ctx, x, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		Eventually(func() []string { return eventReasons("mending") }).WithTimeout(readyTimeout).WithPolling(poll).
			Should(ContainElement(ReasonDeletionWaitsForDoctor))
		job := &batchv1.Job{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: jobName}, job)).To(Succeed())
		Expect(job.DeletionTimestamp).To(BeNil(), "the garbage collector left the Job alone")
		Expect(containerExits(string(jobPod.UID), doctorContainer)).To(BeEmpty(), "the doctor still runs")
		Expect(getIndex("mending").Status.Doctor.Phase).To(Equal(summav1.DoctorPhaseRunning))

		By("finishing the repair, then the deletion")
		release()
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "mending"}, &summav1.SummaIndex{}))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
		Expect(containerExits(string(jobPod.UID), doctorContainer)).To(Equal([]int{0}), "the doctor ran to its end")
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: jobName}, job)).To(Succeed())
		done, failed := jobFinished(job)
		Expect(done && !failed).To(BeTrue(), "job conditions %+v", job.Status.Conditions)
		Expect(filepath.Join(kubelet.ClaimDir(specNamespace, x.DataClaimName()), ".summa-doctor", "mid.json")).To(BeAnExistingFile())
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: x.DataClaimName()}, &corev1.PersistentVolumeClaim{})).
			To(Succeed(), "the volume is kept")

		By("a new index of the same name running the same requestId: the earlier index's Job is replaced, not taken as this run's")
		Expect(k8sClient.Create(ctx, specIndex("mending", func(x *summav1.SummaIndex) {
			x.Spec.Doctor = summav1.DoctorSpec{RequestID: "mid", Backup: summav1.BackupNone}
		}))).To(Succeed())
		waitDoctor("mending", "mid", summav1.DoctorPhaseSucceeded)
		waitReady("mending")
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: jobName}, job)).To(Succeed())
		Expect(job.Annotations).To(HaveKeyWithValue(AnnotationIndexUID, string(getIndex("mending").UID)))
		Expect(eventReasons("mending")).To(ContainElement("StaleJobDeleted"))
		Expect(engineDocuments("mending")).To(BeEquivalentTo(30))
		deleteAndWaitGone("mending")
	})

	It("stops the doctor Job in order, at once, when the index's volume is deleted with it", func() {
		createReady("scrapped", func(x *summav1.SummaIndex) { x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete })
		holdDoctors() // never released: the doctor is stopped
		updateIndex("scrapped", func(x *summav1.SummaIndex) {
			x.Spec.Doctor = summav1.DoctorSpec{RequestID: "bye", Backup: summav1.BackupNone}
		})
		x := getIndex("scrapped")
		var jobPod *corev1.Pod
		Eventually(func(g Gomega) { jobPod = runningJobPod(g, x.DoctorJobName("bye")) }).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(k8sClient.Delete(ctx, x)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "scrapped"}, &summav1.SummaIndex{}))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
		Expect(containerExits(string(jobPod.UID), doctorContainer)).To(Equal([]int{143}), "the doctor got SIGTERM and ended")
		Expect(eventReasons("scrapped")).To(ContainElement("DoctorStopped"))
		Eventually(claimGone(x.DataClaimName())).WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
	})
})
