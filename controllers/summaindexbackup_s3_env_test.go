package controllers

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
	"github.com/summadev/summa/internal/testing/s3test"
)

// The success path against a real S3 server (SeaweedFS's weed, built by
// `make s3` into bin/s3): skipped without it, unless SUMMA_REQUIRE_S3=1.

var _ = Describe("Backups to a real object store", func() {
	It("backs an index up, incrementally, prunes to keep, and restores a backup into a new SummaIndex of the same name and into one of another name", func() {
		store := s3test.Start(GinkgoT())
		Expect(k8sClient.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "bk-real-s3", Namespace: specNamespace},
			StringData: map[string]string{summav1.S3AccessKeyIDKey: s3test.AccessKey, summav1.S3SecretAccessKeyKey: s3test.SecretKey},
		})).To(Succeed())
		s3 := summav1.S3Spec{Endpoint: store.Endpoint, Bucket: store.Bucket, Prefix: "specs", CredentialsSecret: "bk-real-s3"}
		createReady("bk-real", func(x *summav1.SummaIndex) {
			x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete
			x.Spec.Backup = &summav1.BackupSpec{S3: s3, Keep: ptr.To[int32](1)}
		})
		ingest("bk-real", 0, 30)
		commit("bk-real")

		By("a first backup: every file uploaded")
		createBackup("bk-real-1", "bk-real")
		first := waitBackupPhase("bk-real-1", summav1.BackupPhaseCompleted)
		Expect(first.Status.BackupID).NotTo(BeEmpty())
		Expect(first.Status.Documents).To(Equal(int64(30)))
		Expect(first.Status.Bytes).To(BeNumerically(">", 0))
		Expect(first.Status.StartedAt).NotTo(BeNil())
		Eventually(func(g Gomega) {
			lb := getIndex("bk-real").Status.LastBackup
			g.Expect(lb).NotTo(BeNil())
			g.Expect(lb.ID).To(Equal(first.Status.BackupID))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())

		By("a second backup after a change: the first segment reused, then pruned to keep 1")
		ingest("bk-real", 30, 40)
		commit("bk-real")
		createBackup("bk-real-2", "bk-real")
		second := waitBackupPhase("bk-real-2", summav1.BackupPhaseCompleted)
		Expect(second.Status.Documents).To(Equal(int64(40)))
		Expect(second.Status.ReusedBytes).To(BeNumerically(">", 0))
		Eventually(func(g Gomega) {
			b := &summav1.SummaIndexBackup{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "bk-real-2"}, b)).To(Succeed())
			g.Expect(b.Annotations[AnnotationPruned]).To(Equal("Succeeded"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		var manifests []string
		for _, o := range store.Objects(GinkgoT(), "specs/bk-real/backups/") {
			manifests = append(manifests, o.Key)
		}
		Expect(manifests).To(HaveLen(1))
		Expect(manifests[0]).To(ContainSubstring(second.Status.BackupID))

		By("deleted with its volume, then restored into a new SummaIndex")
		deleteAndWaitGone("bk-real")
		Eventually(claimGone("bk-real-data")).WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
		Expect(k8sClient.Create(ctx, specIndex("bk-real", func(x *summav1.SummaIndex) {
			x.Spec.Backup = &summav1.BackupSpec{S3: s3, Keep: ptr.To[int32](1)}
			x.Spec.Restore = &summav1.RestoreSpec{BackupID: second.Status.BackupID}
		}))).To(Succeed())
		Eventually(func(g Gomega) {
			job, err := restoreJobOf("bk-real")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")).To(ContainSubstring("--backup " + second.Status.BackupID))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		x := waitReady("bk-real")
		Expect(x.Status.Restore).NotTo(BeNil())
		Expect(x.Status.Restore.Phase).To(Equal(summav1.RestorePhaseSucceeded))
		Expect(engineDocuments("bk-real")).To(Equal(uint64(40)))
		pvc := &corev1.PersistentVolumeClaim{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "bk-real-data"}, pvc)).To(Succeed())
		Expect(pvc.Annotations[AnnotationRestore]).To(Equal("done"))
		Expect(eventReasons("bk-real")).To(ContainElement("RestoreSucceeded"))

		By("the same backup restored into a SummaIndex of another name (spec.restore.index)")
		Expect(k8sClient.Create(ctx, specIndex("bk-real-copy", func(x *summav1.SummaIndex) {
			x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete
			x.Spec.Restore = &summav1.RestoreSpec{BackupID: summav1.RestoreLatest, Index: "bk-real", S3: &s3}
		}))).To(Succeed())
		Eventually(func(g Gomega) {
			job, err := restoreJobOf("bk-real-copy")
			g.Expect(err).NotTo(HaveOccurred())
			args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
			g.Expect(args).To(ContainSubstring("--index bk-real-copy"))
			g.Expect(args).To(ContainSubstring("--from-index bk-real"))
			g.Expect(args).NotTo(ContainSubstring("--backup "))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		cp := waitReady("bk-real-copy")
		Expect(cp.Status.Restore).NotTo(BeNil())
		Expect(cp.Status.Restore.Phase).To(Equal(summav1.RestorePhaseSucceeded))
		Expect(engineDocuments("bk-real-copy")).To(Equal(uint64(40)))
		deleteAndWaitGone("bk-real-copy")
		deleteAndWaitGone("bk-real")
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "bk-real"}, &summav1.SummaIndex{}))).To(BeTrue())
	})
})
