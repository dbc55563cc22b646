package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// warningReasons lists the reasons of the Warning events about a
// SummaIndex.
func warningReasons(name string) []string {
	GinkgoHelper()
	list := &corev1.EventList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(specNamespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.InvolvedObject.Kind == "SummaIndex" && e.Type == corev1.EventTypeWarning {
			out = append(out, e.Reason)
		}
	}
	return out
}

// condition returns a condition of a SummaIndex (empty when absent).
func condition(name, t string) metav1.Condition {
	GinkgoHelper()
	if c := getIndex(name).GetCondition(t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// annotate sets (or with an empty value removes) an annotation of a
// SummaIndex.
func annotate(name, key, value string) {
	GinkgoHelper()
	updateIndex(name, func(x *summav1.SummaIndex) {
		if value == "" {
			delete(x.Annotations, key)
			return
		}
		if x.Annotations == nil {
			x.Annotations = map[string]string{}
		}
		x.Annotations[key] = value
	})
}

// podUID is the UID of a SummaIndex's engine pod ("" when there is none).
func podUID(name string) string {
	pod, err := enginePodOf(name)
	if err != nil {
		return ""
	}
	return string(pod.UID)
}

var _ = Describe("Failures and control", func() {
	It("honours summa.dev/restartedAt with one drained restart", func() {
		createReady("kicked", nil)
		ingest("kicked", 0, 60) // accepted, not committed: the drain commits them
		old := podUID("kicked")
		annotate("kicked", AnnotationRestartedAt, "2026-12-03T10:00:00Z")
		Eventually(func(g Gomega) {
			g.Expect(podUID("kicked")).NotTo(BeElementOf("", old))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		waitReady("kicked")
		Expect(engineDocuments("kicked")).To(BeEquivalentTo(60), "the restart was drained")
		Expect(engineExits(old)).To(Equal([]int{0}))
		restarted := podUID("kicked")
		// The same value again is no new restart: another pass (a label
		// change wakes the reconciler) keeps the pod.
		updateIndex("kicked", func(x *summav1.SummaIndex) {
			if x.ObjectMeta.Labels == nil {
				x.ObjectMeta.Labels = map[string]string{}
			}
			x.ObjectMeta.Labels["touched"] = "yes"
		})
		Consistently(func() string { return podUID("kicked") }).WithTimeout(3 * time.Second).WithPolling(poll).Should(Equal(restarted))
		Expect(getIndex("kicked").Status.CurrentRevision).To(Equal(getIndex("kicked").Status.UpdateRevision))
	})

	It("changes nothing of the pod while summa.dev/reconcile is paused, keeps status current, and still deletes", func() {
		createReady("frozen", func(x *summav1.SummaIndex) { x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete })
		old := podUID("frozen")
		annotate("frozen", AnnotationReconcile, ReconcilePaused)
		Eventually(func() string { return condition("frozen", summav1.ConditionProgressing).Reason }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(Equal(ReasonPaused))
		// A change that needs a restart waits.
		updateIndex("frozen", func(x *summav1.SummaIndex) { x.Spec.Engine.IndexingWorkers = ptr.To[int32](1) })
		// Status still follows the engine.
		ingest("frozen", 0, 30)
		commit("frozen")
		Eventually(func() int64 { return getIndex("frozen").Status.Documents }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeEquivalentTo(30))
		Consistently(func() string { return podUID("frozen") }).WithTimeout(3 * time.Second).WithPolling(poll).Should(Equal(old))
		Expect(eventReasons("frozen")).NotTo(ContainElement("Draining"))
		// Unpaused: the waiting change is applied with a drained restart.
		annotate("frozen", AnnotationReconcile, "")
		Eventually(func(g Gomega) {
			g.Expect(podUID("frozen")).NotTo(BeElementOf("", old))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		waitReady("frozen")
		pod, err := enginePodOf("frozen")
		Expect(err).NotTo(HaveOccurred())
		Expect(pod.Spec.Containers[0].Args).To(ContainElement("--indexing-workers=1"))
		// Paused again, deletion is still honoured.
		annotate("frozen", AnnotationReconcile, ReconcilePaused)
		deleteAndWaitGone("frozen")
	})

	It("shows an invalid podTemplate as Degraded with a Warning event, and clears both when fixed", func() {
		Expect(k8sClient.Create(ctx, specIndex("crooked", func(x *summav1.SummaIndex) {
			x.Spec.PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "Not_A_DNS_Label", Image: "app:1"},
			}}}
		}))).To(Succeed())
		Eventually(func(g Gomega) {
			c := condition("crooked", summav1.ConditionDegraded)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(ReasonInvalidPodTemplate))
			g.Expect(c.Message).To(ContainSubstring("Not_A_DNS_Label"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Eventually(func() []string { return warningReasons("crooked") }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(ContainElement(ReasonInvalidPodTemplate))
		updateIndex("crooked", func(x *summav1.SummaIndex) { x.Spec.PodTemplate = nil })
		waitReady("crooked")
		Eventually(func() metav1.ConditionStatus { return condition("crooked", summav1.ConditionDegraded).Status }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(Equal(metav1.ConditionFalse))
	})

	It("shows a volume expansion the storage class refuses as Degraded, while suspend still works", func() {
		class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fixed-size"},
			Provisioner: "example.com/fixed", AllowVolumeExpansion: ptr.To(false)}
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, class))).To(Succeed())
		createReady("cramped", func(x *summav1.SummaIndex) { x.Spec.Storage.StorageClassName = ptr.To("fixed-size") })
		updateIndex("cramped", func(x *summav1.SummaIndex) { x.Spec.Storage.Size = resource.MustParse("2Gi") })
		Eventually(func(g Gomega) {
			c := condition("cramped", summav1.ConditionDegraded)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(ReasonVolumeExpansionRefused))
			g.Expect(c.Message).To(ContainSubstring("allowVolumeExpansion"))
			g.Expect(getIndex("cramped").Status.Message).To(HavePrefix(ReasonVolumeExpansionRefused + ": "))
			v := getIndex("cramped").Status.Volume
			g.Expect(v).NotTo(BeNil())
			g.Expect(v.Resize).To(Equal(summav1.VolumeResizeRefused))
			g.Expect(v.Requested.String()).To(Equal("1Gi"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(warningReasons("cramped")).To(ContainElement(ReasonVolumeExpansionRefused))
		// The refused step does not block the others.
		updateIndex("cramped", func(x *summav1.SummaIndex) { x.Spec.Suspend = true })
		Eventually(func(g Gomega) {
			_, err := enginePodOf("cramped")
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
			g.Expect(getIndex("cramped").Status.Phase).To(Equal(summav1.PhaseSuspended))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(condition("cramped", summav1.ConditionDegraded).Reason).To(Equal(ReasonVolumeExpansionRefused))
		// The class allows it now: the volume grows and Degraded clears.
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "fixed-size"}, class)).To(Succeed())
		class.AllowVolumeExpansion = ptr.To(true)
		Expect(k8sClient.Update(ctx, class)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(condition("cramped", summav1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "cramped-data"}, pvc)).To(Succeed())
			g.Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("2Gi"))
			v := getIndex("cramped").Status.Volume
			g.Expect(v.Capacity.String()).To(Equal("2Gi"))
			g.Expect(v.Resize).To(BeEmpty())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())

		By("showing the resize conditions the storage reports on the claim")
		setClaimCondition := func(t corev1.PersistentVolumeClaimConditionType, msg string) {
			GinkgoHelper()
			Eventually(func() error {
				pvc := &corev1.PersistentVolumeClaim{}
				if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "cramped-data"}, pvc); err != nil {
					return err
				}
				pvc.Status.Conditions = nil
				if t != "" {
					pvc.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: t, Status: corev1.ConditionTrue, Message: msg}}
				}
				return k8sClient.Status().Update(ctx, pvc)
			}).WithTimeout(30 * time.Second).Should(Succeed())
		}
		setClaimCondition(corev1.PersistentVolumeClaimFileSystemResizePending, "Waiting for user to (re-)start a pod to finish file system resize")
		Eventually(func(g Gomega) {
			x := getIndex("cramped")
			g.Expect(x.Status.Volume.Resize).To(Equal(summav1.VolumeResizeFileSystemPending))
			g.Expect(x.Status.Volume.Message).To(ContainSubstring("re-)start a pod"))
			g.Expect(x.IsConditionTrue(summav1.ConditionDegraded)).To(BeFalse())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		setClaimCondition(corev1.PersistentVolumeClaimControllerResizeError, "the disk API refused: quota")
		Eventually(func(g Gomega) {
			c := condition("cramped", summav1.ConditionDegraded)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(ReasonVolumeExpansionFailed))
			g.Expect(c.Message).To(ContainSubstring("the disk API refused"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		setClaimCondition("", "")
		Eventually(func(g Gomega) {
			g.Expect(condition("cramped", summav1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
			g.Expect(getIndex("cramped").Status.Volume.Resize).To(BeEmpty())
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
	})

	It("fails a doctor run whose backup volume name belongs to another index, touching nothing of it", func() {
		createReady("dup", nil)
		// Index dup-backup's backup of requestId "x" would be named
		// dup-backup-x too: that volume is not this run's.
		other := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "dup-backup-x", Namespace: specNamespace,
				Labels: map[string]string{summav1.LabelIndex: "dup-backup"}},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		updateIndex("dup", func(x *summav1.SummaIndex) { x.Spec.Doctor.RequestID = "x" })
		Eventually(func(g Gomega) {
			d := getIndex("dup").Status.Doctor
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Phase).To(Equal(summav1.DoctorPhaseFailed))
			g.Expect(d.Message).To(ContainSubstring("not this index's backup"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(other), other)).To(Succeed())
		Expect(other.OwnerReferences).To(BeEmpty())
		waitReady("dup")
	})

	It("resumes an engine draining with no restart in progress (a drain call whose status write was lost)", func() {
		createReady("stray", nil)
		old := podUID("stray")
		// What an operator killed between its drain call and the status
		// write that records it leaves behind: a draining engine, and no
		// drain in status.
		_, err := engineOf("stray").Drain(ctx)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			ds, err := engineOf("stray").DrainStatus(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ds.Draining).To(BeFalse(), "still draining")
			g.Expect(eventReasons("stray")).To(ContainElement("Resumed"))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		waitReady("stray")
		ingest("stray", 0, 10)
		commit("stray")
		Expect(podUID("stray")).To(Equal(old), "no restart")
		Expect(getIndex("stray").Status.DrainStartTime).To(BeNil())
	})
})
