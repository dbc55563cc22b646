package controllers

import (
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
)

// The deletion specs run with the real garbage collector (gc_env_test.go):
// a reclaimPolicy Retain index's data volume survives every kind of
// deletion, and a new SummaIndex of the same name serves its documents.

// dataClaim reads the data volume of a SummaIndex.
func dataClaim(name string) *corev1.PersistentVolumeClaim {
	GinkgoHelper()
	pvc := &corev1.PersistentVolumeClaim{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name + "-data"}, pvc)).To(Succeed())
	return pvc
}

// waitGone waits until a SummaIndex no longer exists.
func waitGone(name string) {
	GinkgoHelper()
	Eventually(func() bool {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name}, &summav1.SummaIndex{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
}

// readyWithDocuments makes a Retain index with n committed documents.
func readyWithDocuments(name string, n int) *summav1.SummaIndex {
	GinkgoHelper()
	x := createReady(name, nil)
	ingest(name, 0, n)
	commit(name)
	pvc := dataClaim(name)
	Expect(pvc.OwnerReferences).To(BeEmpty())
	Expect(pvc.Annotations).To(HaveKeyWithValue(AnnotationIndexUID, string(x.UID)))
	return x
}

// expectAdoptedWithDocuments checks that the volume outlived the deleted
// index and that a new SummaIndex of the same name serves its n documents.
func expectAdoptedWithDocuments(name string, n int) {
	GinkgoHelper()
	pvc := dataClaim(name)
	Expect(pvc.DeletionTimestamp).To(BeNil(), "the retained volume is being deleted")
	Expect(pvc.OwnerReferences).To(BeEmpty())
	x := createReady(name, nil)
	Expect(engineDocuments(name)).To(BeEquivalentTo(n))
	Expect(dataClaim(name).Annotations).To(HaveKeyWithValue(AnnotationIndexUID, string(x.UID)))
	Expect(eventReasons(name)).To(ContainElement("VolumeAdopted"))
}

var _ = Describe("Deleting a SummaIndex with reclaimPolicy Retain", func() {
	It("keeps the volume under a foreground deletion, whose garbage collector deletes the dependents first", func() {
		x := readyWithDocuments("fg", 120)
		Expect(k8sClient.Delete(ctx, x, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		waitGone("fg")
		expectAdoptedWithDocuments("fg", 120)
	})

	It("completes an orphan deletion, and a new index of the same name adopts the pod, Service and policy and replaces the Secrets", func() {
		x := readyWithDocuments("orphaned", 80)
		Expect(k8sClient.Delete(ctx, x, client.PropagationPolicy(metav1.DeletePropagationOrphan))).To(Succeed())
		waitGone("orphaned")
		expectAdoptedWithDocuments("orphaned", 80)
		Expect(eventReasons("orphaned")).To(ContainElements("Adopted", "SecretReplaced"))
		x = getIndex("orphaned")
		svc := &corev1.Service{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "orphaned"}, svc)).To(Succeed())
		Expect(metav1.IsControlledBy(svc, x)).To(BeTrue())
		pod, err := enginePodOf("orphaned")
		Expect(err).NotTo(HaveOccurred())
		Expect(metav1.IsControlledBy(pod, x)).To(BeTrue())
		Expect(metav1.IsControlledBy(secretOf(x.Status.Access.CredentialsSecret), x)).To(BeTrue())
	})

	It("keeps the volume when a person removes the finalizer by hand", func() {
		x := readyWithDocuments("unstuck", 60)
		stopOperator()
		Expect(k8sClient.Delete(ctx, x)).To(Succeed())
		x = getIndex("unstuck")
		patch := client.MergeFrom(x.DeepCopy())
		x.Finalizers = nil
		Expect(k8sClient.Patch(ctx, x, patch)).To(Succeed())
		waitGone("unstuck")
		Eventually(func() bool {
			_, err := enginePodOf("unstuck")
			return apierrors.IsNotFound(err)
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue(), "the garbage collector deletes the orphaned pod")
		startOperator()
		expectAdoptedWithDocuments("unstuck", 60)
	})

	It("keeps the volume when the operator is down during a foreground deletion", func() {
		x := readyWithDocuments("unattended", 70)
		stopOperator()
		Expect(k8sClient.Delete(ctx, x, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		Eventually(func() bool {
			_, err := enginePodOf("unattended")
			return apierrors.IsNotFound(err)
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue(), "the garbage collector deletes the pod")
		Consistently(func() *metav1.Time { return dataClaim("unattended").DeletionTimestamp }).
			WithTimeout(3 * time.Second).WithPolling(poll).Should(BeNil())
		startOperator()
		waitGone("unattended")
		expectAdoptedWithDocuments("unattended", 70)
	})

	It("corrects, with an event, the controller reference an earlier version put on the volume, and follows policy changes", func() {
		x := readyWithDocuments("legacy", 30)
		stopOperator()
		pvc := dataClaim("legacy")
		patch := client.MergeFrom(pvc.DeepCopy())
		delete(pvc.Annotations, AnnotationIndexUID)
		Expect(ctrlReference(x, pvc)).To(Succeed())
		Expect(k8sClient.Patch(ctx, pvc, patch)).To(Succeed())
		Expect(metav1.IsControlledBy(dataClaim("legacy"), x)).To(BeTrue())
		startOperator()
		Eventually(func() []metav1.OwnerReference { return dataClaim("legacy").OwnerReferences }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeEmpty())
		Expect(dataClaim("legacy").Annotations).To(HaveKeyWithValue(AnnotationIndexUID, string(x.UID)))
		Expect(eventReasons("legacy")).To(ContainElement("VolumeOwnershipUpdated"))
		Expect(eventReasons("legacy")).NotTo(ContainElement("VolumeAdopted"))

		By("reclaimPolicy Delete: the index controls its volume")
		updateIndex("legacy", func(x *summav1.SummaIndex) { x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete })
		Eventually(func() bool { return metav1.IsControlledBy(dataClaim("legacy"), x) }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeTrue())
		By("reclaimPolicy Retain again: the reference goes")
		updateIndex("legacy", func(x *summav1.SummaIndex) { x.Spec.Storage.ReclaimPolicy = summav1.ReclaimRetain })
		Eventually(func() []metav1.OwnerReference { return dataClaim("legacy").OwnerReferences }).
			WithTimeout(readyTimeout).WithPolling(poll).Should(BeEmpty())
		Expect(k8sClient.Delete(ctx, x, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		waitGone("legacy")
		expectAdoptedWithDocuments("legacy", 30)
	})
})

var _ = Describe("Deleting a SummaIndex with reclaimPolicy Delete", func() {
	It("deletes the volume under a foreground deletion", func() {
		x := createReady("fgdoomed", func(x *summav1.SummaIndex) { x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete })
		Expect(metav1.IsControlledBy(dataClaim("fgdoomed"), x)).To(BeTrue())
		Expect(k8sClient.Delete(ctx, x, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		waitGone("fgdoomed")
		Eventually(func() bool {
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "fgdoomed-data"}, &corev1.PersistentVolumeClaim{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue())
	})
})

var _ = Describe("A deletion whose engine cannot be reached", func() {
	It("completes after spec.lifecycle.deletionTimeoutSeconds with reclaimPolicy Delete, with a Warning event", func() {
		x := createReady("wedged", func(x *summav1.SummaIndex) {
			x.Spec.Storage.ReclaimPolicy = summav1.ReclaimDelete
			x.Spec.Lifecycle.DeletionTimeoutSeconds = 5
			x.Spec.Lifecycle.TerminationGracePeriod = summav1.GracePeriodBounds{MinSeconds: 2, MaxSeconds: 5}
		})
		By("wedging the engine: stopped, it accepts connections and answers nothing")
		Expect(kubelet.KillContainer(specNamespace, x.EnginePodName(), EngineContainerName, syscall.SIGSTOP)).To(Succeed())
		Expect(k8sClient.Delete(ctx, x)).To(Succeed())
		waitGone("wedged")
		Eventually(func() bool {
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: "wedged-data"}, &corev1.PersistentVolumeClaim{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue())
		Expect(eventReasons("wedged")).To(ContainElement("DeletionTimedOut"))
	})
})

// ctrlReference makes x the controller of obj, as an earlier version of the
// operator did for every volume.
func ctrlReference(x *summav1.SummaIndex, obj client.Object) error {
	obj.SetOwnerReferences(append(obj.GetOwnerReferences(), *metav1.NewControllerRef(x, summav1.GroupVersion.WithKind("SummaIndex"))))
	return nil
}
