package controllers

import (
	"slices"
	"strings"
	"sync/atomic"
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
)

// The backup specs run the real engine. Without a real object store
// (SeaweedFS, see internal/testing/s3test) they reach the engine's answers that
// need none: 409 BackupNotConfigured, and an object store that does not
// answer (a closed loopback port), where the engine's backup and the
// restore and prune Jobs (real summa-server runs) fail as they would.

// backupClockAt, when set (Unix nanoseconds), stops the operator's backup
// clock (spec.backup.schedule) at that time: a spec moves it by hand, and
// the real time crossing an hour while it runs starts no run of its own.
// Certificates keep the real time.
var backupClockAt atomic.Int64

// specBackupClock is the operator's backup clock in the specs.
func specBackupClock() time.Time {
	if at := backupClockAt.Load(); at != 0 {
		return time.Unix(0, at).UTC()
	}
	return time.Now()
}

// stopBackupClock stops the backup clock at t until the spec ends.
func stopBackupClock(t time.Time) {
	backupClockAt.Store(t.UnixNano())
	DeferCleanup(func() { backupClockAt.Store(0) })
}

// deadStore is an object store endpoint where nothing listens.
const deadStore = "http://127.0.0.1:9"

// s3Secret creates a Secret with object store credentials.
func s3Secret(name string) {
	GinkgoHelper()
	Expect(k8sClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: specNamespace},
		StringData: map[string]string{summav1.S3AccessKeyIDKey: "AKIDSPEC", summav1.S3SecretAccessKeyKey: "spec-secret-key"},
	})).To(Succeed())
}

// indexBackups lists the SummaIndexBackups of an index.
func indexBackups(index string) []summav1.SummaIndexBackup {
	GinkgoHelper()
	list := &summav1.SummaIndexBackupList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(specNamespace))).To(Succeed())
	var out []summav1.SummaIndexBackup
	for _, b := range list.Items {
		if b.Spec.Index == index {
			out = append(out, b)
		}
	}
	return out
}

// createBackup creates a SummaIndexBackup of index.
func createBackup(name, index string) {
	GinkgoHelper()
	Expect(k8sClient.Create(ctx, &summav1.SummaIndexBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: specNamespace},
		Spec:       summav1.SummaIndexBackupSpec{Index: index},
	})).To(Succeed())
}

// waitBackupPhase waits until a SummaIndexBackup is in phase.
func waitBackupPhase(name string, phase summav1.BackupPhase) *summav1.SummaIndexBackup {
	GinkgoHelper()
	b := &summav1.SummaIndexBackup{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name}, b)).To(Succeed())
		g.Expect(b.Status.Phase).To(Equal(phase), "status: %+v", b.Status)
	}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	return b
}

// withDeadStore sets spec.backup to the dead store with credentials.
func withDeadStore(secret, schedule string, keep int32) func(*summav1.SummaIndex) {
	return func(x *summav1.SummaIndex) {
		x.Spec.Backup = &summav1.BackupSpec{
			S3:       summav1.S3Spec{Endpoint: deadStore, Bucket: "summa-specs", CredentialsSecret: secret},
			Schedule: schedule, Keep: ptr.To(keep),
		}
	}
}

var _ = Describe("SummaIndexBackup", func() {
	It("fails with the engine's BackupNotConfigured when the index has no spec.backup, and when the index does not exist", func() {
		createReady("bk-none", nil)
		createBackup("bk-none-1", "bk-none")
		b := waitBackupPhase("bk-none-1", summav1.BackupPhaseFailed)
		Expect(b.Status.Message).To(ContainSubstring("BackupNotConfigured"))
		Expect(b.Status.CompletedAt).NotTo(BeNil())
		Expect(getIndex("bk-none").Status.LastBackup).To(BeNil())

		createBackup("bk-missing-1", "bk-missing")
		b = waitBackupPhase("bk-missing-1", summav1.BackupPhaseFailed)
		Expect(b.Status.Message).To(ContainSubstring("does not exist"))
	})

	It("waits, Pending, for the leader to restart with a spec.backup set after the index was made", func() {
		s3Secret("bk-late-s3")
		createReady("bk-late", nil)
		By("paused, the leader keeps running without the object store")
		updateIndex("bk-late", func(x *summav1.SummaIndex) {
			x.Annotations = map[string]string{AnnotationReconcile: ReconcilePaused}
			withDeadStore("bk-late-s3", "", 7)(x)
		})
		createBackup("bk-late-1", "bk-late")
		Consistently(func(g Gomega) {
			b := &summav1.SummaIndexBackup{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "bk-late-1"}, b)).To(Succeed())
			g.Expect(b.Status.Phase).NotTo(Equal(summav1.BackupPhaseFailed), "status: %+v", b.Status)
		}).WithTimeout(4 * time.Second).WithPolling(poll).Should(Succeed())
		By("unpaused, the leader restarts with it and the backup runs there")
		updateIndex("bk-late", func(x *summav1.SummaIndex) { delete(x.Annotations, AnnotationReconcile) })
		b := waitBackupPhase("bk-late-1", summav1.BackupPhaseFailed)
		Expect(b.Status.BackupID).NotTo(BeEmpty(), "the engine accepted the backup (202) before its upload failed")
		Expect(b.Status.Message).To(ContainSubstring("the engine's backup failed"))
		deleteAndWaitGone("bk-late")
	})

	It("gives the leader engine the object store: a backup runs on the engine and fails there when the store does not answer", func() {
		s3Secret("bk-dead-s3")
		createReady("bk-dead", withDeadStore("bk-dead-s3", "", 7))
		pod, err := enginePodOf("bk-dead")
		Expect(err).NotTo(HaveOccurred())
		args := strings.Join(pod.Spec.Containers[0].Args, " ")
		Expect(args).To(ContainSubstring("--s3-endpoint=" + deadStore))
		Expect(args).To(ContainSubstring("--s3-credentials-file=" + S3CredentialsMountPath + "/credentials"))
		derived := secretOf(getIndex("bk-dead").S3CredentialsSecretName())
		Expect(string(derived.Data["credentials"])).To(Equal("AWS_ACCESS_KEY_ID=AKIDSPEC\nAWS_SECRET_ACCESS_KEY=spec-secret-key\n"))

		createBackup("bk-dead-1", "bk-dead")
		b := waitBackupPhase("bk-dead-1", summav1.BackupPhaseFailed)
		Expect(b.Status.BackupID).NotTo(BeEmpty(), "the engine accepted the backup (202) before its upload failed")
		Expect(b.Status.Message).To(ContainSubstring("the engine's backup failed"))
	})

	It("creates scheduled backups on the schedule's clock, one per due run, and keeps spec.backup.keep of them", func() {
		s3Secret("bk-sched-s3")
		// The clock stands still while the index is created, then at its
		// creation: each hour added below makes exactly one run due.
		stopBackupClock(time.Now())
		createReady("bk-sched", withDeadStore("bk-sched-s3", "0 * * * *", 2))
		x := getIndex("bk-sched")
		stopBackupClock(x.CreationTimestamp.Time)
		Consistently(func() []summav1.SummaIndexBackup { return indexBackups("bk-sched") }).
			WithTimeout(3 * time.Second).WithPolling(poll).Should(BeEmpty())
		for run := 1; run <= 4; run++ {
			backupClockAt.Add(int64(time.Hour))
			Eventually(func(g Gomega) {
				bs := indexBackups("bk-sched")
				failedRuns := 0
				for _, b := range bs {
					g.Expect(metav1.IsControlledBy(&b, x)).To(BeTrue())
					g.Expect(b.Annotations).To(HaveKey(summav1.AnnotationScheduledAt))
					if b.Status.Phase == summav1.BackupPhaseFailed {
						failedRuns++
					}
				}
				g.Expect(failedRuns).To(Equal(min(run, 2)), "runs: %d, backups: %v", run, backupNames(bs))
				g.Expect(bs).To(HaveLen(min(run, 2)))
			}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		}
	})

	It("prunes the bucket after a completed backup with a Job, records status.lastBackup, and says when the schedule is invalid", func() {
		s3Secret("bk-keep-s3")
		createReady("bk-keep", withDeadStore("bk-keep-s3", "", 3))
		// A backup made complete by hand: the store of these specs cannot
		// complete one (the real-store spec does).
		createBackup("bk-keep-done", "bk-keep")
		done := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
		Eventually(func() error {
			b := &summav1.SummaIndexBackup{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "bk-keep-done"}, b); err != nil {
				return err
			}
			b.Status = summav1.SummaIndexBackupStatus{Phase: summav1.BackupPhaseCompleted, BackupID: "20261205T181502.123Z-3fa2c1d0",
				Generation: 4, CompletedAt: &done}
			return k8sClient.Status().Update(ctx, b)
		}).WithTimeout(30 * time.Second).Should(Succeed())

		By("status.lastBackup")
		Eventually(func(g Gomega) {
			lb := getIndex("bk-keep").Status.LastBackup
			g.Expect(lb).NotTo(BeNil())
			g.Expect(lb.ID).To(Equal("20261205T181502.123Z-3fa2c1d0"))
			g.Expect(lb.Generation).To(Equal(int64(4)))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())

		By("one prune Job, its result recorded on the backup, the Job deleted")
		Eventually(func(g Gomega) {
			b := &summav1.SummaIndexBackup{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "bk-keep-done"}, b)).To(Succeed())
			g.Expect(b.Annotations[AnnotationPruned]).To(Equal("Failed"), "the prune cannot reach the dead store")
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(eventReasons("bk-keep")).To(ContainElements("BackupPruneStarted", "BackupPruneFailed"))
		Eventually(func() bool {
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "bk-keep-s3-prune"}, &batchv1.Job{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())

		By("an invalid schedule is Degraded with a clear message")
		updateIndex("bk-keep", func(x *summav1.SummaIndex) { x.Spec.Backup.Schedule = "61 * * * *" })
		Eventually(func(g Gomega) {
			c := getIndex("bk-keep").GetCondition(summav1.ConditionDegraded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(ReasonInvalidBackupSchedule))
			g.Expect(c.Message).To(ContainSubstring("not a valid cron expression"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	})
})

// backupNames lists names and phases for messages.
func backupNames(bs []summav1.SummaIndexBackup) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Name+"="+string(b.Status.Phase))
	}
	slices.Sort(out)
	return out
}
