package controllers

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	summav1 "github.com/summadev/summa/api/v1"
	engineclient "github.com/summadev/summa/client"
)

// A full engine volume on a real engine: spec.engine.minFreeBytes larger
// than the volume makes the engine refuse writes (507 StorageFull), the
// operator shows Degraded=StorageFull with the engine's figures and a
// Warning event; a reserve of 0 restarts the engine, which takes writes
// again, and Degraded clears.
var _ = Describe("A full engine volume", func() {
	It("is Degraded=StorageFull with the figures while the engine refuses writes", func() {
		const name = "storage-full"
		huge := resource.NewQuantity(1<<50, resource.BinarySI)
		createReady(name, func(x *summav1.SummaIndex) { x.Spec.Engine.MinFreeBytes = huge })
		Eventually(func(g Gomega) {
			x := getIndex(name)
			c := x.GetCondition(summav1.ConditionDegraded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(ReasonStorageFull))
			g.Expect(c.Message).To(MatchRegexp(`full: \S+ free, \S+ used`))
			g.Expect(x.Status.Storage).NotTo(BeNil())
			g.Expect(x.Status.Storage.Full).To(BeTrue())
			g.Expect(x.Status.Storage.UsedBytes).To(BeNumerically(">", 0))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(warningReasons(name)).To(ContainElement(ReasonStorageFull))
		_, err := engineOf(name).AddDocuments(ctx, name, map[string]any{"id": "a", "body": "light"})
		var ae *engineclient.APIError
		Expect(err).To(BeAssignableToTypeOf(ae))
		ae = err.(*engineclient.APIError)
		Expect(ae.StatusCode).To(Equal(http.StatusInsufficientStorage))
		Expect(ae.Code).To(Equal(engineclient.CodeStorageFull))

		updateIndex(name, func(x *summav1.SummaIndex) { x.Spec.Engine.MinFreeBytes = resource.NewQuantity(0, resource.BinarySI) })
		Eventually(func(g Gomega) {
			x := getIndex(name)
			g.Expect(x.Status.Storage).To(BeNil())
			c := x.GetCondition(summav1.ConditionDegraded)
			g.Expect(c == nil || c.Status == metav1.ConditionFalse).To(BeTrue(), "Degraded: %+v", c)
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		waitReady(name)
		ingest(name, 0, 10)
		commit(name)
		Expect(engineDocuments(name)).To(Equal(uint64(10)))
		deleteAndWaitGone(name)
	})

	It("grows by itself with spec.storage.autoGrow, up to maxSize, when the class allows expansion", func() {
		const name = "storage-grow"
		class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "growable"},
			Provisioner: "example.com/growable", AllowVolumeExpansion: ptr.To(true)}
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, class))).To(Succeed())
		createReady(name, func(x *summav1.SummaIndex) {
			x.Spec.Storage.StorageClassName = ptr.To("growable")
			x.Spec.Engine.MinFreeBytes = resource.NewQuantity(1<<50, resource.BinarySI)
			x.Spec.Storage.AutoGrow = &summav1.AutoGrow{MaxSize: resource.MustParse("3Gi")}
		})
		maxSize := resource.MustParse("3Gi")
		Eventually(func(g Gomega) {
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: specNamespace, Name: name + "-data"}, pvc)).To(Succeed())
			req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
			g.Expect(req.Cmp(resource.MustParse("2Gi"))).To(BeNumerically(">=", 0), "request %s", req.String())
			g.Expect(req.Cmp(maxSize)).To(BeNumerically("<=", 0), "request %s past maxSize", req.String())
			g.Expect(eventReasons(name)).To(ContainElement(ReasonVolumeAutoGrow))
		}).WithTimeout(readyTimeout).WithPolling(poll).Should(Succeed())
		Expect(condition(name, summav1.ConditionDegraded).Reason).To(Equal(ReasonStorageFull))
		deleteAndWaitGone(name)
	})
})
