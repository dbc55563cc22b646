package controllers

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/internal/testing/envkubelet"
	"github.com/summadev/summa/internal/testing/segtest"
)

// waitDoctor waits until the doctor run requestID of a SummaIndex ended
// in phase and returns its status.
func waitDoctor(name, requestID, phase string) *summav1.DoctorStatus {
	GinkgoHelper()
	var d *summav1.DoctorStatus
	Eventually(func(g Gomega) {
		d = getIndex(name).Status.Doctor
		g.Expect(d).NotTo(BeNil())
		g.Expect(d.RequestID).To(Equal(requestID))
		g.Expect(d.Phase).To(Equal(phase), "doctor status: %+v", d)
	}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	return d
}

// jobsOf lists the Jobs of a SummaIndex.
func jobsOf(name string) []batchv1.Job {
	GinkgoHelper()
	jobs := &batchv1.JobList{}
	Expect(k8sClient.List(ctx, jobs, client.InNamespace(specNamespace), client.MatchingLabels{summav1.LabelIndex: name})).To(Succeed())
	return jobs.Items
}

// claimGone reports whether a volume of the spec namespace is gone.
func claimGone(name string) func() bool {
	return func() bool {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name}, &corev1.PersistentVolumeClaim{})
		return apierrors.IsNotFound(err)
	}
}

// suspendAndWait suspends a SummaIndex and waits until its pod is gone.
func suspendAndWait(name string) {
	GinkgoHelper()
	updateIndex(name, func(x *summav1.SummaIndex) { x.Spec.Suspend = true })
	Eventually(func(g Gomega) {
		_, err := enginePodOf(name)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		g.Expect(getIndex(name).Status.Phase).To(Equal(summav1.PhaseSuspended))
	}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
}

var _ = Describe("The doctor", func() {
	It("runs a doctor requestId once even after other runs (A, B, A) and keeps only keepBackups backup volumes", func() {
		createReady("recall", func(x *summav1.SummaIndex) { x.Spec.Doctor.KeepBackups = ptr.To[int32](1) })
		ingest("recall", 0, 40)
		commit("recall")
		updateIndex("recall", func(x *summav1.SummaIndex) { x.Spec.Doctor.RequestID = "a" })
		waitDoctor("recall", "a", summav1.DoctorPhaseSucceeded)
		waitReady("recall")
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "recall-backup-a"}, &corev1.PersistentVolumeClaim{})).To(Succeed())

		updateIndex("recall", func(x *summav1.SummaIndex) { x.Spec.Doctor.RequestID = "b" })
		d := waitDoctor("recall", "b", summav1.DoctorPhaseSucceeded)
		x := waitReady("recall")

		By("not running A again")
		jobs := len(jobsOf("recall"))
		uid := x.Status.PodUID
		updateIndex("recall", func(x *summav1.SummaIndex) { x.Spec.Doctor.RequestID = "a" })
		Consistently(func(g Gomega) {
			x := getIndex("recall")
			g.Expect(x.Status.Doctor.RequestID).To(Equal("b"))
			g.Expect(x.Status.Doctor.Phase).To(Equal(summav1.DoctorPhaseSucceeded))
			g.Expect(x.Status.PodUID).To(Equal(uid))
			g.Expect(jobsOf("recall")).To(HaveLen(jobs))
		}).WithTimeout(5 * time.Second).WithPolling(poll).Should(Succeed())
		Expect(engineDocuments("recall")).To(BeEquivalentTo(40))
		Expect(d.History).To(HaveLen(2))
		Expect(d.History[0].RequestID).To(Equal("a"))
		Expect(d.History[1].RequestID).To(Equal("b"))
		Expect(d.History[1].BackupClaimName).To(Equal("recall-backup-b"))

		By("deleting the older backup volume beyond keepBackups, never the current run's")
		Eventually(claimGone("recall-backup-a")).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue())
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "recall-backup-b"}, &corev1.PersistentVolumeClaim{})).To(Succeed())
		Expect(eventReasons("recall")).To(ContainElement("BackupVolumeDeleted"))
	})

	It("runs the doctor on a suspended index without starting the engine, and leaves it Suspended with the report recorded", func() {
		createReady("asleep", nil)
		ingest("asleep", 0, 60)
		commit("asleep")
		suspendAndWait("asleep")
		since := time.Now()

		updateIndex("asleep", func(x *summav1.SummaIndex) { x.Spec.Doctor.RequestID = "night" })
		d := waitDoctor("asleep", "night", summav1.DoctorPhaseSucceeded)
		for _, e := range kubelet.History() {
			if e.Pod == "asleep-engine" && e.Container == EngineContainerName && e.Type == envkubelet.ContainerStarted {
				Expect(e.Time.Before(since)).To(BeTrue(), "the engine was started during the doctor run at %s", e.Time)
			}
		}
		Consistently(func(g Gomega) {
			_, err := enginePodOf("asleep")
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no engine pod after the run")
			g.Expect(getIndex("asleep").Status.Phase).To(Equal(summav1.PhaseSuspended))
		}).WithTimeout(3 * time.Second).WithPolling(poll).Should(Succeed())
		Expect(d.CheckedSegments).To(BeNumerically(">=", 1), "the report is recorded")
		Expect(d.RemovedSegmentCount).To(BeZero())
		Expect(d.ReportPath).To(Equal("/v1/admin/doctor-reports/night"))
		Expect(d.History).To(ContainElement(HaveField("RequestID", "night")))

		updateIndex("asleep", func(x *summav1.SummaIndex) { x.Spec.Suspend = false })
		waitReady("asleep")
		Expect(engineDocuments("asleep")).To(BeEquivalentTo(60))
	})

	It("fails a doctor run whose Job image cannot be pulled, with the reason, and starts the engine again", func() {
		createReady("unpulled", func(x *summav1.SummaIndex) {
			x.Spec.Doctor.StartTimeoutSeconds = ptr.To[int32](2)
		})
		ingest("unpulled", 0, 30)
		commit("unpulled")
		bad := envkubelet.UnpullableRegistry + "summa-server:test"
		updateIndex("unpulled", func(x *summav1.SummaIndex) {
			x.Spec.Image = bad
			x.Spec.Doctor = summav1.DoctorSpec{RequestID: "pull", Backup: summav1.BackupNone, StartTimeoutSeconds: ptr.To[int32](2)}
		})
		d := waitDoctor("unpulled", "pull", summav1.DoctorPhaseFailed)
		Expect(d.Message).To(SatisfyAny(ContainSubstring("ErrImagePull"), ContainSubstring("ImagePullBackOff")))
		Expect(d.Message).To(ContainSubstring(bad))
		x := getIndex("unpulled")
		c := x.GetCondition(summav1.ConditionDegraded)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.Reason).To(Equal("DoctorFailed"))
		Expect(c.Message).To(ContainSubstring("could not start"))
		Expect(eventReasons("unpulled")).To(ContainElements("JobNotStarted", "DoctorFailed"))
		Eventually(func() []batchv1.Job { return jobsOf("unpulled") }).WithTimeout(time.Minute).WithPolling(poll).Should(BeEmpty())

		By("starting the engine pod again rather than leaving it stopped")
		Eventually(func() error { _, err := enginePodOf("unpulled"); return err }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		updateIndex("unpulled", func(x *summav1.SummaIndex) { x.Spec.Image = "summa-server:test" })
		waitReady("unpulled")
		Expect(engineDocuments("unpulled")).To(BeEquivalentTo(30))
	})

	It("records exact counts of a doctor run that removes more than a termination message holds, and the engine serves its whole report", func() {
		const segments = 120
		createReady("many", func(x *summav1.SummaIndex) { x.Spec.Engine.OptimizerThreads = ptr.To[int32](0) })
		c := engineOf("many")
		for i := 0; i < segments; i++ {
			_, err := c.AddDocuments(ctx, "many", map[string]any{"id": fmt.Sprintf("d%04d", i), "body": "one segment each"})
			Expect(err).NotTo(HaveOccurred())
			_, err = c.Commit(ctx, "many")
			Expect(err).NotTo(HaveOccurred())
		}
		suspendAndWait("many")
		x := getIndex("many")
		ids, err := segtest.TruncateEverySegment(filepath.Join(kubelet.ClaimDir(specNamespace, x.DataClaimName()), "many"))
		Expect(err).NotTo(HaveOccurred())
		Expect(ids).To(HaveLen(segments))

		updateIndex("many", func(x *summav1.SummaIndex) {
			x.Spec.Doctor = summav1.DoctorSpec{RequestID: "sweep", Backup: summav1.BackupNone}
			x.Spec.Suspend = false
		})
		d := waitDoctor("many", "sweep", summav1.DoctorPhaseSucceeded)
		waitReady("many")
		Expect(d.RemovedSegmentCount).To(BeEquivalentTo(segments))
		Expect(d.RemovedDocuments).To(BeEquivalentTo(segments))
		Expect(d.RemovedSegments).To(HaveLen(summav1.MaxRemovedSegments))
		Expect(ids).To(ContainElements(d.RemovedSegments))
		Expect(d.ReportPath).To(Equal("/v1/admin/doctor-reports/sweep"))

		rep, err := engineOf("many").DoctorReport(ctx, "sweep")
		Expect(err).NotTo(HaveOccurred())
		raw, err := json.Marshal(rep)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(raw)).To(BeNumerically(">", 4096), "the whole report is larger than a termination message")
		Expect(rep.Indexes).To(HaveLen(1))
		Expect(rep.Indexes[0].RemovedSegments).To(ConsistOf(ids))
		Expect(rep.Indexes[0].Reasons).To(HaveLen(segments))
		Expect(engineDocuments("many")).To(BeZero())
	})
})
