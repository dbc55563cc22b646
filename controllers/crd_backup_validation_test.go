package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// validS3 is an object store spec the CRD accepts.
func validS3() summav1.S3Spec {
	return summav1.S3Spec{Endpoint: "https://s3.example.com:9000", Bucket: "summa", CredentialsSecret: "s3"}
}

var _ = Describe("SummaIndex CRD validation of backups and restores", func() {
	BeforeEach(func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: validationNamespace}}
		if err := k8sClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	})

	It("accepts spec.backup with a schedule, defaults keep to 7, and a restore of latest or an ID", func() {
		x := createValid("bkv-ok", func(x *summav1.SummaIndex) {
			x.Spec.Backup = &summav1.BackupSpec{S3: validS3(), Schedule: "30 2 * * *"}
			x.Spec.Restore = &summav1.RestoreSpec{BackupID: "latest"}
		})
		Expect(x.Spec.Backup.Keep).NotTo(BeNil())
		Expect(*x.Spec.Backup.Keep).To(Equal(int32(7)))
		createValid("bkv-id", func(x *summav1.SummaIndex) {
			s3 := validS3()
			x.Spec.Restore = &summav1.RestoreSpec{BackupID: "20261205T181502.123Z-3fa2c1d0", S3: &s3}
		})
		createValid("bkv-daily", func(x *summav1.SummaIndex) {
			x.Spec.Backup = &summav1.BackupSpec{S3: validS3(), Schedule: "@daily"}
		})
	})

	It("refuses a schedule that is not cron-shaped, a bad endpoint, keep 0, a bad backupId, and a restore without an object store", func() {
		expectRefused(k8sClient.Create(ctx, mutated("bkv-sched", func(x *summav1.SummaIndex) {
			x.Spec.Backup = &summav1.BackupSpec{S3: validS3(), Schedule: "every day"}
		})), "spec.backup.schedule")
		expectRefused(k8sClient.Create(ctx, mutated("bkv-ep", func(x *summav1.SummaIndex) {
			s3 := validS3()
			s3.Endpoint = "ftp://s3.example.com/path"
			x.Spec.Backup = &summav1.BackupSpec{S3: s3}
		})), "spec.backup.s3.endpoint")
		expectRefused(k8sClient.Create(ctx, mutated("bkv-keep", func(x *summav1.SummaIndex) {
			zero := int32(0)
			x.Spec.Backup = &summav1.BackupSpec{S3: validS3(), Keep: &zero}
		})), "spec.backup.keep")
		expectRefused(k8sClient.Create(ctx, mutated("bkv-id-bad", func(x *summav1.SummaIndex) {
			x.Spec.Backup = &summav1.BackupSpec{S3: validS3()}
			x.Spec.Restore = &summav1.RestoreSpec{BackupID: "newest"}
		})), "spec.restore.backupId")
		expectRefused(k8sClient.Create(ctx, mutated("bkv-nostore", func(x *summav1.SummaIndex) {
			x.Spec.Restore = &summav1.RestoreSpec{BackupID: "latest"}
		})), "spec.restore needs spec.restore.s3 or spec.backup.s3")
	})

	It("keeps a SummaIndexBackup's spec.index immutable", func() {
		b := &summav1.SummaIndexBackup{ObjectMeta: metav1.ObjectMeta{Name: "bkv-b", Namespace: validationNamespace},
			Spec: summav1.SummaIndexBackupSpec{Index: "articles"}}
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		b.Spec.Index = "other"
		expectRefused(k8sClient.Update(ctx, b), "spec.index is immutable")
	})
})
