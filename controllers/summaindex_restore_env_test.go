package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// restoreJobOf reads the restore Job of an index.
func restoreJobOf(name string) (*batchv1.Job, error) {
	job := &batchv1.Job{}
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: getIndex(name).RestoreJobName()}, job)
	return job, err
}

var _ = Describe("spec.restore", func() {
	It("runs the restore Job before any engine pod, and a failed restore is Degraded RestoreFailed with nothing served", func() {
		s3Secret("rs-fail-s3")
		x := specIndex("rs-fail", func(x *summav1.SummaIndex) {
			x.Spec.Restore = &summav1.RestoreSpec{BackupID: summav1.RestoreLatest,
				S3: &summav1.S3Spec{Endpoint: deadStore, Bucket: "summa-specs", CredentialsSecret: "rs-fail-s3"}}
		})
		Expect(k8sClient.Create(ctx, x)).To(Succeed())

		By("the Job on the new volume, marked as waiting for its restore")
		var job *batchv1.Job
		Eventually(func() error {
			var err error
			job, err = restoreJobOf("rs-fail")
			return err
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		c := job.Spec.Template.Spec.Containers[0]
		Expect(c.Args[:5]).To(Equal([]string{"restore", "--data-dir", DataMountPath, "--index", "rs-fail"}))
		Expect(c.Args).To(ContainElement("--s3-endpoint=" + deadStore))
		Expect(c.Args).NotTo(ContainElement("--backup"), "latest: the newest backup")
		pvc := &corev1.PersistentVolumeClaim{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "rs-fail-data"}, pvc)).To(Succeed())
		Expect(pvc.Annotations[AnnotationRestore]).To(Equal("pending"))

		By("RestoreFailed, and no engine pod ever")
		Eventually(func(g Gomega) {
			x := getIndex("rs-fail")
			d := x.GetCondition(summav1.ConditionDegraded)
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Reason).To(Equal(ReasonRestoreFailed), "conditions: %+v", x.Status.Conditions)
			g.Expect(x.Status.Restore).NotTo(BeNil())
			g.Expect(x.Status.Restore.Phase).To(Equal(summav1.RestorePhaseFailed))
			g.Expect(x.IsReady()).To(BeFalse())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Consistently(func() bool {
			_, err := enginePodOf("rs-fail")
			return apierrors.IsNotFound(err)
		}).WithTimeout(3 * time.Second).WithPolling(poll).Should(BeTrue())
		Expect(eventReasons("rs-fail")).To(ContainElements("RestoreStarted", ReasonRestoreFailed))
		Expect(job.Annotations[AnnotationRestoreFrom]).To(Equal("rs-fail"))

		By("another spec.restore.index replaces the failed Job with one reading that index")
		updateIndex("rs-fail", func(x *summav1.SummaIndex) { x.Spec.Restore.Index = "rs-elsewhere" })
		Eventually(func(g Gomega) {
			next, err := restoreJobOf("rs-fail")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(next.UID).NotTo(Equal(job.UID))
			g.Expect(next.Annotations[AnnotationRestoreFrom]).To(Equal("rs-elsewhere"))
			g.Expect(next.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--from-index", "rs-elsewhere"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	})

	It("ignores spec.restore once the volume holds the index", func() {
		createReady("rs-ignored", nil)
		ingest("rs-ignored", 0, 10)
		commit("rs-ignored")
		uid := getIndex("rs-ignored").Status.PodUID
		updateIndex("rs-ignored", func(x *summav1.SummaIndex) {
			x.Spec.Restore = &summav1.RestoreSpec{BackupID: summav1.RestoreLatest,
				S3: &summav1.S3Spec{Endpoint: deadStore, Bucket: "summa-specs", CredentialsSecret: "nobody"}}
		})
		Consistently(func(g Gomega) {
			_, err := restoreJobOf("rs-ignored")
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
			x := getIndex("rs-ignored")
			g.Expect(x.IsReady()).To(BeTrue())
			g.Expect(x.Status.PodUID).To(Equal(uid))
		}).WithTimeout(5 * time.Second).WithPolling(poll).Should(Succeed())
		Expect(engineDocuments("rs-ignored")).To(Equal(uint64(10)))
	})
})

var _ = Describe("spec.restore with read followers", func() {
	It("starts no follower while the leader's volume waits for its restore, nor after the restore failed", func() {
		s3Secret("rs-reps-s3")
		x := specIndex("rs-reps", func(x *summav1.SummaIndex) {
			x.Spec.Replicas = ptr.To[int32](1)
			x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete
			x.Spec.Restore = &summav1.RestoreSpec{BackupID: summav1.RestoreLatest,
				S3: &summav1.S3Spec{Endpoint: deadStore, Bucket: "summa-specs", CredentialsSecret: "rs-reps-s3"}}
		})
		Expect(k8sClient.Create(ctx, x)).To(Succeed())
		Eventually(func(g Gomega) {
			x := getIndex("rs-reps")
			d := x.GetCondition(summav1.ConditionDegraded)
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Reason).To(Equal(ReasonRestoreFailed))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(podOf("rs-reps-r1")).To(BeNil(), "a follower serves an index whose restore failed")
			x := getIndex("rs-reps")
			if x.Status.Replicas != nil {
				g.Expect(x.Status.Replicas.Ready).To(BeZero())
			}
		}).WithTimeout(4 * time.Second).WithPolling(poll).Should(Succeed())

		By("once the volume no longer waits for its restore, the leader and the follower start")
		pvc := claimOf("rs-reps-data")
		Expect(pvc).NotTo(BeNil())
		patch := client.MergeFrom(pvc.DeepCopy())
		pvc.Annotations[AnnotationRestore] = "done"
		Expect(k8sClient.Patch(ctx, pvc, patch)).To(Succeed())
		waitReady("rs-reps")
		waitReplicas("rs-reps", 1, 1)
		deleteAndWaitGone("rs-reps")
	})
})
