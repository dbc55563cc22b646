package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	summav1 "github.com/summadev/summa/api/v1"
)

var _ = Describe("kubectl summa backup and restore", func() {
	It("follows a backup to its end, and prints the SummaIndex that restores an index's backups", func() {
		kc := kubeconfigFile()
		createReady("plug-nobk", nil)
		out, err := kubectlSumma(kc, "backup", "plug-nobk", "--name", "plug-nobk-1")
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("summaindexbackup/plug-nobk-1 created"))
		Expect(err.Error()).To(ContainSubstring("BackupNotConfigured"))

		s3Secret("plug-bk-s3")
		createReady("plug-bk", withDeadStore("plug-bk-s3", "@daily", 5))
		_, err = kubectlSumma(kc, "restore", "plug-bk")
		Expect(err).To(MatchError(ContainSubstring("--from INDEX or --backup ID")))
		out, err = kubectlSumma(kc, "restore", "plug-bk-copy", "--from", "plug-bk", "--backup", "20261205T181502.123Z-3fa2c1d0")
		Expect(err).NotTo(HaveOccurred(), out)
		cp := &summav1.SummaIndex{}
		Expect(yaml.UnmarshalStrict([]byte(out), cp)).To(Succeed(), out)
		Expect(cp.Name).To(Equal("plug-bk-copy"))
		Expect(cp.Spec.Restore).To(Equal(&summav1.RestoreSpec{BackupID: "20261205T181502.123Z-3fa2c1d0", Index: "plug-bk"}))
		Expect(cp.RestoreSourceIndex()).To(Equal("plug-bk"))
		_, err = kubectlSumma(kc, "restore", "plug-nobk", "--from", "plug-nobk")
		Expect(err).To(MatchError(ContainSubstring("no spec.backup")))

		out, err = kubectlSumma(kc, "restore", "plug-bk", "--from", "plug-bk")
		Expect(err).NotTo(HaveOccurred(), out)
		x := &summav1.SummaIndex{}
		Expect(yaml.UnmarshalStrict([]byte(out), x)).To(Succeed(), out)
		Expect(x.Kind).To(Equal("SummaIndex"))
		Expect(x.Name).To(Equal("plug-bk"))
		Expect(x.Spec.Restore).To(Equal(&summav1.RestoreSpec{BackupID: summav1.RestoreLatest}))
		Expect(x.Spec.Backup.S3.Endpoint).To(Equal(deadStore))
		Expect(x.Spec.Schema).To(Equal(getIndex("plug-bk").Spec.Schema))

		out, err = kubectlSumma(kc, "restore", "plug-bk", "--from", "plug-bk", "--backup", "20261205T181502.123Z-3fa2c1d0", "--apply")
		Expect(err).To(MatchError(ContainSubstring("already exists")), out)
	})
})
